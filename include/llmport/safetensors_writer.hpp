#pragma once
// Writing safetensors files (synthetic models, kernel cache, record side files, tests).
// Format: 8-byte little-endian header length, JSON header {name: {dtype, shape,
// data_offsets}, "__metadata__": {str: str}}, then the data area (8-byte aligned header).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <map>
#include <string>
#include <vector>

#include "llmport/dtype.hpp"

namespace llmport {

/// One tensor to write: raw little-endian bytes of `dtype` with `shape` (row-major).
struct TensorData {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  ///< numel(shape) * dtype_size(dtype) bytes
};

/// Builds a TensorData from fp32 values, converting to `dtype` (round-to-nearest-even).
TensorData make_tensor(std::string name, DType dtype, std::vector<int64_t> shape,
                       const std::vector<float>& values);

/// Writes `tensors` to `file` atomically (temp file + rename). Tensors are laid out in the
/// given order. Throws ShapeError when a tensor's byte size does not match its shape, and
/// WeightsError on I/O failure.
void write_safetensors(const std::filesystem::path& file, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Streams a safetensors file whose tensor data is produced one tensor at a time (models too
/// large to hold in memory): `tensors` give names, dtypes and shapes (their `bytes` are
/// ignored); `produce(i, out)` must write exactly numel * dtype_size bytes of tensor i to
/// `out`. Same layout and atomic temp file + rename as write_safetensors. Throws ShapeError
/// when `produce` wrote a different byte count, WeightsError on I/O failure.
void write_safetensors_streamed(const std::filesystem::path& file,
                                const std::vector<TensorData>& tensors,
                                const std::function<void(std::size_t, std::ostream&)>& produce,
                                const std::map<std::string, std::string>& metadata = {});

}  // namespace llmport
