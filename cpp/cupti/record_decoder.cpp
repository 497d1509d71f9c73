#include "cupti/record_decoder.h"

#include <algorithm>

namespace profkit::cupti {

namespace {

uint32_t non_negative(int32_t v) { return v < 0 ? 0u : static_cast<uint32_t>(v); }

bool no_timing(uint64_t start, uint64_t end) { return start == 0 && end == 0; }

// A GPU record CUPTI handed over before the work finished: a forced flush
// (cuptiActivityFlushAll(FLUSH_FORCED), done at the end of every window)
// returns buffers "including the ones which have one or more incomplete
// activity records" (cupti_activity.h), and a kernel still running then comes
// with its end missing (0) and is never delivered again. Its start may be
// real; its duration is unknown, so it is kept without timing rather than
// as a kernel that took no time.
bool incomplete(uint64_t start, uint64_t end) { return end < start; }

// Whether a record starting at `start` (0 = no timing) is kept.
bool accepted(const DecodeFilter& f, uint64_t start, uint64_t end) {
  return f.accepting && (no_timing(start, end) || start >= f.accept_from_ns);
}

pk_device_event device_event(const DecodeFilter& f, uint8_t type, uint64_t start, uint64_t end, uint32_t device,
                             uint32_t context, uint32_t stream, uint32_t correlation, DecodeStats* stats) {
  if (incomplete(start, end)) {
    ++stats->incomplete;
    start = end = 0;  // placed at its launch call, flagged PK_DEVICE_EVENT_NO_TIMING
  }
  pk_device_event e{};
  e.start_ns = start;
  e.end_ns = end;
  e.launch_event = PK_NO_EVENT;
  e.correlation_id = correlation;
  e.stream = stream;
  e.context = context;
  e.device = static_cast<uint16_t>(device);  // at most kMaxDeviceId (known_device)
  e.type = type;
  e.flags = 0;
  if (no_timing(start, end)) e.flags |= PK_DEVICE_EVENT_NO_TIMING;
  if (f.window_open) e.flags |= kDeviceEventArrivedInWindow;
  e.detail = PK_NO_DETAIL;
  return e;
}

// Whether a GPU record's device is one the Result can show (kMaxDeviceId).
// A record of another is dropped and counted, in the store too, so that the
// Result says records are missing.
bool known_device(uint32_t device, ActivityStore* store, DecodeStats* stats) {
  if (device <= kMaxDeviceId) return true;
  ++stats->bad_device;
  store->add_dropped(1);
  return false;
}

void count_filtered(const DecodeFilter& f, DecodeStats* stats) {
  ++(f.accepting ? stats->before_window : stats->not_accepted);
}

template <class Record>
const Record& as(const CUpti_Activity* r) {
  return *reinterpret_cast<const Record*>(r);
}

}  // namespace

LaunchShape launch_shape(const KernelRecord& k) noexcept {
  LaunchShape s;
  s.grid[0] = non_negative(k.gridX);
  s.grid[1] = non_negative(k.gridY);
  s.grid[2] = non_negative(k.gridZ);
  s.block[0] = non_negative(k.blockX);
  s.block[1] = non_negative(k.blockY);
  s.block[2] = non_negative(k.blockZ);
  s.registers_per_thread = k.registersPerThread;
  s.static_shared_memory = non_negative(k.staticSharedMemory);
  s.dynamic_shared_memory = non_negative(k.dynamicSharedMemory);
  s.shared_memory_executed = k.sharedMemoryExecuted;
  s.shared_memory_optin = k.shmemLimitConfig == CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  return s;
}

std::string_view memcpy_name(uint8_t copy_kind) noexcept {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "Memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "Memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "Memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "Memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "Memcpy DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "Memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "Memcpy PtoP";
    default:
      return "Memcpy";
  }
}

uint32_t memcpy_correlation_id(const MemcpyRecord& m) noexcept {
  // correlationId matches the driver call; runtimeCorrelationId the runtime
  // call around it, which is the one traced when the copy came through the
  // runtime. Copies issued with the driver API directly have no runtime id.
  return m.runtimeCorrelationId != 0 ? m.runtimeCorrelationId : m.correlationId;
}

CUptiResult list_records(uint8_t* buffer, size_t valid_bytes, NextRecordFn next,
                         std::vector<const CUpti_Activity*>* out) {
  if (buffer == nullptr || valid_bytes == 0) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = next(buffer, valid_bytes, &record);
    if (status != CUPTI_SUCCESS) return status;
    out->push_back(record);
  }
}

