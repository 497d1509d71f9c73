// CuptiApi: the CUPTI entry points the tracer uses, resolved with dlsym from
// a dlopen'd libcupti (profkit never links CUPTI), plus the version rules.
//
// Thread-safety: a loaded table is immutable. Ownership: the library handle
// is never closed.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace profkit::cupti {

struct CuptiApi {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) get_num_dropped_records = nullptr;
  decltype(&cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
  // GPU timestamps on the engine clock (without it CUPTI uses CLOCK_REALTIME).
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp_callback = nullptr;
  // Optional: absent from older CUPTIs; the tracer works without them.
  decltype(&cuptiActivityEnableRuntimeApi) enable_runtime_api = nullptr;
  // Callbacks on chosen calls (the driver's kernel launches: see CuptiTracer).
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;

  // CUPTI's own name for a result ("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES").
  std::string result_name(CUptiResult result) const;
};

// Resolves every entry point from `handle`; false with `error` naming the
// first required symbol that is missing.
bool load_cupti_api(void* handle, CuptiApi* api, std::string* error);

// The CUDA major a CUPTI API version belongs to: 130001 -> 13 (the xxyyzz
// scheme of CUDA 13 on), 19..28 -> 12, 13..18 -> 11, older -> 10.
int cupti_cuda_major(uint32_t api_version) noexcept;

// "" when records of a CUPTI with `loaded` API version can be decoded with the
// structs of `compiled` (same CUDA major, not an older CUDA minor release:
// the update digits zz of xxyyzz do not count); otherwise the reason.
std::string cupti_version_problem(uint32_t loaded, uint32_t compiled);

// A sentence for a CUPTI failure, naming the known causes: another CUPTI
// subscriber (Nsight Systems/Compute, torch.profiler), missing profiling
// permission, unsupported device.
std::string cupti_failure_reason(const char* what, CUptiResult result, const std::string& result_name);

}  // namespace profkit::cupti
