// The kernel-path probe of this process: the environment switches (LLMPORT_PROBE,
// LLMPORT_PROBE_CACHE), this machine's request, and the one probe the heuristic defaults
// read, made at the first call that needs it (commands that never ask pay nothing).
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/data_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/kernel_probe.hpp"

namespace llmport {

bool probe_enabled() {
  const char* v = std::getenv("LLMPORT_PROBE");
  if (!v || !*v) return true;
  const std::string s = v;
  if (s == "0" || s == "off") return false;
  if (s == "1" || s == "on") return true;
  throw UsageError("LLMPORT_PROBE=" + s + ": expected 0, off, 1 or on");
}

std::optional<std::filesystem::path> probe_cache_dir() {
  if (const char* d = std::getenv("LLMPORT_PROBE_CACHE"); d && *d) {
    // " " would be a directory named " " in the working directory, never what was meant.
    if (std::string(d).find_first_not_of(" \t\n\r\f\v") == std::string::npos)
      throw UsageError("LLMPORT_PROBE_CACHE='" + std::string(d) + "': whitespace-only path (unset it or name a directory)");
    return std::filesystem::path(d);
  }
  try {
    // Beside the user registry: $XDG_DATA_HOME/llmport/{registry,probe}.
    return user_registry_dir().parent_path() / "probe";
  } catch (const UsageError&) {
    return std::nullopt;  // no HOME: measured again by every process
  }
}

ProbeRequest machine_probe_request(bool force) {
  ProbeRequest r;
  r.cache_dir = probe_cache_dir();
  r.machine = MachineFingerprint::current(1);
  r.isa = cpu::isa_name(cpu::detect_isa());
  r.force = force;
  return r;
}

namespace {
std::mutex g_mu;
bool g_done = false;  // the probe was loaded or measured (or failed) in this process
std::optional<KernelProbe> g_probe;
}  // namespace

void cpu::forget_machine_probe() {
  const std::lock_guard<std::mutex> lock(g_mu);
  g_done = false;
  g_probe.reset();
}

const KernelProbe* machine_kernel_probe() {
  if (!probe_enabled()) return nullptr;
  const std::lock_guard<std::mutex> lock(g_mu);
  if (!g_done) {
    g_done = true;
    try {
      g_probe = load_or_probe(machine_probe_request());
    } catch (const std::exception& e) {
      std::cerr << "warning: kernel probe failed (" << e.what() << "); ISA-flag default tile configs serve\n";
    }
  }
  return g_probe ? &*g_probe : nullptr;
}

int probed_decode_prefetch() {
  if (cpu::in_probe_measurement()) return 0;  // the probe's own linears: no probe within it
  const KernelProbe* p = machine_kernel_probe();
  if (!p) return 0;
  const auto it = p->chosen.find("gemv bf16");
  return it == p->chosen.end() ? 0 : it->second.value;
}

std::optional<int> probed_choice(const std::string& op, const std::string& isa) {
  const KernelProbe* p = machine_kernel_probe();
  if (!p || p->isa != isa) return std::nullopt;
  const auto it = p->chosen.find(op);
  if (it == p->chosen.end()) return std::nullopt;
  return it->second.value;
}

}  // namespace llmport
