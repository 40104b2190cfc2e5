// One memory-mapped safetensors file, validated before any tensor is handed out.
// Format (huggingface/safetensors): u64 little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the
// data area; offsets are relative to the data area.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/weights.hpp"

namespace llmport {

namespace {

using nlohmann::json;

// safetensors itself refuses headers above 100 MB; a larger value means a corrupt file.
constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024;

std::optional<DType> parse_st_dtype(const std::string& s) {
  if (s == "F32") return DType::F32;
  if (s == "BF16") return DType::BF16;
  if (s == "F16") return DType::F16;
  return std::nullopt;
}

uint64_t as_u64(const json& v, bool& ok) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  ok = false;
  return 0;
}

struct Range {
  uint64_t begin, end;
  const std::string* name;
};

/// The problem when bytes of the data area belong to no tensor (nullopt: none). `ranges` are
/// the non-empty ranges, sorted by begin and not overlapping.
std::optional<std::string> unclaimed_bytes_of(const std::string& f, const std::vector<Range>& ranges,
                                              uint64_t data_size) {
  uint64_t at = 0;
  const std::string* before = nullptr;
  for (const Range& r : ranges) {
    if (r.begin != at)
      return f + ": bytes [" + std::to_string(at) + ", " + std::to_string(r.begin) +
                         ") of the data area belong to no tensor (" +
                         (before ? "between " + *before + " and " : std::string("before ")) + *r.name +
                         "; a header entry is missing or the file is damaged)";
    at = r.end;
    before = r.name;
  }
  if (at != data_size)
    return f + ": the data area is " + std::to_string(data_size) + " bytes but its tensors end at byte " +
           std::to_string(at) + " (" + std::to_string(data_size - at) +
           " bytes belong to no tensor; a header entry is missing or data was appended)";
  return std::nullopt;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path& file) : path_(file) {
  const std::string f = file.string();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (a
  // golden's side_file naming one hung verify); fstat then refuses it.
  int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw WeightsError(f + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw WeightsError(f + ": not a regular file (a FIFO, socket or device)");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    throw WeightsError(f + ": file is " + std::to_string(size_) + " bytes, too small for a safetensors header");
  }
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (m == MAP_FAILED) throw WeightsError(f + ": mmap failed: " + std::strerror(errno));
  map_ = m;
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    if (n > kMaxHeader || n > size_ - 8)
      throw WeightsError(f + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(size_) + " bytes)");
    json h;
    try {
      // A tensor name twice: the reader would keep one entry and the other's bytes would
      // load under no name (huggingface/safetensors refuses the gap as InvalidOffset).
      h = parse_json_text(std::string_view(reinterpret_cast<const char*>(bytes + 8), n), f, JsonKeys::distinct);
    } catch (const ConfigError& e) {
      // "<f>: malformed JSON: ..." / "<f>: JSON nested deeper ..." -> "<f>: malformed JSON header: ..."
      std::string what = e.what();
      what = what.substr(std::min(what.size(), f.size() + 2));
      if (what.rfind("malformed JSON: ", 0) == 0) what = what.substr(16);
      throw WeightsError(f + ": malformed JSON header: " + what);
    }
    if (!h.is_object()) throw WeightsError(f + ": malformed header: not a JSON object");
    const std::size_t data_start = 8 + static_cast<std::size_t>(n);
    const uint64_t data_size = size_ - data_start;

    std::vector<Range> ranges;
    for (auto it = h.begin(); it != h.end(); ++it) {
      const std::string& name = it.key();
      const json& e = it.value();
      if (name == "__metadata__") {
        if (e.is_null()) continue;  // huggingface/safetensors reads it as Option<map>: null is none
        if (!e.is_object()) throw WeightsError(f + ": __metadata__ is not an object");
        // The format's metadata is a map of strings only; huggingface/safetensors refuses
        // anything else (InvalidHeaderDeserialization), so a reader that dumped other values
        // loaded a file the reference cannot.
        for (auto m2 = e.begin(); m2 != e.end(); ++m2) {
          if (!m2.value().is_string())
            throw WeightsError(f + ": __metadata__." + m2.key() + " is a " + m2.value().type_name() +
                               ", not a string (safetensors metadata holds strings only)");
          metadata_[m2.key()] = m2.value().get<std::string>();
        }
        continue;
      }
      const std::string where = f + ": " + name + ": ";
      if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
        throw WeightsError(where + "header entry needs dtype, shape and data_offsets");
      if (!e["dtype"].is_string()) throw WeightsError(where + "dtype is not a string");
      const std::string dts = e["dtype"].get<std::string>();
      auto dt = parse_st_dtype(dts);
      if (!dt) throw WeightsError(where + "unsupported dtype " + dts + " (llmport reads F32, BF16, F16)");
      const json& sh = e["shape"];
      if (!sh.is_array()) throw WeightsError(where + "shape is not a list");
      TensorView v;
      v.name = name;
      v.dtype = *dt;
      v.file = file;
      v.map_base = map_;
      v.map_len = size_;
      // numel * dtype size, with overflow detection
      uint64_t numel = 1;
      bool ok = true;
      for (const auto& d : sh) {
        uint64_t x = as_u64(d, ok);
        if (!ok) throw WeightsError(where + "shape " + sh.dump() + " has a non-integer or negative dimension");
        if (x != 0 && numel > std::numeric_limits<uint64_t>::max() / 8 / x)
          throw WeightsError(where + "shape " + sh.dump() + " is too large");
        numel *= x;
        v.shape.push_back(static_cast<int64_t>(x));
      }
      const json& off = e["data_offsets"];
      if (!off.is_array() || off.size() != 2) throw WeightsError(where + "data_offsets is not [begin, end]");
      uint64_t b = as_u64(off[0], ok), en = as_u64(off[1], ok);
      if (!ok || b > en) throw WeightsError(where + "data_offsets " + off.dump() + " is not a valid [begin, end]");
      const uint64_t need = numel * dtype_size(*dt);
      if (en - b != need)
        throw WeightsError(where + "shape " + sh.dump() + " x " + dts + " is " + std::to_string(need) +
                           " bytes but data_offsets " + off.dump() + " span " + std::to_string(en - b));
      if (en > data_size)
        throw WeightsError(where + "data_offsets " + off.dump() + " run past the end of the data area (" +
                           std::to_string(data_size) + " bytes; file truncated?)");
      v.data = bytes + data_start + b;
      v.nbytes = static_cast<std::size_t>(need);
      auto [pos, inserted] = tensors_.emplace(name, std::move(v));
      ranges.push_back({b, en, &pos->first});
    }
    // Empty tensors occupy no bytes; every other range must start at or after the furthest
    // end seen so far (sorted by begin), else it overlaps that tensor.
    const auto first_empty = std::partition(ranges.begin(), ranges.end(), [](const Range& r) { return r.begin != r.end; });
    const std::vector<Range> empty(first_empty, ranges.end());
    ranges.erase(first_empty, ranges.end());
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    // An empty tensor still sits between tensors: huggingface/safetensors walks the tensors
    // in offset order and refuses one whose offset lies inside another's bytes (InvalidOffset).
    for (const Range& e : empty)
      for (const Range& r : ranges)
        if (r.begin < e.begin && e.begin < r.end)
          throw WeightsError(f + ": " + *e.name + ": the empty tensor's data_offsets [" + std::to_string(e.begin) +
                             ", " + std::to_string(e.end) + "] lie inside tensor " + *r.name + " [" +
                             std::to_string(r.begin) + ", " + std::to_string(r.end) + "]");
    const Range* furthest = nullptr;
    for (const Range& r : ranges) {
      if (furthest && r.begin < furthest->end)
        throw WeightsError(f + ": " + *r.name + ": data_offsets [" + std::to_string(r.begin) + ", " +
                           std::to_string(r.end) + "] overlap tensor " + *furthest->name + " [" +
                           std::to_string(furthest->begin) + ", " + std::to_string(furthest->end) + "]");
      if (!furthest || r.end > furthest->end) furthest = &r;
    }
    unclaimed_ = unclaimed_bytes_of(f, ranges, data_size);
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace llmport
