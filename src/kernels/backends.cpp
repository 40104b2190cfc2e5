// Backend dispatch by name, plus the backend-independent ops (embedding lookup, softmax).
#include <algorithm>
#include <cstring>
#include <thread>
#include <string>

#include "kernels/backend_impls.hpp"
#include "kernels/reference/reference_ops.hpp"
#include "llmport/error.hpp"

namespace llmport {

void check_linear_group(std::span<const LinearCall> calls) {
  for (const LinearCall& c : calls) {
    if (!c.w || !c.y) throw UsageError("linear_group: a call has no weight or no output");
    if (c.w->n_in != calls.front().w->n_in)
      throw ShapeError("linear_group: weights of one group take different inputs (n_in " +
                       std::to_string(calls.front().w->n_in) + " vs " +
                       std::to_string(c.w->n_in) + ")");
  }
}

void check_gather_row(const LinearWeight& w, int row) {
  if (row < 0 || row >= w.n_out)
    throw UsageError("row " + std::to_string(row) + " is outside the weight's [0, " +
                     std::to_string(w.n_out) + ") rows");
}

void Backend::linear_group(std::span<const LinearCall> calls, const float* x, int m) {
  check_linear_group(calls);
  for (const LinearCall& c : calls) linear(*c.w, x, m, c.y, c.bias);
}

std::string dispatch_implementation(const std::string& counter) {
  const auto colon = counter.find(':');
  return colon == std::string::npos ? counter : counter.substr(0, colon);
}

bool any_reference_dispatch(const std::map<std::string, uint64_t>& calls) {
  for (const auto& [name, n] : calls)
    if (n > 0 && dispatch_implementation(name) == "reference") return true;
  return false;
}

int max_backend_threads() {
  const unsigned hc = std::thread::hardware_concurrency();
  return std::max(4, 4 * static_cast<int>(hc > 0 ? hc : 1));
}

std::vector<std::string> available_backends() { return {"reference", "cpu"}; }

std::string missing_target_message(const std::string& name) {
  if (name == "cuda") return "no CUDA backend exists yet in llmport (built-in targets: cpu)";
  if (name == "npu1" || name == "npu2") return "NPU targets are out of llmport's scope (no XRT backend)";
  return "";
}

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  if (name == "reference") return make_reference_backend();
  if (name == "cpu") return make_cpu_backend(threads);
  if (const std::string why = missing_target_message(name); !why.empty())
    throw UsageError("backend '" + name + "': " + why);
  std::string list;
  for (const auto& b : available_backends()) {
    if (!list.empty()) list += ", ";
    list += b;
  }
  throw UsageError("unknown backend '" + name + "' (available: " + list + ")");
}

void check_token_ids(const int* ids, int m, int64_t vocab) {
  for (int t = 0; t < m; ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      throw UsageError("token id " + std::to_string(ids[t]) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ")");
}

void embedding_lookup(const TensorView& table, DType compute, const int* ids, int m, float* out) {
  if (table.shape.size() != 2)
    throw ShapeError(table.file.string() + ": " + table.name + ": embedding must be 2-D");
  const int64_t vocab = table.shape[0];
  const std::size_t dim = static_cast<std::size_t>(table.shape[1]);
  const std::size_t es = dtype_size(table.dtype);
  check_token_ids(ids, m, vocab);
  for (int t = 0; t < m; ++t) {
    const auto* row = static_cast<const unsigned char*>(table.data) + static_cast<std::size_t>(ids[t]) * dim * es;
    float* o = out + static_cast<std::size_t>(t) * dim;  // [dim]
    to_f32(table.dtype, row, o, dim);
    round_through(compute, o, o, dim);
  }
}

void softmax(float* x, std::size_t n) { reference::softmax(x, n); }

}  // namespace llmport
