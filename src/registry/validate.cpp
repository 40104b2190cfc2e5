// `kernels validate`: every kernel x shape a model needs vs the reference kernels.
#include <unistd.h>

#include <map>
#include <set>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "registry/kernel_check.hpp"

namespace llmport {

std::pair<double, double> kernel_tolerance(const std::string& kernel, DType dtype) {
  if (dtype == DType::F32) return {1e-4, 1e-4};
  const double rtol = 1.6e-2;
  if (kernel == "gemv") return {1e-3, rtol};
  if (kernel == "gemm") return {1.5e-3, rtol};
  if (kernel == "swiglu") return {8e-2, rtol};
  if (kernel == "attention_prefill" || kernel == "attention_decode") return {1e-1, rtol};
  return {5e-2, rtol};  // rmsnorm, rope, add
}

TileConfig kernel_config_subset(const std::string& kernel, const TileConfig& cfg) {
  static const std::map<std::string, std::set<std::string>> keys = {
      {"gemm", {"mr", "np", "kc", "mc", "nc", "fma"}}, {"gemv", {"gnp"}}};
  TileConfig out;
  auto it = keys.find(kernel);
  if (it == keys.end()) return out;
  for (const auto& [k, v] : cfg)
    if (it->second.count(k)) out[k] = v;
  return out;
}

namespace {

/// a * b as an int, or UsageError naming the product (64-bit math: no overflow).
int checked_mul(long long a, long long b, const char* what) {
  const long long r = a * b;
  if (r > 2147483647LL)
    throw UsageError(std::string("kernels validate: ") + what + " = " + std::to_string(a) + " x " +
                     std::to_string(b) + " does not fit a 32-bit dimension (config.json sizes too large)");
  return static_cast<int>(r);
}

/// Bytes of the buffers a kernel check allocates (inputs, outputs, the reference copy), roughly.
long double check_bytes(const std::string& kernel, const KernelShape& s) {
  auto g = [&](const char* k) { return static_cast<long double>(s.count(k) ? s.at(k) : 1); };
  if (kernel == "gemm") return 4.0L * 3 * (g("n") * g("k") + g("m") * g("k") + g("m") * g("n"));
  if (kernel == "gemv") return 4.0L * 3 * (g("n") * g("k") + g("k") + g("n"));
  long double n = 1;
  for (const auto& [k, v] : s) n *= static_cast<long double>(v);
  return 4.0L * 4 * n;
}

}  // namespace

std::vector<std::pair<std::string, KernelShape>> model_kernel_shapes(const ModelConfig& cfg,
                                                                     int prefill_m) {
  const int P = std::max(1, prefill_m);
  const int hd = cfg.head_dim, nh = cfg.n_heads, nkv = cfg.n_kv_heads, e = cfg.emb_dim;
  const int q_dim = checked_mul(nh, hd, "num_attention_heads * head_dim");
  const int kv_dim = checked_mul(nkv, hd, "num_key_value_heads * head_dim");
  checked_mul(P, nh, "prefill rows * num_attention_heads");
  checked_mul(P, cfg.hidden_dim, "prefill rows * intermediate_size");
  checked_mul(P, e, "prefill rows * hidden_size");
  std::vector<std::pair<std::string, KernelShape>> out;
  std::set<std::pair<int, int>> linears = {{q_dim, e}, {kv_dim, e}, {e, q_dim},
                                           {cfg.hidden_dim, e}, {e, cfg.hidden_dim},
                                           {cfg.vocab_size, e}};
  for (const auto& [n, k] : linears) {
    out.push_back({"gemm", {{"m", P}, {"n", n}, {"k", k}}});
    out.push_back({"gemv", {{"n", n}, {"k", k}}});
  }
  for (int m : {P, 1}) {
    out.push_back({"rmsnorm", {{"m", m}, {"dim", e}}});
    if (cfg.qk_norm) out.push_back({"rmsnorm", {{"m", m * nh}, {"dim", hd}}});
    out.push_back({"rope", {{"m", m}, {"n_heads", nh}, {"head_dim", hd}}});
    if (nkv != nh) out.push_back({"rope", {{"m", m}, {"n_heads", nkv}, {"head_dim", hd}}});
    out.push_back({"swiglu", {{"n", m * cfg.hidden_dim}}});
    out.push_back({"add", {{"n", m * e}}});
  }
  out.push_back({"attention_prefill", {{"m", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  out.push_back({"attention_decode", {{"ctx", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  return out;
}

std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype, Backend& backend,
                                            KernelSelection* sel, int prefill_m) {
  std::vector<ValidationRow> rows;
  const auto shapes = model_kernel_shapes(cfg, prefill_m);
  // Every check allocates its buffers: a shape that needs more than the machine's memory is
  // refused before the first allocation.
  const long double mem = static_cast<long double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  for (const auto& [kernel, shape] : shapes)
    if (mem > 0 && check_bytes(kernel, shape) > mem / 2)
      throw UsageError("kernels validate: " + kernel + " " + shape_string(shape) + " needs about " +
                       std::to_string(static_cast<long long>(check_bytes(kernel, shape) / 1e9L)) +
                       " GB, more than half of this machine's " + std::to_string(static_cast<long long>(mem / 1e9L)) +
                       " GB (config.json sizes too large)");
  for (const auto& [kernel, shape] : shapes) {
    TileConfig tc;
    if ((kernel == "gemm" || kernel == "gemv") && backend.name() == "cpu") {
      const int n = shape.at("n"), k = shape.at("k");
      tc = sel ? sel->linear_config(backend, n, k, dtype)
               : cpu::default_tile_config(cpu::parse_isa(backend.isa()), dtype, n, k);
    }
    const auto r = detail::check_kernel(kernel, shape, dtype, backend, tc, 0);
    ValidationRow row;
    row.kernel = kernel;
    row.shape = shape;
    row.config = kernel_config_subset(kernel, tc);
    row.max_abs_err = r.max_abs_err;
    row.max_rel_err = r.max_rel_err;
    row.mean_rel_l1 = r.mean_rel_l1;
    std::tie(row.atol, row.rtol) = kernel_tolerance(kernel, dtype);
    row.pass = r.pass && r.n_checked > 0;
    row.n_checked = r.n_checked;
    rows.push_back(row);
  }
  return rows;
}

void record_validation(const std::vector<ValidationRow>& rows, DType dtype, const std::string& isa,
                       KernelRegistry& registry, const std::string& model_name, int threads) {
  const std::string dt(dtype_name(dtype));
  for (const auto& row : rows) {
    RegistryEntry e;
    if (const auto* old = registry.find(row.kernel, dt, isa, row.shape)) e = *old;
    e.kernel = row.kernel;
    e.dtype = dt;
    e.isa = isa;
    e.shape = row.shape;
    bool have = false;
    for (auto& c : e.candidates)
      if (c.config == row.config) {
        c.mean_rel_l1 = row.mean_rel_l1;
        c.max_abs_err = row.max_abs_err;
        c.pass = row.pass;
        have = true;
      }
    if (!have) {
      Candidate c;
      c.config = row.config;
      c.mean_rel_l1 = row.mean_rel_l1;
      c.max_abs_err = row.max_abs_err;
      c.pass = row.pass;
      e.candidates.push_back(c);
    }
    if (e.best.empty() || e.best == row.config) {
      e.heuristic = e.best.empty() ? true : e.heuristic;
      e.best = row.config;
    }
    e.validated = row.pass && e.best == row.config;
    e.used_by = {model_name};
    if (e.provenance.date.empty()) e.provenance = Provenance::current(threads);
    registry.record(e);
  }
}

}  // namespace llmport
