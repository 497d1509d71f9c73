// GPU activity on the host side, without a GPU: synthetic CUPTI buffers (the
// real record structs of the headers profkit builds with) streamed through the
// decoder in 4 MB buffers, as CUPTI would deliver them, then collected into a
// Result. Reports decode throughput and the host memory held after
// collection. PROFKIT_BENCH_EVENTS sets the number of GPU activities
// (default 1 M); each comes with its runtime launch call.
//
// The mix: 70 % kernels (300 distinct names, 40 launch shapes), 15 % memcpy,
// 15 % memset, on 4 streams, launched from 2 threads.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cupti/api_names.h"
#include "cupti/record_decoder.h"
#include "cupti_synthetic.h"
#include "trace/result_builder.h"

namespace {

using profkit::cupti::ActivityStore;
using profkit_test::SyntheticBuffer;

uint64_t activity_count() {
  const char* env = std::getenv("PROFKIT_BENCH_EVENTS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 1'000'000ull;
}

// Bytes of heap in use (glibc), small and large allocations.
size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

size_t resident_bytes() {
  long pages = 0;
  long resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

const std::vector<std::string>& kernel_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int i = 0; i < 300; ++i) {
      // Mangled like at::native kernels: void at::native::kernel_<i><128, 4>(int, float*)
      const std::string base = "kernel_" + std::to_string(i);
      out.push_back("_ZN2at6native" + std::to_string(base.size()) + base + "ILi128ELi4EEEviPf");
    }
    return out;
  }();
  return names;
}

// Calls `deliver` with 4 MB buffers holding `count` activities and their
// launch calls, timestamps increasing.
template <class Deliver>
void stream_activities(uint64_t count, Deliver deliver) {
  constexpr size_t kBufferBytes = 4u << 20;
  SyntheticBuffer buffer;
  const auto& names = kernel_names();
  uint64_t t = 1'000'000;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t correlation = static_cast<uint32_t>(i + 1);
    const uint32_t tid = 100 + static_cast<uint32_t>(i % 2);
    const uint32_t stream = 7 + static_cast<uint32_t>(i % 4);
    const uint64_t kind = i % 20;  // 14 kernels, 3 memcpys, 3 memsets in 20
    const uint32_t cbid = kind < 14 ? 211 : kind < 17 ? 41 : 51;
    buffer.add(profkit_test::api_record(cbid, t, t + 2'000, correlation, tid));
    if (kind < 14) {
      auto k = profkit_test::kernel_record(names[i % names.size()].c_str(), t + 5'000, t + 15'000, correlation, stream);
      k.gridX = 64 << (i % 8);
      k.blockX = 128 << (i % 5 % 3);
      k.registersPerThread = static_cast<uint16_t>(32 + 8 * (i % 5));
      buffer.add(k);
    } else if (kind < 17) {
      buffer.add(profkit_test::memcpy_record(1, 4096u << (i % 4), t + 5'000, t + 9'000, correlation, stream));
    } else {
      buffer.add(profkit_test::memset_record(4096, 0, t + 5'000, t + 6'000, correlation, stream));
    }
    t += 3'000;
    if (buffer.size() + 512 > kBufferBytes) {
      deliver(buffer);
      buffer.clear();
    }
  }
  if (buffer.size() > 0) deliver(buffer);
}

profkit::cupti::DecodeFilter recording() {
  profkit::cupti::DecodeFilter f;
  f.accepting = true;
  f.window_open = true;
  return f;
}

void BM_DecodeGpuActivity(benchmark::State& state) {
  const uint64_t count = activity_count();
  uint64_t records = 0;
  for (auto _ : state) {
    state.PauseTiming();  // building the synthetic buffers is not decoding
    ActivityStore store(profkit::cupti::api_display_name);
    stream_activities(count, [&](SyntheticBuffer& b) {
      state.ResumeTiming();
      const auto stats =
          profkit::cupti::decode_buffer(b.data(), b.size(), profkit_test::synthetic_next_record, recording(), &store);
      state.PauseTiming();
      records += stats.records;
    });
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_DecodeGpuActivity)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_CollectGpuActivity(benchmark::State& state) {
  const uint64_t count = activity_count();
  for (auto _ : state) {
    malloc_trim(0);
    const size_t heap_before = heap_in_use();
    const size_t rss_before = resident_bytes();
    auto store = std::make_unique<ActivityStore>(profkit::cupti::api_display_name);
    stream_activities(count, [&](SyntheticBuffer& b) {
      profkit::cupti::decode_buffer(b.data(), b.size(), profkit_test::synthetic_next_record, recording(), store.get());
    });
    const size_t store_bytes = store->memory_bytes();
    const size_t heap_decoded = heap_in_use();

    std::unique_ptr<profkit::Result> result;
    const auto collect_start = std::chrono::steady_clock::now();
    {  // as in Recorder::collect(): the builder is gone once the Result exists
      profkit::ResultInfo info;
      info.start_ns = 0;
      info.end_ns = UINT64_MAX / 2;
      profkit::ResultBuilder builder(info);
      builder.add_string("");
      profkit::cupti::CollectSpan span;
      span.start_ns = 0;
      span.end_ns = UINT64_MAX / 2;
      span.windows.push_back({0, UINT64_MAX});
      store->contribute(builder, span, {});
      result = builder.finish();
    }
    store.reset();
    const double collect_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - collect_start).count();
    malloc_trim(0);
    const size_t heap_after = heap_in_use();
    const size_t rss_after = resident_bytes();

    const profkit::Result& r = *result;
    const double mb = 1024.0 * 1024.0;
    const size_t device_bytes = r.device_events.size() * sizeof(pk_device_event) +
                                r.kernel_details.size() * sizeof(pk_kernel_detail) +
                                r.memory_op_details.size() * sizeof(pk_memory_op_detail);
    const size_t host_bytes = r.host_events.size() * sizeof(pk_host_event);
    state.counters["activities"] = static_cast<double>(r.device_events.size());
    state.counters["runtime_calls"] = static_cast<double>(r.host_events.size());
    state.counters["kernel_details"] = static_cast<double>(r.kernel_details.size());
    state.counters["result_gpu_MB"] = static_cast<double>(device_bytes) / mb;
    state.counters["result_calls_MB"] = static_cast<double>(host_bytes) / mb;
    state.counters["heap_after_collect_MB"] = static_cast<double>(heap_after - heap_before) / mb;
    state.counters["rss_after_collect_MB"] =
        rss_after > rss_before ? static_cast<double>(rss_after - rss_before) / mb : 0.0;
    state.counters["store_peak_MB"] = static_cast<double>(store_bytes) / mb;
    state.counters["collect_ms"] = collect_ms;  // contribute + finish, not decoding
    state.counters["heap_decoded_MB"] = static_cast<double>(heap_decoded - heap_before) / mb;
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * count));
}
BENCHMARK(BM_CollectGpuActivity)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
