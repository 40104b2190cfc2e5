// The one kernel tolerance table: tolerance(op, dtype, k) (include/llmport/tolerance.hpp).
#include "llmport/tolerance.hpp"

#include <algorithm>
#include <cmath>

#include "llmport/error.hpp"

namespace llmport {

double gamma_k(long k) {
  const double ku = static_cast<double>(std::max(0L, k)) * kUnitRoundoffF32;
  return ku / (1.0 - ku);
}

double tolerance(const std::string& op, DType dtype, long k) {
  const bool dot = op == "gemm" || op == "gemv" || op == "linear_group" || op.rfind("linear_group", 0) == 0;
  if (op == "gather_rows") return 0;  // a copy of stored values: exact
  int e_ulps = 0;
  if (op == "swiglu" || op == "attention_prefill" || op == "attention_decode") e_ulps = 4;
  else if (!dot && op != "rmsnorm" && op != "rope" && op != "add")
    throw UsageError("tolerance: unknown op '" + op +
                     "' (expected gemm, gemv, linear_group, gather_rows, rmsnorm, rope, swiglu, "
                     "add, attention_prefill, attention_decode)");
  // bf16 x bf16 products are exact in fp32; fp16/fp32 weights times fp32 x round once more.
  const long k_eff = k + (dot && dtype != DType::BF16 ? 1 : 0);
  return 2.0 * gamma_k(k_eff) + 2.0 * e_ulps * kUnitRoundoffF32;
}

void check_tolerance(ToleranceCheck& acc, const float* got, const float* ref, const float* scale,
                     std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i], w = ref[i], d = std::abs(g - w), s = std::abs(scale[i]);
    const bool noise = d <= kUnderflowFloor;
    const bool ok = std::isfinite(g) && (noise || d <= acc.tolerance * s);
    double rel = 0;
    if (!std::isfinite(d)) rel = INFINITY;
    else if (!noise) rel = s > 0 ? d / s : INFINITY;
    if (!ok && acc.pass) {
      acc.pass = false;
      acc.first_bad = acc.n_checked + static_cast<long>(i);
    }
    acc.max_abs_err = std::max(acc.max_abs_err, std::isfinite(d) ? d : INFINITY);
    acc.max_rel_err = std::max(acc.max_rel_err, rel);
    if (std::isfinite(d)) acc.sum_abs_err += d;
    acc.sum_abs_ref += std::abs(w);
  }
  acc.n_checked += static_cast<long>(n);
  acc.mean_rel_l1 = acc.sum_abs_ref > 0 ? acc.sum_abs_err / acc.sum_abs_ref : acc.sum_abs_err;
  acc.ratio = acc.tolerance > 0 ? acc.max_rel_err / acc.tolerance : (acc.max_rel_err > 0 ? INFINITY : 0);
}

}  // namespace llmport
