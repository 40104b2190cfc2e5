// The one kernel tolerance function tolerance(op, dtype, k) (include/llmport/op.hpp) and the
// element-wise comparison every op check uses (include/llmport/tolerance.hpp).
#include "llmport/tolerance.hpp"

#include <algorithm>
#include <cmath>

#include "llmport/error.hpp"

namespace llmport {

double gamma_k(long k) {
  const double ku = static_cast<double>(std::max(0L, k)) * kUnitRoundoffF32;
  return ku / (1.0 - ku);
}

double tolerance(OpKind op, DType dtype, long k) {
  const bool dot = op == OpKind::Gemm || op == OpKind::Gemv || op == OpKind::LinearGroup;
  if (op == OpKind::GatherRows || op == OpKind::Embedding || op == OpKind::KvStore) return 0;
  const int e_ulps =
      (op == OpKind::Swiglu || op == OpKind::AttentionPrefill || op == OpKind::AttentionDecode) ? 4 : 0;
  // bf16 x bf16 products are exact in fp32; fp16/fp32 weights times fp32 x round once more.
  const long k_eff = k + (dot && dtype != DType::BF16 ? 1 : 0);
  return 2.0 * gamma_k(k_eff) + 2.0 * e_ulps * kUnitRoundoffF32;
}

double tolerance(OpKind op, DType dtype, long k, ActQuant act) {
  const double base = tolerance(op, dtype, k);
  const bool dot = op == OpKind::Gemm || op == OpKind::Gemv || op == OpKind::LinearGroup;
  // Half a q8 step of the block's largest magnitude (amax / 127 / 2), plus the fp32
  // roundings of d_x, 1/d_x and x/d_x (3u) and of d_w * d_x (u): op.hpp.
  return act == ActQuant::Q8 && dot ? base + 1.0 / 254.0 + 4.0 * kUnitRoundoffF32 : base;
}

ActQuant act_of(const TileConfig& cfg) noexcept {
  const auto it = cfg.find(kActTileKey);
  return it != cfg.end() && it->second == 1 ? ActQuant::Q8 : ActQuant::F32;
}

double tolerance(const std::string& op, DType dtype, long k) {
  return tolerance(parse_op_kind(op), dtype, k);
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
