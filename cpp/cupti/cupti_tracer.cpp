#include "cupti/cupti_tracer.h"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/clock.h"
#include "common/error.h"
#include "cupti/api_names.h"
#include "cupti/device_properties.h"
#include "recorder/chunk.h"
#include "recorder/recorder.h"
#include "trace/result_builder.h"

namespace profkit::cupti {

namespace {

// The tracer CUPTI's callbacks go to (one CUPTI client per process).
std::atomic<CuptiTracer*> g_attached{nullptr};

// The Recorder opens its span a few microseconds before it tells the tracer;
// windows start this much earlier, and the Result's span trims the excess.
constexpr uint64_t kWindowSlackNs = 1'000'000;

constexpr CUpti_ActivityKind kActivityKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                 CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME};

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "cuptiActivityEnable(CONCURRENT_KERNEL)";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "cuptiActivityEnable(MEMCPY)";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "cuptiActivityEnable(MEMSET)";
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return "cuptiActivityEnable(RUNTIME)";
    default:
      return "cuptiActivityEnable";
  }
}

bool env_is_zero(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "0") == 0;
}

// Whether $PROFKIT_CUPTI_DRIVER asks for every driver API call ("all"):
// CUPTI's DRIVER activity kind, about 1.3-1.5 us more per launch on an H200
// (BENCHMARKS.md, "GPU tracing"). By default the tracer asks for callbacks
// on the driver's kernel launch calls alone instead (see on_driver_launch).
bool env_wants_every_driver_call() {
  const char* v = std::getenv("PROFKIT_CUPTI_DRIVER");
  return v != nullptr && strcasecmp(v, "all") == 0;
}

uint64_t record_cap() {
  // The engine's memory cap bounds decoded GPU records too. Read when a
  // window opens, not once: the process tracer is made at the first GPU
  // call, which comes before Profiler(memory_cap=...) sets the cap.
  return MemoryBudget::cap() / sizeof(pk_device_event);
}

}  // namespace

CuptiTracer& CuptiTracer::instance() {
  static CuptiTracer* tracer = new CuptiTracer(probe_gpu_support());  // never destroyed: CUPTI may call at exit
  return *tracer;
}

CuptiTracer::CuptiTracer(const GpuSupport& support)
    : support_(support),
      api_(support.cupti),
      launch_cbids_(kernel_launch_driver_cbids()),
      store_(api_display_name, record_cap()) {}

CuptiTracer::~CuptiTracer() {
  bool registered = false;
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    registered = registered_;
  }
  if (registered) Recorder::instance().set_activity_source(nullptr);
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (attached_.load()) {
    if (activities_on_) disable_activities_locked();
    api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> detach(detach_mutex_);
    api_.unsubscribe(subscriber_);
    api_.finalize();
    attached_.store(false);
  }
  CuptiTracer* self = this;
  g_attached.compare_exchange_strong(self, nullptr);
}

CuptiTracer::Phase CuptiTracer::phase_for(pk_state state) noexcept {
  switch (state) {
    case PK_STATE_READY:
      return Phase::kArmed;
    case PK_STATE_RECORD:
    case PK_STATE_RECORD_AND_RETURN:
      return Phase::kRecording;
    default:
      return Phase::kOff;
  }
}

bool CuptiTracer::available(std::string* reason) {
  const char* text = nullptr;
  const bool ok = available(&text);
  *reason = text;
  return ok;
}

bool CuptiTracer::available(const char** reason) {
  // support_ is immutable and outlives the tracer; failure_ changes, so the
  // text handed out is a copy that stays (under the lock fork() takes too).
  if (!support_.available) {
    *reason = support_.reason.c_str();
    return false;
  }
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!failure_.empty()) {
    *reason = reasons_given_.insert(failure_).first->c_str();
    return false;
  }
  *reason = support_.reason.c_str();
  return true;
}

bool CuptiTracer::enabled() const {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return enabled_;
}

