// Expectations shared by the tests that read a Result back from a file
// (.pktrace and Chrome JSON): every fact of its ResultInfo survives.
#pragma once

#include <gtest/gtest.h>

#include "trace/result.h"

namespace profkit_test {

// All of `a` and `b` but schema_version (a loaded .pktrace states the
// reader's; callers check it themselves).
inline void expect_same_info(const profkit::ResultInfo& a, const profkit::ResultInfo& b) {
  EXPECT_EQ(a.profkit_version, b.profkit_version);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.hostname, b.hostname);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.span_index, b.span_index);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.clock_offset_ns, b.clock_offset_ns);
  EXPECT_EQ(a.dropped_events, b.dropped_events);
  EXPECT_EQ(a.unmatched_ends, b.unmatched_ends);
  EXPECT_EQ(a.overflowed_events, b.overflowed_events);
  EXPECT_EQ(a.unfinished_events, b.unfinished_events);
  EXPECT_EQ(a.dropped_device_records, b.dropped_device_records);
  EXPECT_EQ(a.unattached_device_records, b.unattached_device_records);
  EXPECT_EQ(a.process_cpu_ns, b.process_cpu_ns);
  EXPECT_EQ(a.system_busy_ns, b.system_busy_ns);
  EXPECT_EQ(a.system_idle_ns, b.system_idle_ns);
  EXPECT_EQ(a.cpu_count, b.cpu_count);
  EXPECT_EQ(a.lost_event_args, b.lost_event_args);
}

}  // namespace profkit_test
