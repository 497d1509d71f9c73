// Decoding CUPTI activity records into the ActivityStore.
//
// Records are read with the struct versions of the CUPTI headers profkit is
// built with (CUDA 13.0: CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
// CUpti_ActivityMemset4, CUpti_ActivityAPI). The tracer checks at run time
// that the loaded libcupti writes those versions (cupti_version_problem).
//
// Decoding is a pure function of the record bytes and the filter, so the
// unit tests feed it synthetic buffers built from the real structs; no GPU.
// Walking a buffer goes through a NextRecordFn (cuptiActivityGetNextRecord in
// the tracer, a fake in tests), kept apart from decoding so the tracer can
// walk a buffer without holding the store's lock.
//
// Thread-safety: the functions are reentrant; the store is the caller's to
// guard.
#pragma once

#include <cupti_activity.h>
#include <cupti_version.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "cupti/activity_store.h"
#include "cupti/occupancy.h"

namespace profkit::cupti {

// The record versions of the CUPTI this build compiles against.
#if CUPTI_API_VERSION >= 130300
using KernelRecord = CUpti_ActivityKernel12;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#elif CUPTI_API_VERSION >= 130100
using KernelRecord = CUpti_ActivityKernel11;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#elif CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#elif CUPTI_API_VERSION >= 26  // CUDA 12.8
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy6;
#elif CUPTI_API_VERSION >= 19  // CUDA 12.0
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy5;
#else
#error "profkit needs the CUPTI headers of CUDA 12.0 or later"
#endif
using MemsetRecord = CUpti_ActivityMemset4;
using ApiRecord = CUpti_ActivityAPI;

// What to keep while decoding.
struct DecodeFilter {
  bool accepting = false;       // false: a recording has not begun; keep nothing
  uint64_t accept_from_ns = 0;  // keep records that start at or after this
  bool window_open = false;     // a recording window is open now
};

struct DecodeStats {
  uint64_t records = 0;        // records seen
  uint64_t kept = 0;           // added to the store
  uint64_t not_accepted = 0;   // no recording has begun (warm-up)
  uint64_t before_window = 0;  // started before the recording window
  uint64_t other_kinds = 0;    // kinds the tracer does not decode
  uint64_t dropped = 0;        // lost: the store's record cap, an unreadable buffer end, bad_device
  uint64_t incomplete = 0;     // GPU records flushed before the work ended (end missing): kept untimed
  uint64_t bad_device = 0;     // GPU records naming a device past kMaxDeviceId (also in `dropped`)
};

// The highest CUDA device ordinal (CUPTI's deviceId) whose GPU records are
// kept. pk_device_event holds 16 bits of it, and a Chrome trace puts GPU d of
// process p on pid p + 10000000 * (d + 1) (export/chrome_trace.h), which
// Perfetto reads as 32 bits: that holds for every Linux pid (below 2^22) up
// to device 428, far past the devices of any machine. A record naming a
// higher one is damaged; it is dropped and counted (bad_device, and the
// Result's dropped_device_records) rather than shown on another device.
constexpr uint32_t kMaxDeviceId = 428;

using NextRecordFn = CUptiResult (*)(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);

// Lists the records of a buffer in order. Returns the status that ended the
// walk: CUPTI_ERROR_MAX_LIMIT_REACHED at the normal end; anything else means
// the rest of the buffer could not be read (an incomplete record).
CUptiResult list_records(uint8_t* buffer, size_t valid_bytes, NextRecordFn next,
                         std::vector<const CUpti_Activity*>* out);

// Decodes one record into `store`.
void decode_record(const CUpti_Activity* record, const DecodeFilter& filter, ActivityStore* store, DecodeStats* stats);

// Appends the correlation ids of the runtime API records among `records`
// (kept or not: a launch inside one is that call's, whatever became of it).
void append_runtime_correlation_ids(const std::vector<const CUpti_Activity*>& records, std::vector<uint32_t>* out);

// Both steps for a whole buffer; an unreadable rest counts as one dropped record.
DecodeStats decode_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, const DecodeFilter& filter,
                          ActivityStore* store);

// Field helpers, exposed for tests.
LaunchShape launch_shape(const KernelRecord& kernel) noexcept;
// "Memcpy HtoD", "Memcpy DtoD", ... for a CUpti_ActivityMemcpyKind.
std::string_view memcpy_name(uint8_t copy_kind) noexcept;
// The correlation id that ties a memcpy to the runtime call that issued it.
uint32_t memcpy_correlation_id(const MemcpyRecord& memcpy) noexcept;

}  // namespace profkit::cupti