void CuptiTracer::set_enabled(bool enabled) {
  if (!enabled) {
    std::lock_guard<std::mutex> lock(control_mutex_);
    enabled_ = false;
    apply_phase_locked(Phase::kOff);
    // Turned on and off again while CLOSED (no window to close): let go of
    // CUPTI all the same.
    request_detach_locked();
    return;
  }
  if (!support_.available) {
    throw Error(PK_ERR_UNSUPPORTED, "GPU tracing is not available: " + support_.reason + "; profiling the CPU only");
  }
  // Before taking our lock: the Recorder calls us under its own.
  Recorder::instance().set_activity_source(this);
  std::lock_guard<std::mutex> lock(control_mutex_);
  registered_ = true;
  try {
    if (!devices_known_) {
      std::string error;
      if (!query_devices(support_.driver, &devices_, &error)) throw Error(PK_ERR_UNSUPPORTED, error);
      devices_known_ = true;
    }
    failure_.clear();
    attach_locked();
    enabled_ = true;
    apply_phase_locked(phase_for(Recorder::instance().state()));
  } catch (const Error& e) {
    switch_off_after_failure_locked(e.what());
    failure_reported_ = true;  // the caller hears it now
    throw Error(PK_ERR_UNSUPPORTED,
                std::string("GPU tracing is not available: ") + e.what() + "; profiling the CPU only");
  }
}

void CuptiTracer::on_state_change(pk_state /*from*/, pk_state to) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!enabled_) return;
  try {
    apply_phase_locked(phase_for(to));
  } catch (const std::exception& e) {
    // A state change must not fail because of the GPU: CPU recording goes on.
    switch_off_after_failure_locked(e.what());
  }
}

void CuptiTracer::apply_phase_locked(Phase target) {
  if (target == phase_) return;
  const uint64_t now = monotonic_ns();
  if (phase_ == Phase::kRecording) {
    if (!windows_.empty()) windows_.back().end_ns = now;
    {
      std::lock_guard<std::mutex> store(store_mutex_);
      filter_.window_open = false;
    }
    flush_locked();  // what the window produced, before anything else changes
  }
  if (target == Phase::kOff) {
    if (activities_on_) disable_activities_locked();
    request_detach_locked();
    phase_ = Phase::kOff;
    return;
  }
  if (phase_ == Phase::kOff) {
    attach_locked();
    enable_activities_locked();
  }
  if (target == Phase::kRecording) {
    const uint64_t start = now > kWindowSlackNs ? now - kWindowSlackNs : 0;
    windows_.push_back({start, UINT64_MAX});
    traced_since_collect_ = true;
    std::lock_guard<std::mutex> store(store_mutex_);
    store_.set_max_records(record_cap());
    if (!filter_.accepting) {
      filter_.accepting = true;
      filter_.accept_from_ns = start;
    }
    filter_.window_open = true;
  }
  phase_ = target;
}

// In the order the tracer nests them (control, then detach or store, then
// the pool: store and pool are never held together, and CUPTI's callbacks
// take store or pool alone), after the Recorder's lock.
void CuptiTracer::lock_for_fork() noexcept {
  control_mutex_.lock();
  detach_mutex_.lock();
  store_mutex_.lock();
  pool_.lock_for_fork();
}

void CuptiTracer::unlock_after_fork() noexcept {
  pool_.unlock_after_fork();
  store_mutex_.unlock();
  detach_mutex_.unlock();
  control_mutex_.unlock();
}

// A forked child must not use CUDA (nor CUPTI): a flush, a disable or a
// finalize there may hang or fail. The child holds a copy of the parent's
// CUPTI state that it cannot drive, so tracing stops here without a CUPTI
// call: what the parent traced stays the parent's (its collect reports it),
// and the child's results say why they have no GPU activity.
void CuptiTracer::forget_in_forked_child() noexcept {
  try {
    std::lock_guard<std::mutex> lock(control_mutex_);
    const bool was_tracing = enabled_;  // not a tracer the user turned off, detaching
    enabled_ = false;
    phase_ = Phase::kOff;
    activities_on_ = false;
    driver_kind_on_ = false;
    launch_callbacks_on_.store(false);
    attached_.store(false);
    detach_requested_.store(false);
    subscriber_ = nullptr;
    windows_.clear();
    traced_since_collect_ = false;
    CuptiTracer* self = this;
    g_attached.compare_exchange_strong(self, nullptr);
    {
      std::lock_guard<std::mutex> store(store_mutex_);
      filter_ = DecodeFilter{};
      store_.clear();
    }
    if (was_tracing) {
      failure_ =
          "GPU tracing stopped at fork(): a forked child cannot use CUDA or CUPTI, so it records the CPU only "
          "(trace the GPU in the parent, or start child processes with the 'spawn' method)";
      failure_reported_ = false;
    }
  } catch (...) {
    // Out of memory: the child may report some of the parent's GPU records,
    // but it still never calls CUPTI (attached_ and enabled_ went first).
  }
}

