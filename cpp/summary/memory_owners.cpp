#include "summary/memory_owners.h"

namespace profkit {

std::vector<uint64_t> memory_event_owners(const Result& r) {
  const size_t count = r.memory_events.size();
  std::vector<uint64_t> owners(count, PK_NO_EVENT);
  // Memory events are in time order; bucketing keeps that order per thread.
  std::vector<std::vector<uint64_t>> by_thread(r.threads.size());
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t thread = r.memory_events[i].thread;
    if (thread < by_thread.size()) by_thread[thread].push_back(i);
  }
  std::vector<uint64_t> open;  // indices into host_events: a chain of ancestors
  for (size_t t = 0; t < by_thread.size(); ++t) {
    const ThreadRecord& thread = r.threads[t];
    uint64_t next = thread.first_event;
    const uint64_t end = thread.first_event + thread.event_count;
    open.clear();
    auto close_before = [&](uint64_t ns) {
      while (!open.empty() && r.host_events[open.back()].end_ns < ns) open.pop_back();
    };
    for (const uint64_t m : by_thread[t]) {
      const uint64_t time = r.memory_events[m].time_ns;
      for (; next < end && r.host_events[next].start_ns <= time; ++next) {
        const pk_host_event& e = r.host_events[next];
        if ((e.flags & PK_HOST_EVENT_INSTANT) != 0) continue;
        close_before(e.start_ns);  // ended before this one began: not its ancestors
        open.push_back(next);
      }
      close_before(time);
      if (!open.empty()) owners[m] = open.back();
    }
  }
  return owners;
}

}  // namespace profkit
