// CPU time snapshots for the Device summary's CPU utilization figures.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>

namespace profkit {

struct CpuSnapshot {
  uint64_t process_cpu_ns = 0;  // user + system time of this process
  uint64_t system_busy_ns = 0;  // all CPUs, from /proc/stat
  uint64_t system_idle_ns = 0;  // idle + iowait
};

CpuSnapshot take_cpu_snapshot() noexcept;
uint32_t online_cpu_count() noexcept;

}  // namespace profkit
