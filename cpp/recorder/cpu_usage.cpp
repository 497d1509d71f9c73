#include "recorder/cpu_usage.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace profkit {

CpuSnapshot take_cpu_snapshot() noexcept {
  CpuSnapshot s;
  timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0) {
    s.process_cpu_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return s;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const int fields = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                                 &iowait, &irq, &softirq, &steal);
  std::fclose(f);
  if (fields < 4) return s;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return s;
  const uint64_t ns_per_tick = 1000000000ull / static_cast<uint64_t>(ticks_per_second);
  s.system_busy_ns = (user + nice + system + irq + softirq + steal) * ns_per_tick;
  s.system_idle_ns = (idle + iowait) * ns_per_tick;
  return s;
}

uint32_t online_cpu_count() noexcept {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

}  // namespace profkit
