#include "llmport/kernel_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport {

namespace {
constexpr uint64_t P1 = 11400714785074694791ull, P2 = 14029467366897019727ull,
                   P3 = 1609587929392839161ull, P4 = 9650029242287828579ull,
                   P5 = 2870177450012600261ull;
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round64(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
inline uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round64(0, v)) * P1 + P4; }
inline uint64_t rd64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
// Format 2: magic, header length, header, packed bytes, then the packed bytes' 64-bit hash
// (format 1 files had no hash: they are repacked).
constexpr char kMagic[8] = {'L', 'L', 'M', 'P', 'K', 'C', '2', '\0'};
}  // namespace

namespace {
// XXH64-style hash of n bytes; `progress(done)` is called after each 4 MiB of the bulk loop
// (get_or_pack drops hashed pages of a file mapping from the process as it goes).
template <class F>
uint64_t hash_bytes(const void* data, std::size_t n, F&& progress) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* begin = p;
  const unsigned char* end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    constexpr std::size_t kBlock = std::size_t{4} << 20;
    while (p + 32 <= end) {
      const unsigned char* stop = end - static_cast<std::size_t>(end - p) % 32;
      if (static_cast<std::size_t>(stop - p) > kBlock) stop = p + kBlock;
      for (; p < stop; p += 32) {
        v1 = round64(v1, rd64(p));
        v2 = round64(v2, rd64(p + 8));
        v3 = round64(v3, rd64(p + 16));
        v4 = round64(v4, rd64(p + 24));
      }
      progress(static_cast<std::size_t>(p - begin));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = P5;
  }
  h += n;
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round64(0, rd64(p)), 27) * P1 + P4;
  for (; p < end; ++p) h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

// Hash of a weight tensor; its file-mapped pages are dropped from the process as they are
// hashed, so hashing a 2 GB model does not make it resident next to the packed copy.
std::string tensor_hash(const TensorView& w) {
  std::size_t released = 0;
  const uint64_t h = hash_bytes(w.data, w.nbytes, [&](std::size_t done) {
    release_source_pages(w, released, done - released);
    released = done;
  });
  release_source_pages(w, released, w.nbytes - released);
  return fmt::format("{:016x}", h);
}
}  // namespace

std::string content_hash(const void* data, std::size_t n) {
  return fmt::format("{:016x}", hash_bytes(data, n, [](std::size_t) {}));
}

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

namespace {
nlohmann::json header_of(const TensorView& w, DType dtype, const TileConfig& cfg,
                         const std::string& backend, const std::string& chash) {
  nlohmann::json h;
  h["content_hash"] = chash;
  h["backend"] = backend;
  h["kernel"] = "linear_packed_panels16";
  h["dtype"] = std::string(dtype_name(dtype));
  h["shape"] = w.shape;
  h["config"] = cfg;
  h["llmport_version"] = LLMPORT_VERSION;
  return h;
}
}  // namespace

std::string KernelCache::key(const TensorView& w, DType dtype, const TileConfig& cfg,
                             const std::string& backend) {
  const std::string chash = tensor_hash(w);
  const std::string hk = header_of(w, dtype, cfg, backend, chash).dump();
  return chash + "-" + content_hash(hk.data(), hk.size()) + ".bin";
}

