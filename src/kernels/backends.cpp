// The backend factory (dispatch by name and level: the one place outside a backend's folder
// that knows its headers), the Backend defaults, and the backend-independent ops.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <string>

#include "kernels/backend_impls.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/reference/reference_ops.hpp"
#include "kernels/rounding_noise.hpp"
#include "llmport/error.hpp"

namespace llmport {
namespace {
const std::string kRoundingNoise = "rounding-noise";
}  // namespace

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

void Backend::linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag) {
  check_linear_group(calls);
  for (const LinearCall& c : calls) linear(*c.w, x, m, c.y, c.bias, {tag.layer, c.role});
}

std::unique_ptr<LinearWeight> Backend::make_quantized_linear(const TensorView& w, QuantType quant,
                                                             const TileConfig&) {
  throw UsageError("backend '" + name() + "' (" + isa() + ") has no " + std::string(quant_name(quant)) +
                   " kernels yet (" + w.name + "); use --backend reference or a float dtype");
}

std::unique_ptr<LinearWeight> Backend::read_packed_linear(
    int n, int k, DType dtype, const TileConfig& cfg,
    const std::function<bool(std::span<std::byte>)>& read) {
  const std::size_t nbytes = packed_size(n, k, dtype);
  if (nbytes == 0) return nullptr;
  std::vector<std::byte> buf(nbytes);
  if (!read(buf)) return nullptr;
  return linear_from_packed(n, k, dtype, cfg, buf);
}

void Backend::embedding(const TensorView& table, DType compute, const int* ids, int m, float* out,
                        OpTag) {
  embedding_lookup(table, compute, ids, m, out);
}

void Backend::kv_store(const KvStoreArgs& a, OpTag) {
  if (a.pos < 0 || a.m < 0 || a.pos + a.m > a.kv_capacity)
    throw UsageError("kv_store: positions " + std::to_string(a.pos) + ".." +
                     std::to_string(a.pos + a.m - 1) + " are outside the KV-cache region of " +
                     std::to_string(a.kv_capacity) + " positions");
  const std::size_t hd = static_cast<std::size_t>(a.head_dim);
  for (int t = 0; t < a.m; ++t)
    for (int h = 0; h < a.n_kv_heads; ++h) {
      const std::size_t src = (static_cast<std::size_t>(t) * a.n_kv_heads + h) * hd;
      const std::size_t dst = (static_cast<std::size_t>(h) * a.kv_capacity + a.pos + t) * hd;
      std::memcpy(a.k_cache + dst, a.k + src, hd * sizeof(float));
      std::memcpy(a.v_cache + dst, a.v + src, hd * sizeof(float));
    }
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

int resolve_backend_threads(int n) {
  // -4 would silently mean "every core" (the n > 0 test below) under a count nobody chose.
  if (n < 0) throw UsageError("threads: " + std::to_string(n) + " is negative (0 = every core)");
  if (n > max_backend_threads())
    throw UsageError("threads: " + std::to_string(n) + " is more than 4 x this machine's " +
                     "hardware threads (at most " + std::to_string(max_backend_threads()) + ")");
  return n > 0 ? n : std::max(1, omp_get_num_procs());
}

std::vector<std::string> available_backends() { return {"reference", "cpu"}; }

std::string missing_target_message(const std::string& name) {
  if (name == "cuda") return "no CUDA backend exists yet in llmport (built-in targets: cpu)";
  if (name == "npu1" || name == "npu2") return "NPU targets are out of llmport's scope (no XRT backend)";
  return "";
}

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  if (name == "reference") return make_reference_backend(threads);
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

std::vector<std::string> backend_levels(const std::string& name) {
  if (name == "reference") return {"scalar"};
  if (name == "cpu") {
    std::vector<std::string> out;
    for (cpu::Isa isa : cpu::supported_isas()) out.emplace_back(cpu::isa_name(isa));
    return out;
  }
  make_backend(name);  // throws the unknown/missing-target message
  return {};
}

std::vector<std::string> backend_built_levels(const std::string& name) {
  if (name == "reference") return {"scalar"};
  if (name == "cpu") {
    std::vector<std::string> out;
    for (cpu::Isa isa : {cpu::Isa::Avx512Bf16, cpu::Isa::Avx512, cpu::Isa::Avx2, cpu::Isa::Scalar})
      out.emplace_back(cpu::isa_name(isa));
    return out;
  }
  make_backend(name);  // throws the unknown/missing-target message
  return {};
}

std::unique_ptr<Backend> make_backend_at(const std::string& name, const std::string& level,
                                         int threads) {
  // Not a level backend_levels lists: it computes no model, it measures a format's cost.
  // "rounding-noise/N": the noise's realization N over the default ISA; "/quantizer" the
  // quantizer's rounding, "/off" neither (rounding_noise.hpp).
  if (name == "cpu" && level.rfind(kRoundingNoise, 0) == 0) {
    const std::string mode = level.substr(kRoundingNoise.size());
    using M = Rounding::Mode;
    if (mode == "/off") return make_rounding_noise_backend(make_cpu_backend(threads), {M::Off, 0});
    if (mode == "/quantizer") return make_rounding_noise_backend(make_cpu_backend(threads), {M::Quantizer, 0});
    if (mode.size() > 1 && mode.size() < 12 && mode[0] == '/' &&
        mode.find_first_not_of("0123456789", 1) == std::string::npos)
      return make_rounding_noise_backend(make_cpu_backend(threads), {M::Noise, std::stoull(mode.substr(1))});
    throw UsageError("backend 'cpu': level '" + level + "' is not rounding-noise/N, /quantizer or /off");
  }
  if (name == "cpu") return cpu::make_cpu_backend_isa(threads, cpu::parse_isa(level));
  if (name == "reference" && level == "scalar") return make_reference_backend(threads);
  // Not a level backend_levels lists either: no engine computes it (copy_direction.hpp).
  if (name == "reference" && level == "fp64") return make_reference_backend(threads, true);
  if (name == "reference")
    throw UsageError("backend 'reference' has levels 'scalar' and 'fp64' (got '" + level + "')");
  return make_backend(name, threads);  // throws for unknown names
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
