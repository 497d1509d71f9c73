// Synthetic CUPTI activity buffers for tests and benchmarks: records are the
// real structs of the CUPTI headers profkit is built with, laid out one after
// the other on 8-byte boundaries, and walked by a stand-in for
// cuptiActivityGetNextRecord that knows each kind's record size.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cupti/record_decoder.h"

namespace profkit_test {

using profkit::cupti::ApiRecord;
using profkit::cupti::KernelRecord;
using profkit::cupti::MemcpyRecord;
using profkit::cupti::MemsetRecord;

// The bytes one record of `kind` takes in a synthetic buffer; 0 for a kind
// the helpers do not build.
inline size_t synthetic_record_size(CUpti_ActivityKind kind) {
  size_t size = 0;
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      size = sizeof(KernelRecord);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      size = sizeof(MemcpyRecord);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      size = sizeof(MemsetRecord);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      size = sizeof(ApiRecord);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      size = sizeof(CUpti_ActivityMarker2);
      break;
    default:
      return 0;
  }
  return (size + 7) / 8 * 8;
}

// cuptiActivityGetNextRecord over a synthetic buffer.
inline CUptiResult synthetic_next_record(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    const size_t size = synthetic_record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + size;
  }
  if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = synthetic_record_size(next->kind);
  if (size == 0 || offset + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

// Zero-initialized records with the fields a test cares about.
inline KernelRecord kernel_record(const char* name, uint64_t start, uint64_t end, uint32_t correlation,
                                  uint32_t stream = 7, uint32_t device = 0) {
  KernelRecord k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.start = start;
  k.end = end;
  k.correlationId = correlation;
  k.streamId = stream;
  k.deviceId = device;
  k.contextId = 1;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = k.blockY = k.blockZ = 1;
  return k;
}

inline MemcpyRecord memcpy_record(uint8_t copy_kind, uint64_t bytes, uint64_t start, uint64_t end, uint32_t correlation,
                                  uint32_t stream = 13) {
  MemcpyRecord m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.correlationId = correlation;
  m.streamId = stream;
  m.contextId = 1;
  return m;
}

inline MemsetRecord memset_record(uint64_t bytes, uint32_t value, uint64_t start, uint64_t end, uint32_t correlation,
                                  uint32_t stream = 13) {
  MemsetRecord m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.bytes = bytes;
  m.value = value;
  m.start = start;
  m.end = end;
  m.correlationId = correlation;
  m.streamId = stream;
  m.contextId = 1;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

inline ApiRecord api_record(uint32_t cbid, uint64_t start, uint64_t end, uint32_t correlation, uint32_t tid,
                            bool driver = false) {
  ApiRecord a;
  std::memset(&a, 0, sizeof a);
  a.kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.correlationId = correlation;
  a.threadId = tid;
  a.processId = 1;
  return a;
}

// A buffer of records, 8-byte aligned like CUPTI's.
class SyntheticBuffer {
 public:
  template <class Record>
  void add(const Record& record) {
    const size_t size = synthetic_record_size(reinterpret_cast<const CUpti_Activity&>(record).kind);
    const size_t offset = bytes_.size() * 8;
    bytes_.resize(bytes_.size() + size / 8);
    std::memcpy(reinterpret_cast<uint8_t*>(bytes_.data()) + offset, &record, sizeof(Record));
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(bytes_.data()); }
  size_t size() const { return bytes_.size() * 8; }
  void clear() { bytes_.clear(); }

 private:
  std::vector<uint64_t> bytes_;  // uint64_t: 8-byte alignment
};

}  // namespace profkit_test
