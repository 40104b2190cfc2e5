#pragma once
// The kernel-path probe: which micro-kernel path is faster depends on the core, not on the
// ISA flags (bf16 GEMM: vdpbf16ps runs at ~0.5x the fp32 FMA rate on the Intel Xeons
// measured, ~2x on AMD Zen 4/5). On the first use of a probed default on a machine, the
// cpu backend's real kernels are timed on one thread on cache-resident shapes (well under
// a second), the rates and the chosen tile keys are cached in a JSON file keyed by the
// machine fingerprint, and the heuristic default tile configs read the choice
// (docs/performance.md "How the default config is chosen"). Registry entries measured on
// this machine still override the default.
//
// Environment:
//   LLMPORT_PROBE=0|off       never probe: the ISA-flag defaults (reproducible runs); 1|on
//                             or unset: probe. Any other value: UsageError naming it.
//   LLMPORT_PROBE_CACHE=DIR   the cache directory (default: beside the user registry,
//                             $XDG_DATA_HOME/llmport/probe, else ~/.local/share/llmport/probe).
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/kernels.hpp"
#include "llmport/machine_fingerprint.hpp"

namespace llmport {

/// One measured kernel path.
struct ProbePath {
  std::string op;     ///< the default it decides: "gemm bf16", "gemv q8_0", "gemv q4_0"
  std::string key;    ///< the tile key that selects the path: "fma" (gemm bf16) | "act" (gemv q8_0/q4_0)
  int value = 0;      ///< the key's value for this path
  std::string name;   ///< "vdpbf16ps" | "fp32-fma" | "fp32-act" | "q8-act"
  std::string shape;  ///< "m=156 n=512 k=512"
  TileConfig config;  ///< the full tile config timed (the path's default register blocking)
  double gflops = 0;  ///< best of the timed repetitions, 2*m*n*k / seconds / 1e9
  /// The run-queue wait of all the process's threads while the path was timed (summed over
  /// /proc/self/task/*/schedstat: time runnable but not on a core) over wall seconds x the
  /// threads timed; 0 where the kernel keeps no schedstat. ~0 when the threads had their
  /// cores, large when other work (another process, or another thread of this one) held
  /// them; a rate measured then says more about that work than about the path
  /// (kProbeMaxWaitShare).
  double wait_share = 0;
};

/// The chosen value of one op's tile key.
struct ProbeChoice {
  std::string key;        ///< "fma" | "act"
  int value = 0;          ///< chosen
  int isa_default = 0;    ///< the ISA-flag default (what runs without a probe)
  bool operator==(const ProbeChoice&) const = default;
};

/// One probe of one machine.
struct KernelProbe {
  MachineFingerprint machine;   ///< MachineFingerprint::current(1): the probe runs one thread
  std::string isa;              ///< the level it measured (the best this CPU runs)
  std::string measured_at;      ///< ISO-8601 UTC
  double seconds = 0;           ///< wall time of the measurement
  std::vector<ProbePath> paths;
  std::map<std::string, ProbeChoice> chosen;  ///< op ("gemm bf16", ...) -> choice
};

/// A path must beat the ISA default's path by more than this fraction to replace it
/// (timing noise on a shared machine is a few percent).
inline constexpr double kProbeMargin = 0.05;
/// The margin of the decode GEMV prefetch hint ("gemv bf16"), measured as medians of
/// interleaved passes rather than best-of (op_margin).
inline constexpr double kPrefetchProbeMargin = 0.02;
/// A path timed with more than this run-queue wait share (ProbePath::wait_share) was
/// disturbed: its op keeps the ISA-flag default, and a probe with such a path is not cached
/// (the next process measures again). A 2-vCPU Zen 5 VM measured under 0.01 idle and
/// 0.3-0.7 beside one or two busy processes (session 19).
inline constexpr double kProbeMaxWaitShare = 0.1;
/// The ops of `paths` with a path timed above kProbeMaxWaitShare, each with its largest share.
std::map<std::string, double> disturbed_ops(const std::vector<ProbePath>& paths);
/// The margin choose_defaults applies to `op`.
double op_margin(const std::string& op);

/// The ISA-flag default value of `op`'s key at level `isa` ("gemm bf16" fma 0 at
/// avx512bf16; "gemv bf16" pf 0 at avx512 and avx512bf16; "gemv q8_0"/"gemv q4_0" act 1
/// everywhere); nullopt where `op` has one path.
std::optional<int> isa_default_path(const std::string& op, const std::string& isa);

/// The margin rule for one op: the fastest path among `paths` (all of one op and key)
/// replaces `isa_default` only when its rate exceeds (1 + margin) x the default path's; a
/// default path that was not measured (or measured 0) keeps the default.
int choose_path(const std::vector<ProbePath>& paths, int isa_default, double margin = kProbeMargin);

/// `chosen` for every op in `paths` that has an ISA default at `isa` (choose_path); a
/// disturbed op (disturbed_ops) keeps its default.
std::map<std::string, ProbeChoice> choose_defaults(const std::vector<ProbePath>& paths,
                                                   const std::string& isa);

/// Times the paths the cpu backend has at level `isa` (UsageError when this CPU cannot run
/// it): gemm bf16 fma 0/1 at avx512bf16 only (one path below it); gemv q8_0 and q4_0 act 0/1
/// at every level. One thread, best of up to 15 repetitions within ~0.1 s per path.
std::vector<ProbePath> measure_kernel_paths(const std::string& isa);

nlohmann::json to_json(const KernelProbe& p);
/// Throws ConfigError naming the field ("paths[2].gflops: expected a number, got \"x\"",
/// "fingerprint: missing") on a missing, mistyped or out-of-range field (a damaged cache
/// file); never a JSON library exception.
KernelProbe probe_from_json(const nlohmann::json& j);

/// false when LLMPORT_PROBE is 0 or off. Throws UsageError naming the variable on a value
/// other than 0, off, 1, on.
bool probe_enabled();
/// $LLMPORT_PROBE_CACHE, else user_registry_dir()/../probe; nullopt when neither
/// XDG_DATA_HOME nor HOME is set (then every process measures again).
std::optional<std::filesystem::path> probe_cache_dir();
/// <dir>/cpu_<fingerprint id>.json.
std::filesystem::path probe_cache_file(const std::filesystem::path& dir, const MachineFingerprint& m);

/// What load_or_probe needs; machine_probe_request() fills it for this machine.
struct ProbeRequest {
  std::optional<std::filesystem::path> cache_dir;
  MachineFingerprint machine;
  std::string isa;  ///< level to measure
  std::function<std::vector<ProbePath>(const std::string& isa)> measure = measure_kernel_paths;
  bool force = false;  ///< measure even when the cache holds this machine's probe
};
/// This machine: probe_cache_dir(), MachineFingerprint::current(1), the best ISA level.
ProbeRequest machine_probe_request(bool force = false);

/// How load_or_probe got its result.
struct ProbeSource {
  std::optional<std::filesystem::path> file;  ///< the cache file (none: no cache dir)
  bool from_cache = false;                    ///< read, not measured
  bool written = false;                       ///< measured and saved to `file`
};

/// The cached probe of req.machine at req.isa, else a new measurement (then written to the
/// cache atomically: a temporary file renamed over it, so racing processes each leave a
/// whole file). A file of another fingerprint or level is ignored; a damaged one
/// (unreadable, not JSON, a field missing or mistyped) gets one stderr warning naming it
/// and why, in llmport's words, and is measured again; a directory in the file's place gets
/// one warning saying so and is never replaced (nothing written); a cache that cannot be written gets a
/// warning and the result serves this process only. Never throws for cache trouble.
KernelProbe load_or_probe(const ProbeRequest& req, ProbeSource* source = nullptr);

/// The probe the heuristic defaults read: load_or_probe(machine_probe_request()) once per
/// process at the first call; nullptr when probe_enabled() is false or the measurement
/// failed (warned once). Thread-safe.
const KernelProbe* machine_kernel_probe();

/// The probed value of `op`'s key for a backend at level `isa`: nullopt when probing is
/// off, the probe measured another level, or `op` was not probed.
std::optional<int> probed_choice(const std::string& op, const std::string& isa);

/// The decode GEMV weight prefetch hint of this machine (kPrefetchTileKey: 0 prefetcht1, 1
/// prefetchnta): the probe's "gemv bf16" choice whatever level runs (the hint is a property
/// of the memory system, measured with the best level's kernels), 0 without a probe. Inside
/// the probe's own measurement (same thread) it is 0 and probes nothing.
int probed_decode_prefetch();

}  // namespace llmport
