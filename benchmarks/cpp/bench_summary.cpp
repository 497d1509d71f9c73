// All summary tables of a large Result: compute the rows of every view, and
// render them as text and as JSON. Reports the time per run and, as
// counters, the Result's own size and the peak memory the summary allocates
// on top of it (every operator new in this program is counted).
//
// The Result models a training loop: 8 threads; per iteration a Forward
// range holding two operators (one with an inner event that launches a
// kernel, one that launches a memcpy) and a user range; steps on thread 0;
// 50 operator names. The Memory table's own benchmark adds four memory
// events per iteration (an allocation in each operator, both freed in the
// user range). PROFKIT_BENCH_EVENTS sets the number of host events (default
// 10 M); PROFKIT_BENCH_SMOKE=1 caps it at 100 k for CI.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "summary/json_writer.h"
#include "summary/summary.h"
#include "summary/text_renderer.h"
#include "trace/result_builder.h"

// ---- allocation accounting ---------------------------------------------------
namespace {
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void* counted_alloc(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const int64_t live =
      g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) + static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}
void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
}  // namespace

void* operator new(size_t n) { return counted_alloc(n); }
void* operator new[](size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }

namespace {

uint64_t event_count() {
  const char* env = std::getenv("PROFKIT_BENCH_EVENTS");
  uint64_t n = env != nullptr ? std::strtoull(env, nullptr, 10) : 10'000'000ull;
  if (std::getenv("PROFKIT_BENCH_SMOKE") != nullptr) n = std::min<uint64_t>(n, 100'000);
  return std::max<uint64_t>(n, 64);
}

constexpr uint64_t kThreads = 8;
constexpr uint64_t kHostEventsPerIteration = 7;  // Forward, 2 operators, inner, 2 runtime calls, user range
constexpr uint64_t kIterationsPerStep = 100;

std::unique_ptr<profkit::Result> make_result(bool with_memory) {
  profkit::ResultBuilder b({});
  b.add_string("");
  uint32_t ops[50];
  for (int i = 0; i < 50; ++i) ops[i] = b.add_string("aten::operator_number_" + std::to_string(i));
  const uint32_t forward = b.add_string("forward");
  const uint32_t inner = b.add_string("compute");
  const uint32_t launch = b.add_string("cudaLaunchKernel");
  const uint32_t copy = b.add_string("cudaMemcpyAsync");
  const uint32_t user = b.add_string("my_range");
  const uint32_t kernel = b.add_string("void gemm_kernel<float, 128>(float const*, float*, int)");
  const uint32_t memcpy_name = b.add_string("Memcpy DtoD");
  std::vector<uint32_t> steps;
  const uint64_t iterations = event_count() / kThreads / kHostEventsPerIteration;
  for (uint64_t s = 0; s * kIterationsPerStep < iterations; ++s) {
    steps.push_back(b.add_string("ProfileStep#" + std::to_string(s)));
  }
  uint32_t correlation = 1;
  for (uint64_t t = 0; t < kThreads; ++t) {
    const uint32_t thread = b.thread(1000 + t);
    for (uint64_t i = 0; i < iterations; ++i) {
      const uint64_t ts = 1'000'000 + i * 1000;
      if (t == 0 && i % kIterationsPerStep == 0) {
        b.add_event(thread,
                    {ts, ts + kIterationsPerStep * 1000, steps[i / kIterationsPerStep], PK_EVENT_PROFILE_STEP, 0, 0});
      }
      b.add_event(thread, {ts, ts + 900, forward, PK_EVENT_FORWARD, 0, 0});
      b.add_event(thread, {ts + 10, ts + 400, ops[i % 50], PK_EVENT_OPERATOR, 1, 0});
      b.add_event(thread, {ts + 20, ts + 300, inner, PK_EVENT_OPERATOR_INNER, 2, 0});
      b.add_runtime_call(thread, {ts + 30, ts + 40, launch, PK_EVENT_CUDA_RUNTIME, 3, 0}, correlation);
      b.add_device_event({ts + 50, ts + 250, 0, kernel, correlation++, static_cast<uint32_t>(t), 1, 0, PK_EVENT_KERNEL,
                          0, PK_NO_DETAIL});
      b.add_event(thread, {ts + 410, ts + 800, ops[(i + 7) % 50], PK_EVENT_OPERATOR, 1, 0});
      b.add_runtime_call(thread, {ts + 420, ts + 430, copy, PK_EVENT_CUDA_RUNTIME, 2, 0}, correlation);
      b.add_device_event({ts + 440, ts + 600, 0, memcpy_name, correlation++, static_cast<uint32_t>(t), 1, 0,
                          PK_EVENT_MEMCPY, 0, PK_NO_DETAIL});
      b.add_event(thread, {ts + 810, ts + 890, user, PK_EVENT_USER_DEFINED, 1, 0});
      if (with_memory) {
        const uint64_t address = (t << 40) + i * 8192;
        const int32_t device = static_cast<int32_t>(i % 2) - 1;  // CPU and GPU 0 in turn
        b.add_memory_event({ts + 15, address, 4096, 4096, 8192, thread, device});
        b.add_memory_event({ts + 415, address + 4096, 4096, 8192, 8192, thread, device});
        b.add_memory_event({ts + 820, address, -4096, 4096, 8192, thread, device});
        b.add_memory_event({ts + 830, address + 4096, -4096, 0, 8192, thread, device});
      }
    }
  }
  return b.finish();
}

const profkit::Result& big_result() {
  static std::unique_ptr<profkit::Result> result = make_result(false);
  return *result;
}

int64_t result_bytes(const profkit::Result& r) {
  return static_cast<int64_t>(r.host_events.size() * sizeof(pk_host_event) +
                              r.device_events.size() * sizeof(pk_device_event));
}

void report(benchmark::State& state, const profkit::Result& r, int64_t peak_extra) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * (r.host_events.size() + r.device_events.size())));
  state.counters["host_events"] = static_cast<double>(r.host_events.size());
  state.counters["device_events"] = static_cast<double>(r.device_events.size());
  state.counters["result_MB"] = static_cast<double>(result_bytes(r)) / 1e6;
  state.counters["peak_extra_MB"] = static_cast<double>(peak_extra) / 1e6;
}

