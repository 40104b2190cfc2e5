#pragma once
// Runs one kernel x shape on a backend and on the reference backend with the same rounded
// random inputs, compares element-wise, and times the backend (shared by validate, sweep
// and bench).
#include <string>

#include "llmport/registry.hpp"

namespace llmport::detail {

struct CheckResult {
  double max_abs_err = 0, max_rel_err = 0, mean_rel_l1 = 0;
  bool pass = true;
  int n_checked = 0;
  double seconds = 0;  ///< best time of the timed repetitions (0 when reps == 0)
  double flops = 0;    ///< FLOPs of one call (0 for memory-only kernels)
  double bytes = 0;    ///< bytes one call must move
};

/// Checks linear kernel `kernel` (gemm | gemv) at `shape` in `dtype` with `cfg` on up to 8
/// rows (a sweep's pass/fail per candidate; phase 1 checks every row: validate_kernels),
/// tolerance(kernel, dtype, k), timing `reps` extra calls. Throws UsageError otherwise.
CheckResult check_kernel(const std::string& kernel, const KernelShape& shape, DType dtype,
                         Backend& backend, const TileConfig& cfg, int reps);

/// Returns the cpu backend's packed-linear config reblocked without repacking (sweeps).
void reconfigure_linear(LinearWeight& w, const TileConfig& cfg);

}  // namespace llmport::detail
