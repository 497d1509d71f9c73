#include "cupti/cupti_api.h"

#include <dlfcn.h>

namespace profkit::cupti {

namespace {

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn* out, bool required, std::string* error) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out != nullptr || !required) return true;
  if (error != nullptr) {
    *error = std::string("the loaded libcupti has no ") + symbol + " (it is too old for this profkit)";
  }
  return false;
}

}  // namespace

std::string CuptiApi::result_name(CUptiResult result) const {
  const char* text = nullptr;
  if (get_result_string != nullptr && get_result_string(result, &text) == CUPTI_SUCCESS && text != nullptr) {
    return text;
  }
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

bool load_cupti_api(void* handle, CuptiApi* api, std::string* error) {
  CuptiApi a;
  const bool ok =
      resolve(handle, "cuptiGetVersion", &a.get_version, true, error) &&
      resolve(handle, "cuptiGetResultString", &a.get_result_string, true, error) &&
      resolve(handle, "cuptiSubscribe", &a.subscribe, true, error) &&
      resolve(handle, "cuptiUnsubscribe", &a.unsubscribe, true, error) &&
      resolve(handle, "cuptiEnableDomain", &a.enable_domain, true, error) &&
      resolve(handle, "cuptiActivityEnable", &a.activity_enable, true, error) &&
      resolve(handle, "cuptiActivityDisable", &a.activity_disable, true, error) &&
      resolve(handle, "cuptiActivityRegisterCallbacks", &a.register_callbacks, true, error) &&
      resolve(handle, "cuptiActivityFlushAll", &a.flush_all, true, error) &&
      resolve(handle, "cuptiActivityGetNextRecord", &a.get_next_record, true, error) &&
      resolve(handle, "cuptiActivityGetNumDroppedRecords", &a.get_num_dropped_records, true, error) &&
      resolve(handle, "cuptiSetThreadIdType", &a.set_thread_id_type, true, error) &&
      resolve(handle, "cuptiFinalize", &a.finalize, true, error) &&
      resolve(handle, "cuptiActivityRegisterTimestampCallback", &a.register_timestamp_callback, true, error) &&
      resolve(handle, "cuptiActivityEnableRuntimeApi", &a.enable_runtime_api, false, error) &&
      resolve(handle, "cuptiEnableCallback", &a.enable_callback, false, error) &&
      resolve(handle, "cuptiGetCallbackName", &a.get_callback_name, false, error);
  if (ok) *api = a;
  return ok;
}

int cupti_cuda_major(uint32_t v) noexcept {
  if (v >= 100000) return static_cast<int>(v / 10000);
  if (v >= 19) return 12;
  if (v >= 13) return 11;
  return 10;
}

std::string cupti_version_problem(uint32_t loaded, uint32_t compiled) {
  const int loaded_major = cupti_cuda_major(loaded);
  const int compiled_major = cupti_cuda_major(compiled);
  if (loaded_major != compiled_major) {
    return "the loaded libcupti is from CUDA " + std::to_string(loaded_major) + " (CUPTI API " +
           std::to_string(loaded) + ") but this profkit was built with the CUPTI headers of CUDA " +
           std::to_string(compiled_major) + " (CUPTI API " + std::to_string(compiled) +
           "); their activity records differ. Point PROFKIT_CUPTI_PATH at a CUDA " + std::to_string(compiled_major) +
           " libcupti or use a profkit built for CUDA " + std::to_string(loaded_major);
  }
  // From CUDA 13 the version is xxyyzz; zz is a CUPTI update within a CUDA
  // minor release (13.0 GA: 130000, 13.0 Update 1: 130001) that keeps the
  // minor's record structs. Requiring the exact update refused, for a
  // profkit built with 13.0 Update 1 headers, the CUPTI 13.0 GA that a
  // PyTorch cu130 wheel pins and already has loaded in the process.
  const uint32_t loaded_release = loaded >= 100000 ? loaded / 100 : loaded;
  const uint32_t compiled_release = compiled >= 100000 ? compiled / 100 : compiled;
  if (loaded_release < compiled_release) {
    return "the loaded libcupti (CUPTI API " + std::to_string(loaded) +
           ") is older than the CUPTI headers this profkit was built with (CUPTI API " + std::to_string(compiled) +
           "); install a newer CUPTI of CUDA " + std::to_string(compiled_major) + " or set PROFKIT_CUPTI_PATH";
  }
  return std::string();
}

std::string cupti_failure_reason(const char* what, CUptiResult result, const std::string& result_name) {
  std::string out = std::string(what) + " failed with " + result_name;
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      // torch.profiler is the usual one, and "stop it" does not help there:
      // Kineto stays subscribed after its window unless told to let go.
      return out +
             ": another CUPTI subscriber is already attached to this process (Nsight Systems or Nsight Compute, "
             "torch.profiler/Kineto, or another profiler); only one may trace at a time. torch.profiler stays "
             "attached for the rest of the process once used, even after it stops, unless TEARDOWN_CUPTI=1 was set "
             "before its first use. Profile with profkit in a process that has not run torch.profiler, stop the "
             "other profiler, or profile without GPU tracing";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return out +
             ": insufficient privileges for GPU profiling (the driver restricts it to administrators: run as root, "
             "give the container CAP_SYS_ADMIN, or set NVreg_RestrictProfilingToAdminUsers=0)";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return out + ": CUPTI could not initialize (no usable CUDA driver or device)";
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return out + ": this device, driver or environment does not support CUPTI activity tracing";
    default:
      return out;
  }
}

}  // namespace profkit::cupti
