#pragma once
// This machine's last-level cache as the kernel probe needs it: a set of weights must be
// several times all the L3 its threads can hit in, and on CPUs with several L3 domains
// (chiplets) that is the sum of the domains', not the one L3 that sysconf reports.
#include <cstddef>
#include <filesystem>
#include <span>

namespace llmport::cpu {

/// Bytes of L3 over the distinct L3 domains of `cpus`, from sysfs under `root` (normally
/// /sys/devices/system/cpu): cpuN/cache/indexI/level == 3, its `size` ("32768K", also
/// "M"/"G" or plain bytes) counted once per `id` (or per `shared_cpu_list` where the kernel
/// has no id). 0 when no L3 of these CPUs is readable. Never throws.
std::size_t l3_bytes_of(const std::filesystem::path& root, std::span<const int> cpus);

/// l3_bytes_of the CPUs this process may run on (sched_getaffinity); where sysfs says
/// nothing, sysconf(_SC_LEVEL3_CACHE_SIZE); 0 when neither knows.
std::size_t l3_bytes_this_process();

}  // namespace llmport::cpu
