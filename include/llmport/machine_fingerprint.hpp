#pragma once
// The machine a measurement belongs to: cpuid vendor/family/model/stepping, the ISA flags
// that change which kernel is fastest, worker threads and llmport version. Registry entries
// (llmport/registry.hpp) and the kernel-path probe (llmport/kernel_probe.hpp) are keyed by it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmport {

/// The machine a measurement belongs to (PyTorch TunableOp's validators are the model: a
/// tuned config from another CPU, thread count or llmport version is not used). The
/// model-name string alone is not enough: VMs report a generic "Intel(R) Xeon(R) Processor".
struct MachineFingerprint {
  std::string vendor;  ///< cpuid vendor, e.g. "GenuineIntel", "AuthenticAMD" (empty: unrecorded)
  int family = -1, model = -1, stepping = -1;  ///< as /proc/cpuinfo reports them
  /// ISA flags that change which kernel is fastest, sorted: avx2 fma f16c avx512f avx512bw
  /// avx512vl avx512dq avx512_bf16 avx512_fp16 avx512_vnni amx_bf16 amx_int8 amx_tile.
  std::vector<std::string> isa_flags;
  int threads = 0;  ///< worker threads the measurement ran with
  std::string llmport_version;

  bool empty() const { return vendor.empty(); }
  /// Stable id: "fp-" + 16 hex digits of FNV-1a over the canonical form of every field.
  std::string id() const;
  /// "GenuineIntel family 6 model 143 stepping 8 (avx512_bf16 amx_bf16, 2 threads, llmport 0.1.0)";
  /// "an unrecorded machine (no fingerprint)" when empty.
  std::string describe() const;
  /// This machine now (/proc/cpuinfo), running `threads` workers (0 = all cores).
  static MachineFingerprint current(int threads);
};

/// {"id", "vendor", "family", "model", "stepping", "isa_flags", "threads", "llmport_version"}.
nlohmann::json to_json(const MachineFingerprint& f);

}  // namespace llmport
