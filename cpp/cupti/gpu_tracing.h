// GPU tracing as the C ABI sees it (pk_gpu_available, pk_set_gpu_tracing):
// backed by the CUPTI tracer when profkit is built with the CUPTI headers,
// and by an "unavailable" answer when it is not.
//
// Thread-safety: thread-safe.
#pragma once

namespace profkit::gpu {

// Whether profkit was built with the CUPTI headers.
bool built_with_cupti() noexcept;

// Whether GPU tracing can work in this process; `reason` receives a sentence
// saying why not, or what was found: static storage, valid for the life of
// the process, from any thread. Never throws.
bool available(const char** reason) noexcept;

// Turns GPU tracing on or off for the recording windows that follow. Throws
// profkit::Error(PK_ERR_UNSUPPORTED) with the reason when it cannot work.
void set_tracing(bool enabled);

}  // namespace profkit::gpu