[[noreturn]] void CuptiTracer::fail_cupti(const char* what, CUptiResult result) {
  throw Error(PK_ERR_UNSUPPORTED, cupti_failure_reason(what, result, api_.result_name(result)));
}

void CuptiTracer::attach_locked() {
  std::lock_guard<std::mutex> detach(detach_mutex_);
  if (attached_.load()) {
    // Still attached: cancel a detach that has not happened yet.
    if (detach_requested_.exchange(false)) {
      api_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      api_.enable_domain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    return;
  }
  CuptiTracer* expected = nullptr;
  if (!g_attached.compare_exchange_strong(expected, this) && expected != this) {
    throw Error(PK_ERR_UNSUPPORTED, "another profkit GPU tracer is attached to CUPTI in this process");
  }
  CUptiResult r = api_.subscribe(&subscriber_, on_api_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    g_attached.store(nullptr);
    fail_cupti("cuptiSubscribe", r);
  }
  auto undo = [&] {
    api_.unsubscribe(subscriber_);
    subscriber_ = nullptr;
    g_attached.store(nullptr);
  };
  if ((r = api_.register_timestamp_callback(engine_clock)) != CUPTI_SUCCESS) {
    undo();
    fail_cupti("cuptiActivityRegisterTimestampCallback", r);
  }
  if ((r = api_.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS) {
    undo();
    fail_cupti("cuptiSetThreadIdType(SYSTEM)", r);
  }
  if ((r = api_.register_callbacks(on_buffer_requested, on_buffer_completed)) != CUPTI_SUCCESS) {
    undo();
    fail_cupti("cuptiActivityRegisterCallbacks", r);
  }
  attached_.store(true);
}

void CuptiTracer::enable_activities_locked() {
  size_t enabled = 0;
  for (CUpti_ActivityKind kind : kActivityKinds) {
    const CUptiResult r = api_.activity_enable(kind);
    if (r != CUPTI_SUCCESS) {
      for (size_t i = 0; i < enabled; ++i) api_.activity_disable(kActivityKinds[i]);
      fail_cupti(kind_name(kind), r);
    }
    ++enabled;
  }
  activities_on_ = true;
  // Fine-grained choices are best effort: tracing works without them.
  if (api_.enable_runtime_api != nullptr) {
    for (uint32_t cbid : noisy_runtime_cbids()) api_.enable_runtime_api(cbid, 0);
  }
  driver_kind_on_ = env_wants_every_driver_call() && api_.activity_enable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS;
  // The DRIVER kind records these launches itself; "0" asks for no driver call.
  if (!driver_kind_on_ && !env_is_zero("PROFKIT_CUPTI_DRIVER") && api_.enable_callback != nullptr) {
    launch_callbacks_generation_.fetch_add(1, std::memory_order_relaxed);  // before any callback of this period
    bool any = false;
    for (uint32_t cbid : launch_cbids_) {
      any |= api_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS;
    }
    launch_callbacks_on_.store(any, std::memory_order_relaxed);
  }
}

void CuptiTracer::disable_activities_locked() noexcept {
  for (CUpti_ActivityKind kind : kActivityKinds) api_.activity_disable(kind);
  if (driver_kind_on_) api_.activity_disable(CUPTI_ACTIVITY_KIND_DRIVER);
  driver_kind_on_ = false;
  if (launch_callbacks_on_.exchange(false, std::memory_order_relaxed)) {
    for (uint32_t cbid : launch_cbids_) api_.enable_callback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  }
  activities_on_ = false;
}

void CuptiTracer::flush_locked() noexcept {
  if (!attached_.load()) return;
  // Only control_mutex_ is held: buffer_completed takes store_mutex_ and the
  // pool's mutex, never this one.
  api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  ++flushes_;
}

void CuptiTracer::request_detach_locked() noexcept {
  if (env_is_zero("PROFKIT_CUPTI_FINALIZE")) return;  // stay attached (idle)
  {
    std::lock_guard<std::mutex> detach(detach_mutex_);
    if (!attached_.load() || detach_requested_.load()) return;
    // cuptiFinalize is safe at the exit of a CUDA call (cupti_activity.h), so
    // it happens in on_api_callback at the next one.
    detach_requested_.store(true);
    api_.enable_domain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    api_.enable_domain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  // Make that next call now: one driver call with no side effect, whose exit
  // callback runs here and detaches. Waiting for the program's own next call
  // kept profkit subscribed in between, and a profiler started there (torch.
  // profiler, Nsight) failed with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
  // Where CUPTI does not call back for it, the program's next call detaches.
  int version = 0;
  if (support_.driver.driver_get_version != nullptr) support_.driver.driver_get_version(&version);
}

void CuptiTracer::switch_off_after_failure_locked(const std::string& reason) noexcept {
  try {
    failure_ = reason;
  } catch (...) {
  }
  failure_reported_ = false;
  enabled_ = false;
  try {
    if (!windows_.empty() && windows_.back().end_ns == UINT64_MAX) windows_.back().end_ns = monotonic_ns();
    {
      std::lock_guard<std::mutex> store(store_mutex_);
      filter_.window_open = false;
    }
    if (activities_on_) disable_activities_locked();
    request_detach_locked();
  } catch (...) {
  }
  phase_ = Phase::kOff;
}

void CuptiTracer::contribute(ResultBuilder& builder) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (phase_ != Phase::kOff) flush_locked();
  const bool recording = phase_ == Phase::kRecording;

  CollectSpan span;
  span.windows = windows_;
  span.start_ns = builder.info().start_ns;
  span.end_ns = builder.info().end_ns;
  span.recording_continues = recording;
  static const GpuDevices kNoDevices;
  const GpuDevices& devices = traced_since_collect_ ? devices_ : kNoDevices;
  {
    std::lock_guard<std::mutex> store(store_mutex_);
    if (!store_.empty() || traced_since_collect_) store_.contribute(builder, span, devices);
    if (recording) {
      store_.set_max_records(record_cap());  // the next span records under the cap set now
    } else {
      filter_.accepting = false;
      filter_.window_open = false;
    }
  }
  if (traced_since_collect_) {
    builder.add_metadata("gpu_tracing",
                         "CUPTI " + std::to_string(support_.cupti_version) + " (" + support_.cupti_library.path + ")");
  }
  if (!failure_reported_) {
    builder.add_metadata("gpu_tracing_error", failure_);
    failure_reported_ = true;
  }
  windows_.clear();
  if (recording) windows_.push_back({span.end_ns, UINT64_MAX});
  traced_since_collect_ = recording;
  if (phase_ == Phase::kOff) pool_.trim();  // profiling is over: give the buffers back
}

CuptiTracer::Stats CuptiTracer::stats() {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    s.attached = attached_.load();
    s.activities_enabled = activities_on_;
    s.detach_pending = detach_requested_.load();
    s.flushes = flushes_;
  }
  {
    std::lock_guard<std::mutex> store(store_mutex_);
    s.decoded = decoded_;
  }
  s.buffers_completed = buffers_completed_.load();
  s.buffers_allocated = pool_.allocated();
  s.buffer_refusals = pool_.refused();
  return s;
}

// ---- CUPTI callbacks --------------------------------------------------------

uint64_t CUPTIAPI CuptiTracer::engine_clock() { return monotonic_ns(); }

// CUPTI calls back at both ends of every launch call, the runtime's own
// included (cudaLaunchKernel goes through cuLaunchKernel, under the runtime
// call's correlation id); the store forgets those once their runtime record
// arrives. What stays are the launches made through the driver API itself:
// cuBLAS's cuLaunchKernel, Triton's. Seen on an H200 with CUDA 13.0: these
// callbacks tied 380 of 380 kernels of a conv net (the runtime records 370)
// and 50 of 50 Triton kernels (0), for no more per launch than the per-call
// DRIVER activity setting they replace, where the DRIVER kind costs 1.3-1.5
// us in profkit (BENCHMARKS.md, "GPU tracing").
void CuptiTracer::on_driver_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  // A launch starts and ends on its thread, and launch calls do not nest.
  thread_local uint64_t t_launch_start_ns = 0;
  // The period of callbacks its enter came in: callbacks switched off and
  // on again between a launch's enter and exit (a window closing and the
  // next opening) must not give a later exit that old start.
  thread_local uint64_t t_launch_generation = 0;
  // Cached: a forked child never traces (forget_in_forked_child).
  thread_local uint32_t t_tid = 0;
  if (std::find(launch_cbids_.begin(), launch_cbids_.end(), cbid) == launch_cbids_.end()) return;
  const uint64_t generation = launch_callbacks_generation_.load(std::memory_order_relaxed);
  if (call.callbackSite == CUPTI_API_ENTER) {
    t_launch_start_ns = monotonic_ns();
    t_launch_generation = generation;
    return;
  }
  // An exit whose enter came before the callbacks were (last) on has no start.
  if (call.callbackSite != CUPTI_API_EXIT || t_launch_start_ns == 0 || t_launch_generation != generation) {
    t_launch_start_ns = 0;
    return;
  }
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  ApiCall launch;
  launch.start_ns = std::exchange(t_launch_start_ns, 0);
  launch.end_ns = std::max(launch.start_ns, monotonic_ns());
  launch.tid = t_tid;
  launch.correlation_id = call.correlationId;
  launch.flags = kApiCallDriver;
  try {
    std::lock_guard<std::mutex> lock(store_mutex_);
    if (!filter_.accepting || launch.start_ns < filter_.accept_from_ns) return;  // as the decoder filters
    launch.name = store_.api_name(true, cbid);
    store_.add_launch_seen_by_callback(launch);
  } catch (...) {
    // Out of memory: this kernel stays unattached (counted as such).
  }
}

