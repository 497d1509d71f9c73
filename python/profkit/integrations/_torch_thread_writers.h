// The engine's thread writer (pk_thread_writer, profkit.h) of the thread that
// runs an operator, found by torch's own id of that thread.
//
// Why not pk_thread_writer_current: it is a thread-local of libprofkit, and
// reading another library's thread-local from this dlopen'd module goes
// through a TLS descriptor call -- two more instruction-cache lines (the GOT
// entry and the dynamic loader's resolver) on every begin and every end, which
// is most of what an event costs once the framework's own code has evicted
// L1i. torch hands each callback the RecordFunction, which carries the id
// torch gave the running thread (RecordFunction::threadId(): a small number
// from a process-wide counter, never reused); a plain array indexed by it
// needs no call at all.
//
// Thread-safety: a slot is written by its own thread only (the first time
// that thread records), and read by that thread afterwards. Ids are never
// reused, so a slot never points at another thread's writer; a writer lives
// at least as long as its thread, and the slot of a thread that has exited is
// never read again. Ids past the table take pk_thread_writer_current.
#pragma once

#include <ATen/record_function.h>
#include <profkit/profkit.h>

#include <cstddef>
#include <cstdint>

#include "_torch_hook_layout.h"

#if PK_INLINE_WRITER

namespace profkit_torch {

constexpr size_t kThreadWriterSlots = 4096;
extern pk_thread_writer* g_thread_writers[kThreadWriterSlots];

// The calling thread's writer, read through the TLS descriptor, and
// remembered under `torch_thread_id`; nullptr before the thread's first
// event (pk_begin_event creates its buffer).
PK_HOOK_COLD pk_thread_writer* learn_thread_writer(uint64_t torch_thread_id) noexcept;

// How many threads' writers are remembered (a test reads it).
size_t thread_writers_known() noexcept;

// The writer of the thread running `fn`'s callbacks; nullptr when it has none
// yet (the caller falls back to pk_begin_event / pk_end_event).
PK_HOOK_HOT inline pk_thread_writer* thread_writer(const at::RecordFunction& fn) noexcept {
  const uint64_t id = fn.threadId();
  pk_thread_writer* const writer = id < kThreadWriterSlots ? g_thread_writers[id] : nullptr;
  return __builtin_expect(writer != nullptr, 1) ? writer : learn_thread_writer(id);
}

}  // namespace profkit_torch

#endif  // PK_INLINE_WRITER