namespace {
namespace fs = std::filesystem;
using ReadInto = std::function<bool(std::span<std::byte>)>;
using Reader = std::function<std::unique_ptr<LinearWeight>(const ReadInto&)>;

// A read of one entry: the weight (a hit), or why the file there was damaged ("" when
// there was no file, or one of an older format: stale, repacked without a warning).
struct Read {
  std::unique_ptr<LinearWeight> lw;
  std::string damaged;
};

// The weight read back through `read` when `file` holds header `hk`, `nbytes` packed bytes
// and the hash they end with.
Read read_entry(const fs::path& file, const std::string& hk, std::size_t nbytes, const Reader& read) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::ifstream in(file, std::ios::binary);
  if (!in) return {nullptr, std::string("cannot be opened: ") + std::strerror(errno)};
  const std::uintmax_t size = fs::file_size(file, ec);
  const std::uintmax_t want = 16 + hk.size() + nbytes + 8;
  char magic[8];
  uint64_t hlen = 0;
  in.read(magic, 8);
  if (in && std::memcmp(magic, kMagic, 6) == 0 && magic[6] < kMagic[6]) return {};  // format 1
  in.read(reinterpret_cast<char*>(&hlen), 8);
  if (!in || size < want) return {nullptr, fmt::format("truncated: {} bytes, expected {}", size, want)};
  if (std::memcmp(magic, kMagic, 8) != 0) return {nullptr, "not a kernel cache file: wrong magic bytes"};
  if (size > want) return {nullptr, fmt::format("extended: {} bytes, expected {}", size, want)};
  std::string stored(hk.size(), '\0');
  in.read(stored.data(), static_cast<std::streamsize>(stored.size()));
  if (hlen != hk.size() || !in || stored != hk) return {nullptr, "its header is not the one its name was made from"};
  // Read straight into the backend's memory, then the hash of what was written there. A
  // flipped bit fails the hash.
  bool bad_hash = false;
  auto lw = read([&](std::span<std::byte> dst) {
    in.read(reinterpret_cast<char*>(dst.data()), static_cast<std::streamsize>(dst.size()));
    if (!in || in.gcount() != static_cast<std::streamsize>(dst.size())) return false;
    uint64_t stored_hash = 0;
    in.read(reinterpret_cast<char*>(&stored_hash), 8);
    bad_hash = !in || stored_hash != hash_bytes(dst.data(), dst.size(), [](std::size_t) {});
    return !bad_hash;
  });
  if (lw) return {std::move(lw), ""};
  return {nullptr, bad_hash ? "the packed bytes do not match the hash stored with them" : "cannot be read back"};
}

// Files warned about as damaged in this process. A damaged file whose repack could not be
// written is still damaged at the next load (a second engine over the same cache): warned
// once; a rewritten file leaves the set, so damage found later is a new warning.
struct DamageWarnings {
  std::mutex mu;
  std::set<std::string> files;
};
DamageWarnings& damage_warnings() {
  static DamageWarnings w;
  return w;
}

void warn_damaged(const fs::path& file, const std::string& why) {
  DamageWarnings& w = damage_warnings();
  std::lock_guard lock(w.mu);
  if (!w.files.insert(file.string()).second) return;
  std::cerr << "warning: kernel cache " << file.string() << " was damaged (" << why << "); repacked\n";
}

void forget_damage(const fs::path& file) {
  DamageWarnings& w = damage_warnings();
  std::lock_guard lock(w.mu);
  w.files.erase(file.string());
}

// Why `file` cannot be replaced ("" when it is missing or a regular file): a directory or
// other non-file in its place is the user's, never removed.
std::string not_replaceable(const fs::path& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);  // through a link: what it points at
  if (fs::is_directory(st)) return "a directory is in its place, not a file; it was not replaced";
  if (fs::exists(st) && !fs::is_regular_file(st))
    return "something other than a regular file is in its place; it was not replaced";
  return "";
}

// Writes the entry atomically (a temporary file renamed over `file`): "" when written, else
// why not. The temporary name is this writer's own (unique_temp_path): processes sharing a
// cache directory pack the same entries at once, and a shared "<entry>.tmp" let one
// truncate, rename away or remove another's half-written file.
std::string write_entry(const fs::path& file, const std::string& hk, std::span<const std::byte> bytes) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return "cannot create " + file.parent_path().string() + ": " + ec.message();
  const std::string tmp = unique_temp_path(file).string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot create " + tmp + ": " + std::strerror(errno);
    const uint64_t hlen = hk.size();
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&hlen), 8);
    out.write(hk.data(), static_cast<std::streamsize>(hlen));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    const uint64_t packed_hash = hash_bytes(bytes.data(), bytes.size(), [](std::size_t) {});
    out.write(reinterpret_cast<const char*>(&packed_hash), 8);
    out.close();
    if (!out) {
      const std::string why = std::strerror(errno);
      fs::remove(tmp, ec);
      return "cannot write " + tmp + ": " + why;
    }
  }
  fs::rename(tmp, file, ec);
  if (!ec) return "";
  const std::string why = ec.message();
  fs::remove(tmp, ec);
  return "cannot rename " + tmp + " over it: " + why;
}