namespace {

// What became of one record; a filtered one is counted where it is seen.
enum class Outcome { kFiltered, kKept, kDropped };

Outcome stored(bool kept) { return kept ? Outcome::kKept : Outcome::kDropped; }

Outcome filtered(const DecodeFilter& filter, DecodeStats* stats) {
  count_filtered(filter, stats);
  return Outcome::kFiltered;
}

Outcome decode_kernel(const KernelRecord& k, const DecodeFilter& filter, ActivityStore* store, DecodeStats* stats) {
  if (!accepted(filter, k.start, k.end)) return filtered(filter, stats);
  if (!known_device(k.deviceId, store, stats)) return Outcome::kDropped;
  pk_device_event e = device_event(filter, PK_EVENT_KERNEL, k.start, k.end, k.deviceId, k.contextId, k.streamId,
                                   k.correlationId, stats);
  e.name = store->kernel_name(k.name);
  return stored(store->add_kernel(e, launch_shape(k)));
}

Outcome decode_memcpy(const MemcpyRecord& m, const DecodeFilter& filter, ActivityStore* store, DecodeStats* stats) {
  if (!accepted(filter, m.start, m.end)) return filtered(filter, stats);
  if (!known_device(m.deviceId, store, stats)) return Outcome::kDropped;
  pk_device_event e = device_event(filter, PK_EVENT_MEMCPY, m.start, m.end, m.deviceId, m.contextId, m.streamId,
                                   memcpy_correlation_id(m), stats);
  e.name = store->intern_name(memcpy_name(m.copyKind));
  pk_memory_op_detail d{};
  d.bytes = m.bytes;
  d.copy_kind = m.copyKind;
  d.src_kind = m.srcKind;
  d.dst_kind = m.dstKind;
  return stored(store->add_memory_op(e, d));
}

Outcome decode_memset(const MemsetRecord& m, const DecodeFilter& filter, ActivityStore* store, DecodeStats* stats) {
  if (!accepted(filter, m.start, m.end)) return filtered(filter, stats);
  if (!known_device(m.deviceId, store, stats)) return Outcome::kDropped;
  pk_device_event e = device_event(filter, PK_EVENT_MEMSET, m.start, m.end, m.deviceId, m.contextId, m.streamId,
                                   m.correlationId, stats);
  e.name = store->intern_name("Memset");
  pk_memory_op_detail d{};
  d.bytes = m.bytes;
  d.value = m.value;
  d.dst_kind = static_cast<uint8_t>(std::min<uint16_t>(m.memoryKind, UINT8_MAX));
  return stored(store->add_memory_op(e, d));
}

Outcome decode_api_call(const ApiRecord& a, bool driver, const DecodeFilter& filter, ActivityStore* store,
                        DecodeStats* stats) {
  if (!accepted(filter, a.start, a.end)) return filtered(filter, stats);
  ApiCall c;
  c.start_ns = a.start;
  c.end_ns = std::max(a.start, a.end);
  c.tid = a.threadId;
  c.correlation_id = a.correlationId;
  c.name = store->api_name(driver, a.cbid);
  c.flags = driver ? kApiCallDriver : 0;
  return stored(store->add_api_call(c));
}

}  // namespace

void decode_record(const CUpti_Activity* record, const DecodeFilter& filter, ActivityStore* store, DecodeStats* stats) {
  ++stats->records;
  Outcome outcome = Outcome::kFiltered;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      outcome = decode_kernel(as<KernelRecord>(record), filter, store, stats);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      outcome = decode_memcpy(as<MemcpyRecord>(record), filter, store, stats);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      outcome = decode_memset(as<MemsetRecord>(record), filter, store, stats);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      outcome =
          decode_api_call(as<ApiRecord>(record), record->kind == CUPTI_ACTIVITY_KIND_DRIVER, filter, store, stats);
      break;
    default:
      ++stats->other_kinds;
      return;
  }
  if (outcome == Outcome::kKept) ++stats->kept;
  if (outcome == Outcome::kDropped) ++stats->dropped;
}

void append_runtime_correlation_ids(const std::vector<const CUpti_Activity*>& records, std::vector<uint32_t>* out) {
  for (const CUpti_Activity* r : records) {
    if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) out->push_back(as<ApiRecord>(r).correlationId);
  }
}

DecodeStats decode_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, const DecodeFilter& filter,
                          ActivityStore* store) {
  std::vector<const CUpti_Activity*> records;
  const CUptiResult status = list_records(buffer, valid_bytes, next, &records);
  DecodeStats stats;
  for (const CUpti_Activity* r : records) decode_record(r, filter, store, &stats);
  if (status != CUPTI_ERROR_MAX_LIMIT_REACHED) {
    store->add_dropped(1);
    ++stats.dropped;
  }
  return stats;
}

}  // namespace profkit::cupti
