// A small Result with every kind of record and hostile names, built with
// known values, for storage and export tests.
#pragma once

#include <memory>
#include <string>

#include "trace/result_builder.h"

namespace profkit_test {

inline std::unique_ptr<profkit::Result> make_sample_result() {
  profkit::ResultInfo info;
  info.profkit_version = "9.9.9";
  info.pid = 4242;
  info.hostname = "host-\"quoted\"";
  info.rank = 1;
  info.world_size = 2;
  info.span_index = 3;
  info.start_ns = 1000;
  info.end_ns = 90000;
  info.clock_offset_ns = 1700000000000000000;
  info.dropped_events = 5;
  info.unmatched_ends = 6;
  info.overflowed_events = 7;
  info.unfinished_events = 8;
  info.dropped_device_records = 9;
  info.process_cpu_ns = 11;
  info.system_busy_ns = 12;
  info.system_idle_ns = 13;
  info.cpu_count = 2;
  info.lost_event_args = 10;
  profkit::ResultBuilder b(info);
  b.add_string("");
  const uint32_t step = b.add_string("ProfileStep#3");
  const uint32_t hostile = b.add_string(std::string("q\"uote\\back\nnew\ttab\x01\x7f ") + "\xC3\xA9\xE2\x82\xAC" +
                                        "\xF0\x9F\x98\x80 bad:\xFF\xC0\xAF\xED\xA0\x80 end");
  const uint32_t op = b.add_string("aten::matmul");
  const uint32_t launch = b.add_string("cudaLaunchKernel");
  const uint32_t kernel = b.add_string("void gemm<float, 128>(float*, float const*)");
  const uint32_t memcpy_name = b.add_string("Memcpy HtoD");
  const uint32_t key = b.add_string("input_shapes");
  const uint32_t value = b.add_string("[[2, 3]]");
  const uint32_t main_thread = b.thread(11);
  b.set_thread_name(main_thread, "MainThread");
  const uint32_t worker = b.thread(12);
  b.add_event(main_thread, {1000, 80000, step, PK_EVENT_PROFILE_STEP, 0, 0});
  b.add_event(main_thread, {2000, 9000, hostile, PK_EVENT_PYTHON_USER_DEFINED, 1, 0});
  b.add_event(main_thread, {3000, 8000, op, PK_EVENT_OPERATOR, 2, 0});
  b.add_arg(main_thread, 3000, 2, key, PK_ARG_STRING, value);
  b.add_runtime_call(main_thread, {4000, 5000, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 501);
  b.add_runtime_call(main_thread, {6000, 6500, launch, PK_EVENT_CUDA_RUNTIME, 0, 0}, 502);
  b.add_event(main_thread, {7000, 7000, hostile, PK_EVENT_USER_DEFINED, 3, PK_HOST_EVENT_INSTANT});
  b.add_event(worker, {1500, 2500, op, PK_EVENT_DATALOADER, 0, 0});
  b.add_memory_event({4500, 0xdead, 1 << 20, 1 << 20, 2 << 20, main_thread, 0});
  pk_kernel_detail k{{4, 2, 1}, {128, 1, 1}, 32, 1024, 2048, 0.5f, 2.0f, 0.75f};
  b.add_device_event({10000, 20000, 0, kernel, 501, 7, 1, 0, PK_EVENT_KERNEL, 0, b.add_kernel_detail(k)});
  pk_memory_op_detail m{4096, 0, 1, 2, 3, 0};
  b.add_device_event({21000, 22000, 0, memcpy_name, 502, 13, 1, 0, PK_EVENT_MEMCPY, 0, b.add_memory_op_detail(m)});
  b.add_device_event({23000, 24000, 0, kernel, 999, 7, 1, 0, PK_EVENT_KERNEL, 0, PK_NO_DETAIL});
  profkit::DeviceInfo d;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.total_memory = 150ull << 30;
  d.max_threads_per_sm = 2048;
  d.max_registers_per_sm = 65536;
  d.max_shared_memory_per_sm = 233472;
  d.max_blocks_per_sm = 32;
  b.add_device(d);
  b.add_metadata("model", "tiny \"cnn\"");
  return b.finish();
}

}  // namespace profkit_test
