#pragma once
// A sweep's correctness-and-speed check of one (linear kernel, shape, tile config): the op
// harness (llmport/op_harness.hpp) on one case, timed.
#include <string>

#include "llmport/op_harness.hpp"
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
/// tolerance(kernel, dtype, k), timing `reps` extra calls. `harness` keeps the packed
/// weight and the reference rows between the configs of one shape. Throws UsageError for
/// another kernel or a shape without its keys. `quant` q8_0/q4_0: the weight is
/// block-quantized (dtype F32), checked under the config's act.
CheckResult check_kernel(OpHarness& harness, const std::string& kernel, const KernelShape& shape,
                         DType dtype, Backend& backend, const TileConfig& cfg, int reps,
                         QuantType quant = QuantType::None);

}  // namespace llmport::detail