// Every view: rows, text and JSON, as Profiler.summary() and summary_data do.
void BM_AllTables(benchmark::State& state) {
  const profkit::Result& r = big_result();
  int64_t peak_extra = 0;
  for (auto _ : state) {
    const int64_t base = g_live.load();
    g_peak.store(base);
    profkit::Summary s = profkit::compute_summary(r, profkit::SummaryOptions{});
    std::string text = profkit::render_summary_text(s);
    std::string json = profkit::render_summary_json(s);
    benchmark::DoNotOptimize(text.data());
    benchmark::DoNotOptimize(json.data());
    peak_extra = std::max(peak_extra, g_peak.load() - base);
  }
  report(state, r, peak_extra);
}
BENCHMARK(BM_AllTables)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// The same with thread_sep and without op_detail: the other paths.
void BM_AllTablesThreadSepNoDetail(benchmark::State& state) {
  const profkit::Result& r = big_result();
  profkit::SummaryOptions o;
  o.thread_sep = true;
  o.op_detail = false;
  int64_t peak_extra = 0;
  for (auto _ : state) {
    const int64_t base = g_live.load();
    g_peak.store(base);
    profkit::Summary s = profkit::compute_summary(r, o);
    std::string text = profkit::render_summary_text(s);
    benchmark::DoNotOptimize(text.data());
    peak_extra = std::max(peak_extra, g_peak.load() - base);
  }
  report(state, r, peak_extra);
}
BENCHMARK(BM_AllTablesThreadSepNoDetail)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// The Memory table alone, its rows per event included (op_detail on): each
// memory event is matched to the innermost event open on its thread.
void BM_MemoryTable(benchmark::State& state) {
  static std::unique_ptr<profkit::Result> r = make_result(true);
  profkit::SummaryOptions o;
  o.views = 1u << static_cast<int>(profkit::SummaryView::kMemory);
  int64_t peak_extra = 0;
  for (auto _ : state) {
    const int64_t base = g_live.load();
    g_peak.store(base);
    profkit::Summary s = profkit::compute_summary(*r, o);
    std::string text = profkit::render_summary_text(s);
    benchmark::DoNotOptimize(text.data());
    peak_extra = std::max(peak_extra, g_peak.load() - base);
  }
  report(state, *r, peak_extra);
  state.counters["memory_events"] = static_cast<double>(r->memory_events.size());
}
BENCHMARK(BM_MemoryTable)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