// One line per cache directory and process: a read-only cache (every entry unwritable) or a
// second engine over the same cache does not repeat it; the counts say how many.
void warn_not_written(const fs::path& file, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard lock(mu);
  if (!warned.insert(file.parent_path().string()).second) return;
  std::cerr << "warning: kernel cache " << file.string() << ": cannot write (" << why
            << "); the freshly packed weight serves this run only\n";
}

// The other packings of one weight kept beside the one in use: a changed tile config (a new
// registry entry, a new default) or llmport version gives a new file, and without a bound a
// deployment's cache grew by the whole model at each such change. Two per (weight, backend,
// dtype): alternating between two configs (a run with the registry, a bench without) still
// hits both.
constexpr std::size_t kPackingsPerWeight = 2;

// The header of a cache file ("" when it is not one of ours: never removed), with the
// backend and dtype it was packed for.
struct EntryHeader {
  std::string backend, dtype;
  bool format1 = false;  // older format: never read again, only repacked under its name
};
std::optional<EntryHeader> entry_header(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8];
  uint64_t hlen = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 6) != 0) return std::nullopt;
  if (magic[6] < kMagic[6]) return EntryHeader{"", "", true};
  if (std::memcmp(magic, kMagic, 8) != 0 || !in.read(reinterpret_cast<char*>(&hlen), 8) || hlen > (1u << 20))
    return std::nullopt;
  std::string h(hlen, '\0');
  if (!in.read(h.data(), static_cast<std::streamsize>(hlen))) return std::nullopt;
  const auto j = nlohmann::json::parse(h, nullptr, false);
  if (!j.is_object() || !j.contains("backend") || !j.contains("dtype") || !j["backend"].is_string() ||
      !j["dtype"].is_string())
    return std::nullopt;
  return EntryHeader{j["backend"].get<std::string>(), j["dtype"].get<std::string>(), false};
}

// After `kept` was written: removes the least recently used packings of its weight (files
// "<chash>-*.bin" of the same backend and dtype, hits refresh a file's time) beyond
// kPackingsPerWeight, and its weight's files of the older format. Anything that is not
// one of our regular files, or cannot be read, is left alone.
void prune_packings(const fs::path& kept, const std::string& chash, const std::string& backend,
                    const std::string& dtype) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> same;
  const std::string prefix = chash + "-";
  for (const auto& e : fs::directory_iterator(kept.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (e.path() == kept || name.rfind(prefix, 0) != 0 || e.path().extension() != ".bin" ||
        !e.is_regular_file(ec) || e.is_symlink(ec))
      continue;
    const auto h = entry_header(e.path());
    if (!h) continue;
    if (h->format1) {
      fs::remove(e.path(), ec);
    } else if (h->backend == backend && h->dtype == dtype) {
      same.emplace_back(fs::last_write_time(e.path(), ec), e.path());
    }
  }
  std::sort(same.begin(), same.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = kPackingsPerWeight - 1; i < same.size(); ++i) fs::remove(same[i].second, ec);
}

// A hit is a use: the file's time orders the packings prune_packings keeps. A read-only
// cache just keeps its times.
void touch(const fs::path& file) {
  std::error_code ec;
  fs::last_write_time(file, fs::file_time_type::clock::now(), ec);
}

