// The kernel-path probe's choice: the ISA-flag default of each probed op and the margin
// rule that lets a measured path replace it (llmport/kernel_probe.hpp).
#include <algorithm>

#include "llmport/kernel_probe.hpp"

namespace llmport {

std::optional<int> isa_default_path(const std::string& op, const std::string& isa) {
  // bf16 GEMM: only avx512bf16 has two paths (vdpbf16ps and the fp32-FMA widening); below
  // it the FMA path is the only sensible one (tile_config.cpp). vdpbf16ps is today's default.
  if (op == "gemm bf16") return isa == "avx512bf16" ? std::optional<int>(0) : std::nullopt;
  // q8 activation blocks were 1.5-3x faster at every level measured (bench/results/quant_act_gemv.md).
  if (op == "gemv q8_0" || op == "gemv q4_0") return 1;
  // The decode GEMV's weight prefetch (AVX-512 kernels only): prefetcht1 was measured best
  // of the T0/T1 distances on Zen 4 (linear_avx512_impl.inc); prefetchnta replaces it where
  // the probe measures it faster (Zen 5).
  if (op == "gemv bf16") return isa == "avx512bf16" || isa == "avx512" ? std::optional<int>(0) : std::nullopt;
  return std::nullopt;
}

double op_margin(const std::string& op) {
  // The two prefetch hints run the same instructions and only move the memory traffic; their
  // rates are medians of interleaved passes (kernel_probe_measure.cpp), which agreed in sign
  // on every run on Zen 5 while differing by 1.5-7% (in the model: 5-15%).
  return op == "gemv bf16" ? kPrefetchProbeMargin : kProbeMargin;
}

int choose_path(const std::vector<ProbePath>& paths, int isa_default, double margin) {
  double base = 0;
  for (const ProbePath& p : paths)
    if (p.value == isa_default) base = std::max(base, p.gflops);
  if (base <= 0) return isa_default;  // nothing to compare against: keep what runs today
  const ProbePath* best = nullptr;
  for (const ProbePath& p : paths)
    if (p.value != isa_default && (!best || p.gflops > best->gflops)) best = &p;
  return best && best->gflops > (1.0 + margin) * base ? best->value : isa_default;
}

std::map<std::string, double> disturbed_ops(const std::vector<ProbePath>& paths) {
  std::map<std::string, double> out;
  for (const ProbePath& p : paths)
    if (p.wait_share > kProbeMaxWaitShare) {
      auto [it, fresh] = out.emplace(p.op, p.wait_share);
      if (!fresh) it->second = std::max(it->second, p.wait_share);
    }
  return out;
}

std::map<std::string, ProbeChoice> choose_defaults(const std::vector<ProbePath>& paths,
                                                   const std::string& isa) {
  std::map<std::string, std::vector<ProbePath>> by_op;
  for (const ProbePath& p : paths) by_op[p.op].push_back(p);
  const std::map<std::string, double> disturbed = disturbed_ops(paths);
  std::map<std::string, ProbeChoice> out;
  for (const auto& [op, ps] : by_op) {
    const std::optional<int> def = isa_default_path(op, isa);
    if (!def) continue;
    out[op] = {ps.front().key, disturbed.contains(op) ? *def : choose_path(ps, *def, op_margin(op)), *def};
  }
  return out;
}

}  // namespace llmport
