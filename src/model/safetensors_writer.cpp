#include "llmport/safetensors_writer.hpp"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport {

TensorData make_tensor(std::string name, DType dtype, std::vector<int64_t> shape,
                       const std::vector<float>& values) {
  TensorData t{std::move(name), dtype, std::move(shape), {}};
  const std::size_t es = dtype_size(dtype);
  t.bytes.resize(values.size() * es);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&t.bytes[i * 4], &values[i], 4);
    } else {
      uint16_t h = dtype == DType::BF16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
      std::memcpy(&t.bytes[i * 2], &h, 2);
    }
  }
  return t;
}

void write_safetensors(const std::filesystem::path& file, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Check every size first so a bad tensor fails before any file is created.
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    if (static_cast<std::size_t>(numel) * dtype_size(t.dtype) != t.bytes.size())
      throw ShapeError(file.string() + ": tensor " + t.name + ": " + std::to_string(t.bytes.size()) +
                       " bytes do not match its shape");
  }
  write_safetensors_streamed(
      file, tensors,
      [&](std::size_t i, std::ostream& out) {
        out.write(reinterpret_cast<const char*>(tensors[i].bytes.data()),
                  static_cast<std::streamsize>(tensors[i].bytes.size()));
      },
      metadata);
}

void write_safetensors_streamed(const std::filesystem::path& file,
                                const std::vector<TensorData>& tensors,
                                const std::function<void(std::size_t, std::ostream&)>& produce,
                                const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::size_t> sizes;
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    int64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    sizes.push_back(static_cast<std::size_t>(numel) * dtype_size(t.dtype));
    header[t.name] = {{"dtype", std::string(dtype_safetensors_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + sizes.back()}}};
    offset += sizes.back();
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');
  const uint64_t hlen = h.size();
  // This writer's own temporary name: two writers of one file never share it.
  const std::filesystem::path tmp = unique_temp_path(file);
  std::error_code ec;  // the error paths remove the temporary file, never throwing again
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw WeightsError(file.string() + ": cannot open for writing");
    unsigned char lenb[8];
    for (int i = 0; i < 8; ++i) lenb[i] = static_cast<unsigned char>((hlen >> (8 * i)) & 0xff);
    f.write(reinterpret_cast<const char*>(lenb), 8);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto before = f.tellp();
      produce(i, f);
      if (!f) {
        f.close();
        std::filesystem::remove(tmp, ec);
        throw WeightsError(file.string() + ": write failed (disk full?)");
      }
      const auto written = static_cast<long long>(f.tellp() - before);
      if (written < 0 || static_cast<std::size_t>(written) != sizes[i]) {
        f.close();
        std::filesystem::remove(tmp);
        throw ShapeError(file.string() + ": tensor " + tensors[i].name + ": produced " +
                         std::to_string(written) + " bytes, its shape needs " +
                         std::to_string(sizes[i]));
      }
    }
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw WeightsError(file.string() + ": write failed (disk full?)");
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw WeightsError(file.string() + ": cannot rename temp file: " + why);
  }
}

}  // namespace llmport

