// CuptiTracer: GPU tracing with CUPTI's activity API, as an ActivitySource
// of the Recorder.
//
// Life of a trace (CUPTI.md):
//   set_enabled(true)   checks the driver (devices) and attaches to CUPTI
//                       (subscribe: another subscriber such as Nsight fails
//                       here), registers the buffer callbacks, the timestamp
//                       callback (the engine clock, so GPU times line up with
//                       host events) and system thread ids.
//   READY               enables kernel (CONCURRENT_KERNEL, never KERNEL: it
//                       serializes kernels), memcpy, memset and runtime
//                       records (minus noisy calls), and callbacks on the
//                       driver's kernel launch calls, which tie kernels
//                       launched through the driver API (cuBLAS, Triton) to
//                       their launch (CUPTI's DRIVER kind instead, every
//                       driver call, with PROFKIT_CUPTI_DRIVER=all); CUPTI's
//                       first-use cost is paid here, during warm-up; what
//                       arrives is discarded.
//   RECORD              opens a window; records are decoded as soon as CUPTI
//                       completes a buffer, and the buffer is recycled; the
//                       store holds as many as the memory cap set then allows.
//   leaving RECORD      closes the window and flushes (forced).
//   CLOSED              flushes, disables every kind and detaches from
//                       CUPTI (cuptiFinalize at the exit of a CUDA call,
//                       where NVIDIA says it is safe: the tracer makes one,
//                       cuDriverGetVersion, at once), so the program runs at
//                       full speed after profiling and another profiler can
//                       subscribe.
//   collect             flushes if still armed and adds what belongs to the
//                       Result's windows (ActivityStore::contribute), with the
//                       device facts and the dropped-record count.
//   fork()              the child stops tracing, keeps nothing of the parent's
//                       and never calls CUPTI (forget_in_forked_child).
// A failure while arming (on a state change) cannot fail the state change:
// GPU tracing switches itself off, CPU recording goes on, and the reason is
// reported by available() and in the next Result's metadata
// ("gpu_tracing_error").
//
// Thread-safety: all methods are thread-safe. Locks: control_mutex_ (state
// changes, collect, enable) is taken after the Recorder's lock; store_mutex_
// is taken by CUPTI's buffer-completed callback and by the launch callbacks
// (on the launching threads), and is never held while calling CUPTI or
// CUDA, so a forced flush cannot deadlock; detach_mutex_ guards
// attaching against the deferred cuptiFinalize (the callback only try-locks).
// Ownership: the process tracer (instance()) is never destroyed, because
// CUPTI may call back at exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cupti/activity_store.h"
#include "cupti/availability.h"
#include "cupti/buffer_pool.h"
#include "cupti/gpu_device.h"
#include "cupti/record_decoder.h"
#include "recorder/activity_source.h"

namespace profkit::cupti {

class CuptiTracer final : public ActivitySource {
 public:
  // The process's tracer, on the libraries probe_gpu_support() found.
  static CuptiTracer& instance();

  // A tracer on given libraries (tests use fakes). Only one tracer may be
  // attached to CUPTI at a time. `support` must outlive the tracer.
  explicit CuptiTracer(const GpuSupport& support);
  ~CuptiTracer() override;
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Whether GPU tracing can work; `reason` says why not (or what was found).
  bool available(std::string* reason);
  // The same, with the reason's text kept for the tracer's life (for the
  // process tracer, the process's life: pk_gpu_available promises static
  // storage). Each distinct text is kept once; there are few.
  bool available(const char** reason);

  // Turns tracing on for the windows that follow (arming at once when the
  // engine is READY or recording). Throws Error(PK_ERR_UNSUPPORTED) with the
  // reason when it cannot work. Turning it off always works; what was
  // recorded waits for the next collect.
  void set_enabled(bool enabled);
  bool enabled() const;

  // ActivitySource, called by the Recorder under its lock.
  void on_state_change(pk_state from, pk_state to) override;
  void contribute(ResultBuilder& builder) override;
  void lock_for_fork() noexcept override;
  void unlock_after_fork() noexcept override;
  void forget_in_forked_child() noexcept override;

  // Counters for tests and benchmarks.
  struct Stats {
    bool attached = false;
    bool activities_enabled = false;
    bool detach_pending = false;
    uint64_t flushes = 0;
    uint64_t buffers_completed = 0;
    DecodeStats decoded;
    size_t buffers_allocated = 0;
    uint64_t buffer_refusals = 0;
  };
  Stats stats();

 private:
  enum class Phase { kOff, kArmed, kRecording };
  static Phase phase_for(pk_state state) noexcept;

  void apply_phase_locked(Phase target);
  void attach_locked();
  void enable_activities_locked();
  void disable_activities_locked() noexcept;
  void flush_locked() noexcept;
  void request_detach_locked() noexcept;
  void switch_off_after_failure_locked(const std::string& reason) noexcept;
  [[noreturn]] void fail_cupti(const char* what, CUptiResult result);

  // CUPTI calls these; they find the attached tracer through g_attached.
  static void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                           size_t valid_bytes);
  static void CUPTIAPI on_api_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                       const void* data);
  static uint64_t CUPTIAPI engine_clock();
  // A driver launch call's enter or exit (callbacks on while launch_callbacks_on_).
  void on_driver_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  void buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t valid_bytes) noexcept;

  const GpuSupport& support_;
  const CuptiApi& api_;

  mutable std::mutex control_mutex_;
  bool enabled_ = false;
  bool registered_ = false;  // this tracer is the Recorder's activity source
  Phase phase_ = Phase::kOff;
  std::string failure_;                  // why tracing switched itself off ("" if it did not)
  std::set<std::string> reasons_given_;  // every failure_ that available() handed out as text
  bool failure_reported_ = true;         // failure_ already went into a Result
  GpuDevices devices_;
  bool devices_known_ = false;
  std::vector<RecordingWindow> windows_;  // since the last collect
  bool traced_since_collect_ = false;
  bool activities_on_ = false;
  bool driver_kind_on_ = false;  // every driver call recorded (PROFKIT_CUPTI_DRIVER=all)
  // Callbacks on the driver's kernel launch calls are enabled (the default);
  // read by CUPTI's callbacks on the launching threads.
  std::atomic<bool> launch_callbacks_on_{false};
  std::atomic<uint64_t> launch_callbacks_generation_{0};  // bumped each time they are switched on
  const std::vector<uint32_t> launch_cbids_;              // kernel_launch_driver_cbids(), fixed
  uint64_t flushes_ = 0;

  std::mutex detach_mutex_;
  std::atomic<bool> attached_{false};
  std::atomic<bool> detach_requested_{false};
  CUpti_SubscriberHandle subscriber_ = nullptr;

  ActivityBufferPool pool_;
  std::atomic<uint64_t> buffers_completed_{0};

  std::mutex store_mutex_;
  ActivityStore store_;
  DecodeFilter filter_;
  DecodeStats decoded_;
};

}  // namespace profkit::cupti
