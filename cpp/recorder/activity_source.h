// ActivitySource: a tracer that records beside the host recorder and adds its
// records to each collected Result (the CUPTI GPU tracer is one).
//
// Thread-safety: the Recorder calls these under its control lock, so an
// implementation sees one call at a time.
#pragma once

#include "common/clock.h"
#include "profkit/profkit.h"

namespace profkit {

class ResultBuilder;

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // The engine moved between states (arm at READY, keep only what arrives
  // while recording, flush and detach at CLOSED).
  virtual void on_state_change(pk_state from, pk_state to) = 0;
  // Adds what was recorded since the last call, stamped on the engine clock.
  virtual void contribute(ResultBuilder& builder) = 0;

  // fork(), from the Recorder's pthread_atfork handlers (under its lock):
  // every lock of the source is taken before the fork and released after it
  // in parent and child; then, in the child only, forget_in_forked_child
  // drops what the parent traced and stops tracing without calling the
  // tracer's library (a forked child must not use CUDA or CUPTI).
  virtual void lock_for_fork() noexcept {}
  virtual void unlock_after_fork() noexcept {}
  virtual void forget_in_forked_child() noexcept {}
};

}  // namespace profkit
