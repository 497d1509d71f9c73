// Throughput of the downstream paths on a large Result: Chrome export, folded stacks, save
// (FlatBuffers), load with verification, and loading the Chrome JSON back. Events per second are reported as
// items_per_second. PROFKIT_BENCH_EVENTS sets the size (default 10 M).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "export/chrome_trace.h"
#include "export/chrome_trace_reader.h"
#include "export/folded_stacks.h"
#include "profkit/profkit.h"
#include "storage/trace_file.h"
#include "trace/result_builder.h"

namespace {

uint64_t event_count() {
  const char* env = std::getenv("PROFKIT_BENCH_EVENTS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 10'000'000ull;
}

std::string scratch(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/profkit_bench_" + std::to_string(getpid()) + "_" + name;
}

// 8 threads of operator trees three deep, 50 distinct names.
const profkit::Result& big_result() {
  static std::unique_ptr<profkit::Result> result = [] {
    profkit::ResultBuilder b({});
    b.add_string("");
    uint32_t names[50];
    for (int i = 0; i < 50; ++i) names[i] = b.add_string("aten::operator_number_" + std::to_string(i));
    const uint64_t total = event_count();
    for (uint64_t t = 0; t < 8; ++t) {
      const uint32_t thread = b.thread(1000 + t);
      uint64_t ts = 1'000'000;
      for (uint64_t i = 0; i < total / 8 / 3; ++i) {
        b.add_event(thread, {ts, ts + 900, names[i % 50], PK_EVENT_FORWARD, 0, 0});
        b.add_event(thread, {ts + 10, ts + 800, names[(i + 1) % 50], PK_EVENT_OPERATOR, 1, 0});
        b.add_event(thread, {ts + 20, ts + 700, names[(i + 2) % 50], PK_EVENT_OPERATOR_INNER, 2, 0});
        ts += 1000;
      }
    }
    return b.finish();
  }();
  return *result;
}

void BM_ExportChrome(benchmark::State& state) {
  const profkit::Result& r = big_result();
  const std::string path = scratch("export.trace.json");
  for (auto _ : state) profkit::export_chrome_trace(r, path, profkit::ChromeOptions{});
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.host_events.size()));
  std::remove(path.c_str());
}
BENCHMARK(BM_ExportChrome)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// Folded stacks: one path lookup per event; 50 names three deep give few
// distinct stacks, so this is the walk's cost rather than the text's.
void BM_ExportStacks(benchmark::State& state) {
  const profkit::Result& r = big_result();
  const std::string path = scratch("export.stacks");
  for (auto _ : state) profkit::export_folded_stacks(r, path, profkit::StacksMetric::kSelfCpu);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.host_events.size()));
  std::remove(path.c_str());
}
BENCHMARK(BM_ExportStacks)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_Save(benchmark::State& state) {
  const profkit::Result& r = big_result();
  const std::string path = scratch("save.pktrace");
  for (auto _ : state) profkit::save_result(r, path);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.host_events.size()));
  std::remove(path.c_str());
}
BENCHMARK(BM_Save)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_LoadVerified(benchmark::State& state) {
  const profkit::Result& r = big_result();
  const std::string path = scratch("load.pktrace");
  profkit::save_result(r, path);
  uint64_t events = 0;
  for (auto _ : state) {
    auto loaded = profkit::load_result(path);  // maps, verifies, checks every event
    events = loaded->host_events.size();
    benchmark::DoNotOptimize(events);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  std::remove(path.c_str());
}
BENCHMARK(BM_LoadVerified)->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

void BM_LoadChromeJson(benchmark::State& state) {
  const profkit::Result& r = big_result();
  const std::string path = scratch("load.trace.json");
  profkit::export_chrome_trace(r, path, profkit::ChromeOptions{});
  uint64_t events = 0;
  for (auto _ : state) {
    auto loaded = profkit::read_chrome_trace(path);  // parses, rebuilds, checks the counts
    events = loaded->host_events.size();
    benchmark::DoNotOptimize(events);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events));
  std::remove(path.c_str());
}
BENCHMARK(BM_LoadChromeJson)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// Collecting a large window: draining 4 threads' buffers, converting ticks,
// ordering and nesting each thread's events, building the Result.
void BM_Collect(benchmark::State& state) {
  const uint64_t per_thread = event_count() / 4 / 3;
  const pk_name_id names[3] = {pk_intern("outer"), pk_intern("middle"), pk_intern("inner")};
  pk_set_memory_cap(8ull << 30);
  uint64_t collected = 0;
  for (auto _ : state) {
    state.PauseTiming();
    pk_set_state(PK_STATE_RECORD);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (uint64_t i = 0; i < per_thread; ++i) {
          pk_begin_event(names[0], PK_EVENT_FORWARD);
          pk_begin_event(names[1], PK_EVENT_OPERATOR);
          pk_begin_event(names[2], PK_EVENT_OPERATOR_INNER);
          pk_end_event();
          pk_end_event();
          pk_end_event();
        }
      });
    }
    for (auto& th : threads) th.join();
    pk_set_state(PK_STATE_READY);
    state.ResumeTiming();
    pk_result* r = nullptr;
    pk_collect(&r);
    state.PauseTiming();
    size_t n = 0;
    pk_result_host_events(r, &n);
    collected += n;
    pk_result_release(r);
    state.ResumeTiming();
  }
  pk_set_state(PK_STATE_CLOSED);
  state.SetItemsProcessed(static_cast<int64_t>(collected));
}
BENCHMARK(BM_Collect)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
