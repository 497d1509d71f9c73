// Cost of the hot path through the C ABI: pk_begin_event + pk_end_event per
// pair, recording and not recording, on 1 and 2 threads; past the memory cap;
// the string-name variant; and the thread writer's inline macros (1.17).
// Each recording run is a fixed number of pairs so memory stays bounded (24
// bytes a pair) and nothing is dropped.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "profkit/profkit.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace {

// PROFKIT_BENCH_SMOKE (CI) runs a token amount, to prove the programs work.
const int64_t kPairs = std::getenv("PROFKIT_BENCH_SMOKE") != nullptr ? 30'000 : 5'000'000;

void start_recording(benchmark::State& state) {
  if (state.thread_index() == 0) {
    pk_set_memory_cap(4ull << 30);
    pk_set_state(PK_STATE_RECORD);
  }
}

// READY between repetitions, as a scheduler between windows: buffers are
// recycled, so repetitions after the first measure the steady state.
void stop_recording(benchmark::State& state) {
  if (state.thread_index() == 0) {
    pk_set_state(PK_STATE_READY);
    pk_result* r = nullptr;
    pk_collect(&r);
    size_t n = 0;
    pk_result_host_events(r, &n);
    pk_result_info info{};
    info.struct_size = sizeof info;
    pk_result_get_info(r, &info);
    state.counters["dropped"] = static_cast<double>(info.dropped_events);
    pk_result_release(r);
  }
}

void BM_BeginEnd_Recording(benchmark::State& state) {
  const pk_name_id name = pk_intern("aten::add");
  start_recording(state);
  for (auto _ : state) {
    pk_begin_event(name, PK_EVENT_OPERATOR);
    pk_end_event();
  }
  stop_recording(state);
}
BENCHMARK(BM_BeginEnd_Recording)->Iterations(kPairs)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_BeginEnd_Recording)->Iterations(kPairs)->Threads(2)->Repetitions(5)->ReportAggregatesOnly(true);

// The same pairs through PK_BEGIN_EVENT_INLINE / PK_END_EVENT_INLINE: the
// writer's code in the caller, no call into libprofkit. In a loop this tight
// both are the two clock reads; the difference is the call and the
// library's code lines, which matter where a framework's work evicts them.
void BM_BeginEndInline_Recording(benchmark::State& state) {
  const pk_name_id name = pk_intern("aten::add");
  start_recording(state);
  for (auto _ : state) {
    PK_BEGIN_EVENT_INLINE(name, PK_EVENT_OPERATOR);
    PK_END_EVENT_INLINE();
  }
  stop_recording(state);
}
BENCHMARK(BM_BeginEndInline_Recording)->Iterations(kPairs)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_BeginEnd_NotRecording(benchmark::State& state) {
  const pk_name_id name = pk_intern("aten::add");
  pk_set_state(PK_STATE_CLOSED);
  for (auto _ : state) {
    pk_begin_event(name, PK_EVENT_OPERATOR);
    pk_end_event();
  }
}
BENCHMARK(BM_BeginEnd_NotRecording)->Repetitions(5)->ReportAggregatesOnly(true);

// The call-free form a hook gets from PK_BEGIN_EVENT / PK_END_EVENT.
void BM_BeginEndMacro_NotRecording(benchmark::State& state) {
  const pk_name_id name = pk_intern("aten::add");
  pk_set_state(PK_STATE_CLOSED);
  for (auto _ : state) {
    PK_BEGIN_EVENT(name, PK_EVENT_OPERATOR);
    PK_END_EVENT();
  }
}
BENCHMARK(BM_BeginEndMacro_NotRecording)->Repetitions(5)->ReportAggregatesOnly(true);

#if defined(__x86_64__)
// The engine's tick source alone: a recorded pair reads it twice, so this is
// the floor of BM_BeginEnd_Recording on the machine at hand.
void BM_TscPair(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(__rdtsc());
    benchmark::DoNotOptimize(__rdtsc());
  }
}
BENCHMARK(BM_TscPair)->Repetitions(5)->ReportAggregatesOnly(true);
#endif

void BM_BeginEndStr_Recording(benchmark::State& state) {
  start_recording(state);
  for (auto _ : state) {
    pk_begin_event_str("aten::convolution_backward", PK_EVENT_OPERATOR);
    pk_end_event();
  }
  stop_recording(state);
}
BENCHMARK(BM_BeginEndStr_Recording)->Iterations(kPairs)->Repetitions(5)->ReportAggregatesOnly(true);

// Past the memory cap: every pair is dropped (and counted). A framework keeps
// calling at full rate after the cap is reached, so this path must stay cheap
// and must not serialize threads (before 2026-11-22 each drop took the chunk
// pool's mutex).
void BM_BeginEnd_PastCap(benchmark::State& state) {
  const pk_name_id name = pk_intern("aten::add");
  if (state.thread_index() == 0) {
    // Closing and collecting frees the spare chunks earlier runs left, which
    // would otherwise take the records under any cap.
    pk_set_state(PK_STATE_CLOSED);
    pk_result* r = nullptr;
    if (pk_collect(&r) == PK_OK) pk_result_release(r);
    pk_set_memory_cap(256 * 1024);  // the least the engine takes: one chunk
    pk_set_state(PK_STATE_RECORD);
  }
  for (auto _ : state) {
    pk_begin_event(name, PK_EVENT_OPERATOR);
    pk_end_event();
  }
  stop_recording(state);
}
BENCHMARK(BM_BeginEnd_PastCap)->Iterations(kPairs)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_BeginEnd_PastCap)->Iterations(kPairs)->Threads(2)->Repetitions(5)->ReportAggregatesOnly(true);

// Three nested levels per iteration, as a framework's op/kernel/inner stack.
void BM_Nested3_Recording(benchmark::State& state) {
  const pk_name_id a = pk_intern("Forward");
  const pk_name_id b = pk_intern("aten::linear");
  const pk_name_id c = pk_intern("aten::addmm");
  start_recording(state);
  for (auto _ : state) {
    pk_begin_event(a, PK_EVENT_FORWARD);
    pk_begin_event(b, PK_EVENT_OPERATOR);
    pk_begin_event(c, PK_EVENT_OPERATOR_INNER);
    pk_end_event();
    pk_end_event();
    pk_end_event();
  }
  stop_recording(state);
}
BENCHMARK(BM_Nested3_Recording)->Iterations(kPairs / 3)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
