#include <flatbuffers/flatbuffers.h>

#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "storage/record_layouts.h"
#include "storage/trace_checksum.h"
#include "storage/trace_file.h"
#include "trace_generated.h"

namespace profkit {

namespace fb = profkit::schema;

namespace {

template <class Schema, class Record>
flatbuffers::Offset<flatbuffers::Vector<const Schema*>> struct_vector(flatbuffers::FlatBufferBuilder& b,
                                                                      const Column<Record>& column) {
  return b.CreateVectorOfStructs(reinterpret_cast<const Schema*>(column.data()), column.size());
}

size_t estimated_size(const Result& r) {
  size_t bytes = 4096;
  bytes += r.host_events.size() * sizeof(pk_host_event) + r.event_args.size() * sizeof(pk_event_arg);
  bytes += r.memory_events.size() * sizeof(pk_memory_event) + r.device_events.size() * sizeof(pk_device_event);
  bytes += r.kernel_details.size() * sizeof(pk_kernel_detail);
  bytes += r.memory_op_details.size() * sizeof(pk_memory_op_detail);
  for (size_t i = 0; i < r.strings.size(); ++i) bytes += r.strings.view(i).size() + 12;
  for (const ThreadRecord& t : r.threads) bytes += t.name.size() + 64;
  for (const auto& kv : r.metadata) bytes += kv.first.size() + kv.second.size() + 32;
  bytes += r.devices.size() * 128;
  return bytes;
}

}  // namespace

void save_result(const Result& r, const std::string& path) {
  const size_t estimate = estimated_size(r);
  // One FlatBuffer addresses at most 2 GiB.
  if (estimate >= FLATBUFFERS_MAX_BUFFER_SIZE - (1u << 20)) {
    throw Error(PK_ERR_TOO_LARGE,
                "cannot save '" + path + "': the result needs about " + std::to_string(estimate >> 20) +
                    " MiB, more than one trace file holds (2 GiB, about 80 M events); record shorter windows "
                    "(a scheduler with fewer steps) or export Chrome JSON instead");
  }
  flatbuffers::FlatBufferBuilder b(estimate);

  std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
  strings.reserve(r.strings.size());
  for (size_t i = 0; i < r.strings.size(); ++i) {
    const std::string_view s = r.strings.view(i);
    strings.push_back(b.CreateString(s.data(), s.size()));
  }
  const auto strings_vec = b.CreateVector(strings);

  std::vector<flatbuffers::Offset<fb::Thread>> threads;
  for (const ThreadRecord& t : r.threads) {
    threads.push_back(fb::CreateThread(b, t.tid, b.CreateString(t.name), t.first_event, t.event_count));
  }
  const auto threads_vec = b.CreateVector(threads);

  std::vector<flatbuffers::Offset<fb::Device>> devices;
  for (const DeviceInfo& d : r.devices) {
    devices.push_back(fb::CreateDevice(b, d.id, b.CreateString(d.name), d.sm_count, d.compute_major, d.compute_minor,
                                       d.total_memory, d.max_threads_per_sm, d.max_registers_per_sm,
                                       d.max_shared_memory_per_sm, d.max_blocks_per_sm, d.warp_size));
  }
  const auto devices_vec = b.CreateVector(devices);

  std::vector<flatbuffers::Offset<fb::KeyValue>> extra;
  for (const auto& kv : r.metadata) {
    extra.push_back(fb::CreateKeyValue(b, b.CreateString(kv.first), b.CreateString(kv.second)));
  }
  const auto extra_vec = b.CreateVector(extra);

  const ResultInfo& i = r.info;
  const auto metadata = fb::CreateMetadata(
      b, b.CreateString(i.profkit_version), b.CreateString(i.hostname), i.pid, i.rank, i.world_size, i.span_index,
      i.start_ns, i.end_ns, i.clock_offset_ns, i.dropped_events, i.unmatched_ends, i.overflowed_events,
      i.unfinished_events, i.dropped_device_records, i.unattached_device_records, i.process_cpu_ns, i.system_busy_ns,
      i.system_idle_ns, i.cpu_count, extra_vec, i.lost_event_args);

  const auto host = struct_vector<fb::HostEvent>(b, r.host_events);
  const auto args = struct_vector<fb::EventArg>(b, r.event_args);
  const auto memory = struct_vector<fb::MemoryEvent>(b, r.memory_events);
  const auto device = struct_vector<fb::DeviceEvent>(b, r.device_events);
  const auto kernels = struct_vector<fb::KernelDetail>(b, r.kernel_details);
  const auto memops = struct_vector<fb::MemoryOpDetail>(b, r.memory_op_details);

  // The checksum is stored even while it is 0, so that sealing can fill it
  // in place once the buffer is finished.
  b.ForceDefaults(true);
  const auto trace = fb::CreateTrace(b, kSchemaVersion, kMinReaderVersion, metadata, strings_vec, threads_vec, host,
                                     args, memory, device, kernels, memops, devices_vec, /*checksum=*/0);
  b.ForceDefaults(false);
  // Size-prefixed, so a reader can tell a truncated file from a whole one.
  fb::FinishSizePrefixedTraceBuffer(b, trace);
  if (!seal_trace_checksum(b.GetBufferPointer(), b.GetSize())) {
    throw Error(PK_ERR_INTERNAL, "cannot save '" + path + "': the trace was built without its checksum field");
  }

  AtomicFileWriter out(path);
  out.write(b.GetBufferPointer(), b.GetSize());
  out.commit();
}

}  // namespace profkit
