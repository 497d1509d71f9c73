// Model Summary: the training loop's phases. ProfileStep (or "Total Time"
// when no step was recorded; steps that all have zero length are still
// listed, with a note that total_time is then the span), then Dataloader,
// Forward, Backward and Optimization with calls, CPU Total / Avg / Max / Min
// / Ratio(%) and the GPU time of the work they launched; then "Others": the part of total_time that
// none of the four covers (CPU), and the ProfileStep GPU time not launched by
// them (GPU). Every ratio is to total_time.
//
// Phases of different types nest (an optimizer step run from a gradient
// hook: an Optimization inside a Backward), and each has the work launched
// inside it, so their GPU times overlap: Others is the steps' GPU time less
// the work of the steps that any phase has, each record counted once.
//
// Which call launched GPU work: the phase or step open around the launch on
// the launching thread. Work launched from a thread that records no phase or
// step of its own (PyTorch's autograd device threads run every CUDA backward
// operator) belongs to the phase open at launch time, preferring the threads
// that record steps, then the latest to start; work launched outside any
// step on its own thread belongs to the step open at launch time on any
// thread (the latest to start). Of calls that start together, the one found
// last in thread and event order wins: of two nested ones, the inner.
//
// A phase nested in a phase of the same type on its thread is part of it:
// the outer one is the call, with the GPU work of both. So is a ProfileStep
// in a ProfileStep (a user's RecordEvent of that type inside prof.step()'s).
// Instant events (marks of no duration) are no calls.
//
// The steps and phases are found first, in one pass over the host events
// when the table is made, so that each launch is attributed as the walk
// meets it: no launch is kept (except, on a damaged Result, those of a
// thread whose events are out of time order).
//
// Thread-safety: a walk visitor, then a pure table() call.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "summary/call_stats.h"
#include "summary/host_walk.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

class ModelTable : public HostEventVisitor {
 public:
  // Reads every host event once (see above).
  explicit ModelTable(const SummaryContext& context);
  uint32_t type_mask() const override;
  void begin_thread(size_t thread) override;
  void on_open(const OpenStack& stack) override;
  void on_close(const OpenStack& stack, const OpenEvent& closed) override;
  bool wants_launches() const override { return true; }
  void on_launch(const OpenStack& stack, const LaunchedWork& work) override;
  void end_thread(size_t thread) override;
  SummaryTable table() const;

 private:
  // One ProfileStep or phase event.
  struct Call {
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t gpu_ns;  // launched under it on its own thread, or found for it by launch time
    uint8_t type;
    bool on_step_thread;  // its thread records ProfileSteps
    // A phase inside a phase of the same type on its thread: part of that
    // one (a user's Forward range around an integration's Forward), not a
    // call of its own, or its time would count twice.
    bool nested = false;
  };

  // Finds, for each launch time of one thread at a time, the call open then
  // that ranks first (on a step thread, then the latest to start), and adds
  // the launch to it. Launches in time order cost a sweep over the calls in
  // start order (the set open at once stays small: a step and a phase or
  // two per thread); the rest of a thread that goes back in time is kept and
  // swept sorted at the end of the thread.
  class LaunchTimeAttribution {
   public:
    // `calls` must not grow while this is used.
    void set_calls(std::vector<Call>* calls);
    void begin_thread();
    void add(uint64_t time_ns, uint64_t duration_ns);
    void end_thread();

   private:
    struct Launch {
      uint64_t time_ns;
      uint64_t duration_ns;
    };
    static constexpr size_t kNone = SIZE_MAX;
    // Sweeps on to `time_ns` and adds the launch to the call that wins then.
    void attribute(uint64_t time_ns, uint64_t duration_ns);
    // Back to before the first call, for launches from an earlier time.
    void restart();

    std::vector<Call>* calls_ = nullptr;
    std::vector<size_t> by_start_;  // indices into *calls_
    size_t next_ = 0;               // the first of by_start_ not yet opened
    std::vector<size_t> open_;      // in start order
    size_t winner_ = kNone;         // of open_, until winner_until_ns_
    uint64_t winner_until_ns_ = 0;  // the next start or end: open_ changes then
    uint64_t last_time_ns_ = 0;
    bool out_of_order_ = false;
    std::vector<Launch> out_of_order_launches_;  // only on a damaged Result
  };

  void find_calls();
  // Whether work launched at `time_ns` belongs to some phase and to some
  // step, found as they find it: on the launching thread's stack, else (the
  // by_* flags) by the launch time.
  bool in_phase_and_step(uint64_t time_ns, bool by_step_time, bool by_phase_time) const;

  const SummaryContext& context_;
  std::vector<Call> steps_;
  // Phases are kept only when a thread that records no step might launch
  // work they own; otherwise each is counted as it closes.
  std::vector<Call> phases_;
  bool keep_phases_ = false;
  std::array<CallStats, PK_EVENT_TYPE_COUNT> counted_{};  // calls not kept
  std::vector<uint8_t> thread_records_steps_;             // per thread: a ProfileStep event
  LaunchTimeAttribution steps_by_time_;                   // for launches outside any step on their thread
  LaunchTimeAttribution phases_by_time_;                  // for launches outside any phase on a thread without steps
  // GPU time of the steps that some phase has, each record once: the
  // phases' own totals count a record once per nested phase.
  uint64_t phases_gpu_in_steps_ns_ = 0;
  // type_bit()s of the phases found on threads that record no steps.
  uint32_t phase_types_off_step_threads_ = 0;

  // The walk: the next call of each list to open (calls are found in walk
  // order), and the stack of open ones (nullptr: not kept).
  size_t next_step_ = 0;
  size_t next_phase_ = 0;
  std::vector<Call*> open_calls_;
  uint32_t open_steps_ = 0;
  uint32_t open_phases_ = 0;               // of any type, instants aside
  bool thread_records_steps_now_ = false;  // the thread being walked
};

}  // namespace profkit
