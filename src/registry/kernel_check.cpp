// A sweep's check of one candidate config: the op harness on one linear case, timed.
#include "registry/kernel_check.hpp"

#include "llmport/error.hpp"

namespace llmport::detail {

namespace {
void require(const KernelShape& s, const char* key) {
  auto it = s.find(key);
  if (it == s.end() || it->second <= 0)
    throw UsageError(std::string("kernel shape ") + shape_string(s) + " lacks '" + key + "'");
}
}  // namespace

CheckResult check_kernel(OpHarness& harness, const std::string& kernel, const KernelShape& shape, DType dtype,
                         Backend& be, const TileConfig& cfg, int reps, QuantType quant) {
  if (kernel != "gemm" && kernel != "gemv")
    throw UsageError("check_kernel: '" + kernel + "' is not a swept kernel (expected gemm, gemv); "
                     "validate_kernels checks the others");
  if (kernel == "gemm") require(shape, "m");
  require(shape, "n");
  require(shape, "k");
  OpCase c{kernel == "gemv" ? OpKind::Gemv : OpKind::Gemm, dtype, shape};
  c.tiles = cfg;
  c.quant = quant;
  c.ref_rows = 8;  // the reference on 8 rows spread over m: a row's result does not depend on m
  const OpResult r = harness.run(be, c, reps);
  CheckResult out;
  out.max_abs_err = r.check.max_abs_err;
  out.max_rel_err = r.check.max_rel_err;
  out.mean_rel_l1 = r.check.mean_rel_l1;
  out.pass = r.pass();
  out.n_checked = static_cast<int>(r.check.n_checked);
  out.seconds = r.seconds;
  out.flops = r.flops;
  out.bytes = r.bytes;
  return out;
}

}  // namespace llmport::detail
