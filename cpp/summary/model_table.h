// Model Summary: the training loop's phases. ProfileStep (or "Total Time"
// when no step was recorded; steps that all have zero length are still
// listed, with a note that total_time is then the span), then Dataloader,
// Forward, Backward and Optimization with calls, CPU Total / Avg / Max / Min
// / Ratio(%) and the GPU time of the work they launched; then "Others": the part of total_time that
// none of the four covers (CPU), and the ProfileStep GPU time not launched by
// them (GPU). Every ratio is to total_time.
//
// Which call launched GPU work: the phase or step open around the launch on
// the launching thread. Work launched from a thread that records no phase or
// step of its own (PyTorch's autograd device threads run every CUDA backward
// operator) belongs to the phase open at launch time, preferring the threads
// that record steps; work launched outside any step on its own thread belongs
// to the step open at launch time on any thread.
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
    uint64_t gpu_ns;  // launched under it on its own thread
    uint8_t type;
    bool on_step_thread;  // its thread records ProfileSteps
  };
  // GPU work whose call is found by launch time.
  struct Launch {
    uint64_t time_ns;  // start of the launching host event
    uint64_t duration_ns;
  };

  // Per call, the GPU time launched on other threads that belongs to it.
  std::vector<uint64_t> gpu_by_launch_time() const;

  const SummaryContext& context_;
  std::vector<Call> calls_;
  std::vector<Launch> unstepped_;  // launched outside any step on their thread
  std::vector<Launch> unphased_;   // launched on threads with no step or phase
  // Where each thread's launches end in the two lists above.
  std::vector<size_t> unstepped_run_ends_;
  std::vector<size_t> unphased_run_ends_;

  // The thread being walked.
  size_t thread_first_call_ = 0;
  uint32_t open_steps_ = 0;
  uint32_t open_phases_ = 0;
  bool thread_has_steps_ = false;
  bool thread_records_loop_ = false;  // it has a step or phase event (so far)
  std::vector<Launch> thread_unphased_;
};

}  // namespace profkit
