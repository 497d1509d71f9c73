// torch's user ranges (torch.profiler.record_function, the optimizer's
// "Optimizer.step#SGD.step"), recorded with their own exact times however
// their ends are ordered.
//
// Why not pk_begin_event / pk_end_event: the engine keeps one stack of open
// events per thread, and pk_end_event ends the innermost. User ranges need
// not end innermost-first: a generator that holds a range open across
// `yield` ends it after the caller's range has ended, __exit__ calls may come
// crosswise, and a profkit RecordEvent may be open among them. Through the
// stack each such end closed whatever was innermost: two ranges swapped their
// end times, without a word. So each range is remembered when it begins (by
// its RecordFunction's address: torch hands the same object to the start and
// end callbacks, and it lives from one to the other) and recorded whole when
// it ends (pk_complete_event_ticks), which the result nests among the
// thread's other events by time, as torch.profiler does. One whose end never
// comes on its thread (ended through a future on another thread), or comes in
// a later recording window, is not recorded.
//
// Thread-safety: each thread has its own list, touched only by that thread.
// Ownership: the list is freed when its thread exits.
#pragma once

#include <ATen/record_function.h>
#include <profkit/profkit.h>

#include <cstdint>

namespace profkit_torch {

// Remembers that the range `fn` began now, in recording window `window`
// (pk_recording_word, nonzero), as an event named `name` of type `type`.
// A thread holding 256 open ranges takes no more (they are not recorded).
void user_range_begin(const at::RecordFunction& fn, pk_name_id name, pk_event_type type, uint32_t window) noexcept;

// Records the range `fn` if this thread began it in the current window.
void user_range_end(const at::RecordFunction& fn) noexcept;

}  // namespace profkit_torch