// One cache file: the weight read back when the file's header is `hk`, else `make()` and the
// file written from its packed() bytes.
std::unique_ptr<LinearWeight> cached(const fs::path& dir, const std::string& chash, const nlohmann::json& header,
                                     std::size_t nbytes, const Reader& read,
                                     const std::function<std::unique_ptr<LinearWeight>()>& make,
                                     CacheOutcome& out) {
  const std::string hk = header.dump();
  const auto file = dir / (chash + "-" + content_hash(hk.data(), hk.size()) + ".bin");
  out.not_written = not_replaceable(file);
  if (out.not_written.empty()) {
    Read r = read_entry(file, hk, nbytes, read);
    if (r.lw) {
      out.hit = true;
      touch(file);
      return std::move(r.lw);
    }
    out.damaged = r.damaged;
    if (!r.damaged.empty()) warn_damaged(file, r.damaged);
  }
  auto packed = make();
  const std::span<const std::byte> bytes = packed->packed();
  if (out.not_written.empty())
    out.not_written = bytes.size() == nbytes ? write_entry(file, hk, bytes)
                                             : fmt::format("packed {} bytes, the backend's size is {}", bytes.size(), nbytes);
  out.written = out.not_written.empty();
  if (out.written) prune_packings(file, chash, header["backend"], header["dtype"]);
  if (!out.written) warn_not_written(file, out.not_written);
  if (out.written && !out.damaged.empty()) forget_damage(file);
  return packed;
}

// Reports `out` through the callers' optional pointers.
void report(const CacheOutcome& out, bool* hit, CacheOutcome* outcome) {
  if (hit) *hit = out.hit;
  if (outcome) *outcome = out;
}
}  // namespace

std::unique_ptr<LinearWeight> KernelCache::get_or_pack(Backend& backend, const TensorView& w,
                                                       DType dtype, const TileConfig& cfg,
                                                       bool* hit, CacheOutcome* outcome) {
  report({}, hit, outcome);
  // Only backends with a packed byte layout (Backend::packed_size) are cached.
  if (w.shape.size() != 2) return backend.make_linear(w, dtype, cfg);
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  const std::size_t nbytes = backend.packed_size(n, k, dtype);
  if (nbytes == 0) return backend.make_linear(w, dtype, cfg);
  const std::string chash = tensor_hash(w);
  const nlohmann::json hk = header_of(w, dtype, cfg, backend.name(), chash);
  CacheOutcome out;
  auto lw = cached(
      dir_, chash, hk, nbytes, [&](const auto& read) { return backend.read_packed_linear(n, k, dtype, cfg, read); },
      [&] { return backend.make_linear(w, dtype, cfg); }, out);
  report(out, hit, outcome);
  return lw;
}

std::unique_ptr<LinearWeight> KernelCache::get_or_quantize(Backend& backend, const TensorView& w, QuantType quant,
                                                           const TileConfig& cfg, bool* hit,
                                                           CacheOutcome* outcome) {
  report({}, hit, outcome);
  if (w.shape.size() != 2) return backend.make_quantized_linear(w, quant, cfg);
  const int n = static_cast<int>(w.shape[0]), k = static_cast<int>(w.shape[1]);
  const std::size_t nbytes = backend.quantized_packed_size(n, k, quant);
  if (nbytes == 0) return backend.make_quantized_linear(w, quant, cfg);
  const std::string chash = tensor_hash(w);
  // The source dtype is part of the tensor bytes' hash; the format names the blocks.
  nlohmann::json h = header_of(w, DType::F32, cfg, backend.name(), chash);
  h["kernel"] = "linear_quant_panels16";
  h["dtype"] = std::string(quant_name(quant));
  CacheOutcome out;
  auto lw = cached(
      dir_, chash, h, nbytes,
      [&](const auto& read) { return backend.read_quantized_linear(n, k, quant, cfg, read); },
      [&] { return backend.make_quantized_linear(w, quant, cfg); }, out);
  report(out, hit, outcome);
  return lw;
}

}  // namespace llmport