void CUPTIAPI CuptiTracer::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiTracer* t = g_attached.load();
  uint8_t* b = t != nullptr ? t->pool_.acquire() : nullptr;
  *buffer = b;
  *size = b != nullptr ? t->pool_.buffer_bytes() : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI CuptiTracer::on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t /*size*/,
                                               size_t valid_bytes) {
  CuptiTracer* t = g_attached.load();
  if (t != nullptr) t->buffer_completed(context, stream, buffer, valid_bytes);
}

void CuptiTracer::buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t valid_bytes) noexcept {
  buffers_completed_.fetch_add(1, std::memory_order_relaxed);
  try {
    // Walk the buffer without our lock (the walk is a CUPTI call), decode
    // under it (pure work).
    thread_local std::vector<const CUpti_Activity*> records;
    records.clear();
    const CUptiResult walk = list_records(buffer, valid_bytes, api_.get_next_record, &records);
    size_t cupti_dropped = 0;
    if (api_.get_num_dropped_records(context, stream, &cupti_dropped) != CUPTI_SUCCESS) cupti_dropped = 0;
    thread_local std::vector<uint32_t> runtime_correlations;
    runtime_correlations.clear();
    append_runtime_correlation_ids(records, &runtime_correlations);
    std::lock_guard<std::mutex> lock(store_mutex_);
    for (const CUpti_Activity* r : records) decode_record(r, filter_, &store_, &decoded_);
    store_.forget_launches_inside_runtime_calls(runtime_correlations);
    if (filter_.accepting) {
      if (walk != CUPTI_ERROR_MAX_LIMIT_REACHED) store_.add_dropped(1);  // the unreadable rest of the buffer
      store_.add_dropped(cupti_dropped);
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(store_mutex_);
    if (filter_.accepting) store_.add_dropped(1);
  }
  pool_.release(buffer);
}

void CUPTIAPI CuptiTracer::on_api_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                           const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call == nullptr) return;
  CuptiTracer* t = g_attached.load();
  if (t == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && t->launch_callbacks_on_.load(std::memory_order_relaxed)) {
    t->on_driver_launch(cbid, *call);
  }
  if (call->callbackSite != CUPTI_API_EXIT || !t->detach_requested_.load()) return;
  // Never wait here: the thread arming the tracer may hold the lock while it
  // calls into CUPTI.
  std::unique_lock<std::mutex> lock(t->detach_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !t->detach_requested_.exchange(false)) return;
  t->api_.finalize();  // also drops the subscription and every registration
  t->subscriber_ = nullptr;
  t->attached_.store(false);
  g_attached.store(nullptr);
}

}  // namespace profkit::cupti
