#pragma once
// Comparing a kernel with the reference: tolerance(op, dtype, k) (llmport/op.hpp), used by the kernel
// unit tests, `llmport kernels validate`, `kernels sweep` and deploy phase 1.
//
// Every check compares a fast kernel with the fp32 reference kernel fed the same inputs
// (values already on the dtype's grid), element by element:
//
//     |got_i - ref_i| <= tolerance(op, dtype, k) * scale_i
//
// where scale_i is the magnitude of the terms that make up element i (op_scale below):
// sum_j |x_j w_ij| (+ |b_i|) for a linear, |a_i| + |b_i| for add, ... Both implementations
// round in fp32 (u = 2^-24) in their own order, so each is within Higham's bound
// gamma_k * scale_i of the exact value (N. J. Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., 2002, sec. 3.1: |fl(x^T y) - x^T y| <= gamma_k sum |x_i y_i|,
// gamma_k = k u / (1 - k u)), and their difference within twice that:
//
//     tolerance(op, dtype, k) = 2 * gamma_{k'} + 2 * e_op * u
//
// k' = k, plus 1 for a dot product whose products are not exact in fp32 (fp16/fp32
// weights times fp32 x; bf16 x bf16 products are exact); e_op = the ulp error of an
// approximated function in the op (the Cephes expf polynomial of swiglu and attention:
// ~2 ulp, counted as 4), 0 otherwise. gather_rows copies stored values: k = 0, exact.
// docs/verification.md "Kernel tolerances (phase 1)" lists k and scale per op.
#include <cstddef>
#include <string>

#include "llmport/dtype.hpp"
#include "llmport/op.hpp"

namespace llmport {

/// Differences below this are underflow noise (e.g. the saturated exp tail of swiglu at
/// |gate| > 88, ~1e-37), never a kernel fault: they pass whatever the scale.
inline constexpr double kUnderflowFloor = 1e-30;

/// fp32 unit roundoff 2^-24.
inline constexpr double kUnitRoundoffF32 = 5.9604644775390625e-08;

/// Higham's gamma_k = k u / (1 - k u) for fp32 (u = 2^-24).
double gamma_k(long k);


/// Outcome of comparing n outputs against the reference with per-element scales.
struct ToleranceCheck {
  double max_abs_err = 0;
  double max_rel_err = 0;  ///< max |got - ref| / scale (inf on a non-finite output)
  double mean_rel_l1 = 0;  ///< sum |got - ref| / sum |ref|
  double tolerance = 0;
  double ratio = 0;        ///< max_rel_err / tolerance (0 when both are 0)
  bool pass = true;
  long n_checked = 0;
  long first_bad = -1;     ///< index (over all blocks added) of the first element out of tolerance
  double sum_abs_err = 0, sum_abs_ref = 0;
};

/// Adds n compared elements to `acc` (acc.tolerance set by the caller): element i passes
/// when got_i is finite and |got_i - ref_i| <= acc.tolerance * scale_i (or <= kUnderflowFloor).
void check_tolerance(ToleranceCheck& acc, const float* got, const float* ref, const float* scale,
                     std::size_t n);

}  // namespace llmport
