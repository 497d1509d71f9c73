// ThreadBuffer: one recording thread's open-event stack and record chunks,
// plus the inline hot path (try_begin / try_end, and begin / end / instant
// for the general case).
//
// Thread-safety: the fields marked "owner" are touched only by the thread the
// buffer belongs to; the collector reads chunks through the protocol in
// chunk.h and counters through relaxed atomics. Ownership: buffers belong to
// the ThreadRegistry, which frees a buffer only after its thread has exited and
// every record has been collected, so a thread's data outlives the thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/compiler.h"
#include "profkit/profkit.h"
#include "recorder/chunk.h"
#include "recorder/open_event_args.h"
#include "recorder/raw_record.h"

namespace profkit {

// Nonzero while recording: the id of the current recording window. It is the
// exported pk_recording_word (profkit.h), so hooks can test it inline; the
// engine reads and writes it only through these atomic accessors.
PK_ALWAYS_INLINE uint32_t recording_window() noexcept { return __atomic_load_n(&pk_recording_word, __ATOMIC_RELAXED); }
PK_ALWAYS_INLINE uint32_t recording_window_acquire() noexcept {
  return __atomic_load_n(&pk_recording_word, __ATOMIC_ACQUIRE);
}
inline void set_recording_window(uint32_t window) noexcept {
  __atomic_store_n(&pk_recording_word, window, __ATOMIC_RELEASE);
}

// A relaxed counter written by one thread and read by others: a plain
// load/add/store, no locked instruction.
class OwnerCounter {
 public:
  void add(uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }
  void reset() noexcept { value_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// alignas(64): the fields every record touches (the writer below: counts,
// the record pointer, the recorded counter and the first open events) share
// the object's first cache line. Between two operators a framework's own
// work evicts much of L1, so each extra line the hot path touches is a
// likely miss.
class alignas(64) ThreadBuffer {
 public:
  static constexpr uint32_t kMaxDepth = 256;  // stack indices fit a record's depth byte
  // Finished chunks a collect gives back to their live thread; the others go
  // to the ChunkPool, where every thread finds them. Spares are the thread's
  // alone: when a collect kept them all, a thread that had filled the memory
  // cap in one window held it through every later window (while idle too),
  // and every event of any other thread was dropped.
  static constexpr uint32_t kKeptSpares = 2;

 private:
  // ---- owner, hot: the C ABI's pk_thread_writer, first, so that its fields
  // and the first open events share the object's first cache line. Its
  // window is this buffer's (0 before the first record); its inline_window
  // the window try_begin / try_end (the header's pk_writer_try_*) may record
  // in: the window where the clock is the TSC (or the platform has none),
  // else 0, which no window has -- so one comparison also sends every event
  // to the general path, which reads CLOCK_MONOTONIC, when the TSC is not
  // the clock. depth and recorded are relaxed atomics (the collector reads
  // them); committed points into the current chunk (chunk.h).
  pk_thread_writer w_{};
  Chunk* chunk_ = nullptr;

 public:
  explicit ThreadBuffer(uint64_t tid);
  ~ThreadBuffer();
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;

  // ---- owner: hot path ----
  // try_begin / try_end: the common case only -- this window, a free stack
  // slot (an open event to end), room in the chunk, the TSC -- inline and
  // without a call, so that a caller needs no stack frame and spans few
  // cache lines. They return false, having done nothing, in every other
  // case, which begin() / end() handle. They are the C ABI's inline writer
  // (profkit.h), which hooks compile into their own code: one implementation.
  // Where the header has no inline writer (not x86-64), inline_window is
  // always 0 and these are never called with a window that matches.
#if PK_INLINE_WRITER
  PK_ALWAYS_INLINE bool try_begin(uint32_t window, uint32_t name, uint8_t type) noexcept {
    return pk_writer_try_begin(&w_, window, name, static_cast<pk_event_type>(type)) != 0;
  }

  PK_ALWAYS_INLINE bool try_end(uint32_t window) noexcept { return pk_writer_try_end(&w_, window) != 0; }
#else
  PK_ALWAYS_INLINE bool try_begin(uint32_t, uint32_t, uint8_t) noexcept { return false; }
  PK_ALWAYS_INLINE bool try_end(uint32_t) noexcept { return false; }
#endif

  PK_ALWAYS_INLINE void begin(uint32_t window, uint32_t name, uint8_t type) noexcept {
    if (PK_UNLIKELY(w_.window != window)) start_window(window);
    const uint32_t d = depth();
    set_depth(d + 1);
    if (PK_UNLIKELY(d >= kMaxDepth)) return;  // counted when it ends
    pk_writer_open_event& e = w_.stack[d];
    e.tail = record_tail(name, type, 0, RecordKind::kEvent);
    e.start_ticks = read_ticks();
  }

  PK_ALWAYS_INLINE void end(uint32_t window) noexcept {
    const uint64_t now = read_ticks();
    const uint32_t d = depth();
    if (PK_UNLIKELY(w_.window != window || d == 0)) {
      unmatched_ends.add();
      return;
    }
    set_depth(d - 1);
    if (PK_UNLIKELY(d > kMaxDepth)) {
      overflowed_events.add();
      return;
    }
    const pk_writer_open_event& e = w_.stack[d - 1];  // d <= kMaxDepth: the depth fits its byte
    append(
        make_record(e.start_ticks, now, e.tail | record_tail(0, 0, static_cast<uint8_t>(d - 1), RecordKind::kEvent)));
  }

  PK_ALWAYS_INLINE void instant(uint32_t window, uint32_t name, uint8_t type) noexcept {
    if (PK_UNLIKELY(w_.window != window)) start_window(window);
    const uint32_t d = depth();
    const uint64_t now = read_ticks();
    // Depth hint d: nested inside the innermost open event.
    append({now, now, name, type, static_cast<uint8_t>(d > 255 ? 255 : d), RecordKind::kInstant});
  }

  // An event that already ended, with its times in ns (kind kWholeEvent) or
  // in ticks (kWholeEventTicks). It takes no part in the stack of open
  // events: collect nests it among the thread's other events by time (its
  // depth hint only orders the sort).
  void whole_event(uint32_t window, uint32_t name, uint8_t type, uint64_t start, uint64_t end,
                   RecordKind kind) noexcept {
    if (PK_UNLIKELY(w_.window != window)) start_window(window);
    append({start, end, name, type, 0, kind});
  }

  // Attaches an argument to the innermost open event; ignored if none is
  // open. Past the memory cap it is counted as a lost argument, not as a
  // dropped event: its event may well be kept, and an event with three
  // arguments counted four times made the losses look four times larger.
  void arg(uint32_t window, uint32_t key, RecordKind kind, uint64_t value) noexcept {
    uint64_t start = 0;
    uint8_t index = 0;
    if (innermost_open(window, &start, &index) && !try_append({start, value, key, 0, index, kind})) lost_args.add();
  }

  // Writes one record; past the memory cap it is dropped and counted.
  PK_ALWAYS_INLINE void append(const RawRecord& record) noexcept {
    if (!try_append(record)) dropped_events.add();
  }

  // Writes one record; false, having written and counted nothing, past the
  // memory cap (the caller counts it as what it is).
  PK_ALWAYS_INLINE bool try_append(const RawRecord& record) noexcept {
    if (PK_UNLIKELY(w_.count == w_.capacity) && !next_chunk(1)) return false;
    store(record);
    return true;
  }

  // Writes one record into the current chunk, which has room (count < capacity).
  PK_ALWAYS_INLINE void store(const RawRecord& record) noexcept {
    // The new count in a local: a RawRecord store may alias w_.count (both
    // hold uint32_t), which would make the compiler load it again.
    const uint32_t count = w_.count + 1;
    records()[count - 1] = record;
    w_.count = count;
    chunk_->publish(count);
    count_recorded(1);
  }

  // Writes `n` records that must be collected together (all or none); false,
  // counting nothing, when no buffer can be had (the memory cap).
  bool try_append_group(const RawRecord* records, uint32_t n) noexcept;
  // try_append_group, counting a group that found no room as dropped.
  void append_group(const RawRecord* records, uint32_t n) noexcept {
    if (!try_append_group(records, n)) dropped_events.add();
  }

  // The innermost open event's start ticks and stack index, for attaching an
  // argument. False when no event is open (or it was not stored).
  bool innermost_open(uint32_t window, uint64_t* start, uint8_t* index) const noexcept;

  // ---- owner: lifecycle ----
  // At thread exit, under the registry's lock (ThreadRegistry::thread_exited),
  // so that no collect is draining the buffer meanwhile.
  void on_thread_exit() noexcept;

  // ---- collector, once profiling has closed (under the recorder's and the
  // registry's locks) ----
  // Parks the chunk a live thread writes into when every record in it has
  // been collected (Chunk::park): an idle thread (a pool's worker, a
  // data-loader thread) kept its 256 KiB, resident and counted against the
  // memory cap, until it exited, so that after a window with many threads a
  // later window under a smaller cap dropped every event of a new thread.
  // The owner moves to a new chunk when it next records
  // (leave_parked_chunk).
  void park_idle_chunk() noexcept;

  // ---- in a fork()'s child, before it runs on (it has one thread) ----
  // The forking thread's buffer: forgets what the parent recorded (it is in
  // the parent's collect), counters included, unmapping its chunks, and takes
  // the child's thread id. Events open at the fork stay open, since the child
  // goes on from there and ends them, but start at `fork_ticks`: before it
  // was the parent's time. (Another thread's buffer is simply deleted: that
  // thread does not exist in the child.)
  void adopt_in_forked_child(uint64_t tid, uint64_t fork_ticks) noexcept;

  // The C ABI's view of this buffer (pk_thread_writer_current).
  pk_thread_writer* writer() noexcept { return &w_; }

  // ---- collector side ----
  uint64_t tid() const noexcept { return tid_; }
  void set_name(const std::string& name);
  std::string name() const;
  // Held across fork() (see Recorder's fork handlers).
  void lock_name_for_fork() const { name_mutex_.lock(); }
  void unlock_name_after_fork() const { name_mutex_.unlock(); }
  bool exited() const noexcept { return exited_.load(std::memory_order_acquire); }
  uint32_t open_depth() const noexcept { return __atomic_load_n(&w_.depth, __ATOMIC_RELAXED); }
  // Complete host records written (a group counts once).
  uint64_t recorded_events() const noexcept { return __atomic_load_n(&w_.recorded, __ATOMIC_RELAXED); }
  uint32_t window() const noexcept { return window_snapshot_.load(std::memory_order_relaxed); }
  // The events open at the end of `window` (a closed one) are to be
  // reported as unfinished once, by the collect that takes the window's
  // end. The owner, moving on to a new window (start_window), and the
  // collector race to claim them: true for the one that does, which reports
  // them (the owner carries them to the next collect: see
  // take_carried_unfinished). Cold: once per window, on either side.
  bool claim_window_end(uint32_t window) noexcept;
  // Events the owner left open in windows it moved on from, claimed and
  // not yet reported (collector).
  uint64_t take_carried_unfinished() noexcept { return carried_unfinished_.exchange(0, std::memory_order_relaxed); }
  // Calls visit(records, n, parked) for every record not yet collected,
  // oldest first, then recycles the chunks the owner has finished with: when
  // `keep_spares` up to kKeptSpares stay as this thread's spares and the rest
  // go to the ChunkPool (all of them if the thread has exited); otherwise
  // they are freed, as parked chunks always are; a finished chunk that
  // current_ still names waits (still_named_). `parked`: the records were
  // written into a parked chunk, by a call that read its recording window
  // before profiling closed and wrote after the chunk was parked: they are
  // to be discarded, since a page of them may have been given back as they
  // were written (see chunk.h). Returns true when the buffer is fully
  // drained and its thread has exited (the registry may then delete it).
  template <class Visit>
  bool drain(bool keep_spares, Visit&& visit);

  OwnerCounter dropped_events;
  OwnerCounter unmatched_ends;
  OwnerCounter overflowed_events;
  OwnerCounter lost_args;  // arguments past the memory cap (their events may be kept)

  // recorded_events already collected (a group of records counts once), for
  // sizing the next collect (collector only).
  uint64_t collected_records = 0;
  // Counter values already reported in earlier results (collector only).
  uint64_t reported_dropped = 0;
  uint64_t reported_unmatched = 0;
  uint64_t reported_overflowed = 0;
  uint64_t reported_lost_args = 0;
  // Events the collector dropped itself (a name that could not be interned,
  // record_conversion.cpp), for the engine-wide counters (collector only).
  uint64_t dropped_at_collect = 0;
  // Arguments of events still open at the last collect (collector only).
  OpenEventArgs open_event_args;

 private:
  PK_COLD void start_window(uint32_t window) noexcept;
  // The owner, before it records in a new window (start_window) or writes a
  // group (try_append_group, which memory events reach without
  // start_window): a parked chunk goes to the collector, which unmaps it,
  // and the next record takes a new one. Cold.
  void leave_parked_chunk() noexcept;
  PK_NOINLINE PK_COLD bool next_chunk(uint32_t needed) noexcept;
  Chunk* take_spare() noexcept;
  static void drain_one(Chunk* chunk, const RawRecord** first, uint32_t* n) noexcept;

  // No chunk (the memory cap, or the thread's last one given up at exit).
  void forget_chunk() noexcept {
    chunk_ = nullptr;
    set_records(nullptr);
    w_.committed = nullptr;
    w_.count = w_.capacity = 0;
  }

  // The writer's fields the owner reads and writes, by their engine types.
  uint32_t depth() const noexcept { return open_depth(); }
  void set_depth(uint32_t d) noexcept { __atomic_store_n(&w_.depth, d, __ATOMIC_RELAXED); }
  RawRecord* records() const noexcept { return reinterpret_cast<RawRecord*>(w_.records); }
  void set_records(RawRecord* records) noexcept { w_.records = reinterpret_cast<uint64_t*>(records); }
  // A plain load and store (the owner is the only writer), not a locked add.
  void count_recorded(uint64_t n) noexcept {
    __atomic_store_n(&w_.recorded, __atomic_load_n(&w_.recorded, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
  }

  // Moves the uncollected records of the owner's last chunk, when they fill
  // little of it, into exit_records_ and gives the chunk up (see
  // on_thread_exit).
  void shrink_last_chunk_at_exit() noexcept;
  void free_exit_records() noexcept;

  Chunk* own_spares_ = nullptr;  // owner

  // shared with the collector
  std::atomic<uint32_t> window_snapshot_{0};
  std::atomic<uint32_t> claimed_window_end_{0};  // the last window claim_window_end gave
  std::atomic<uint64_t> carried_unfinished_{0};
  std::atomic<Chunk*> current_{nullptr};
  // Collector only: chunks a drain took finished while current_ still named
  // them (the owner between completed_.push and current_.store in
  // next_chunk, which may map a chunk meanwhile). They wait for a later
  // drain, when current_ names another, to be recycled: the collector reads
  // current_ (the next drain, park_idle_chunk) and must never find there a
  // chunk unmapped, or pooled and handed to another thread.
  Chunk* still_named_ = nullptr;
  ChunkStack completed_;
  ChunkStack spares_;
  std::atomic<bool> exited_{false};
  // The newest records of an exited thread (after every chunk's), written by
  // the owner at exit and read by the collector, both under the registry's
  // lock; their bytes are counted against the memory cap.
  RawRecord* exit_records_ = nullptr;
  uint32_t exit_record_count_ = 0;

  uint64_t tid_;  // changed only in a fork()'s child, which has no other thread
  mutable std::mutex name_mutex_;
  std::string name_;
};

// The writer's records are RawRecords (the header documents the same words).
static_assert(sizeof(RawRecord) == PK_WRITER_RECORD_WORDS * sizeof(uint64_t), "a writer record is a RawRecord");
static_assert(offsetof(pk_thread_writer, stack) == 48, "the writer's first open event shares its cache line");
static_assert(ThreadBuffer::kMaxDepth == PK_WRITER_MAX_DEPTH, "the writer's stack is the buffer's");

// The calling thread's buffer, or nullptr before its first record. Set
// together with pk_thread_writer_current (the C ABI's view of the same
// buffer: its writer), and cleared with it when the thread exits.
extern PK_TLS_FAST ThreadBuffer* t_thread_buffer;

// Slow path of the first record on a thread: creates and registers its
// buffer. nullptr when the thread is exiting or memory ran out.
PK_NOINLINE PK_COLD ThreadBuffer* attach_current_thread() noexcept;

PK_ALWAYS_INLINE ThreadBuffer* current_thread_buffer() noexcept {
  ThreadBuffer* tb = t_thread_buffer;
  return PK_LIKELY(tb != nullptr) ? tb : attach_current_thread();
}

// ---- template implementation ----

template <class Visit>
bool ThreadBuffer::drain(bool keep_spares, Visit&& visit) {
  const bool was_exited = exited();
  Chunk* named_before = still_named_;
  still_named_ = nullptr;
  // Chunks the owner finished, then the one it writes now, then any it
  // finished meanwhile (see chunk.h: together they cover every record).
  Chunk* finished[2] = {completed_.take_all(), nullptr};
  Chunk* current = current_.load(std::memory_order_acquire);
  finished[1] = completed_.take_all();

  auto consume = [&](Chunk* c) {
    const RawRecord* first = nullptr;
    uint32_t n = 0;
    drain_one(c, &first, &n);
    if (n > 0) visit(first, n, c->is_parked());
  };
  uint32_t kept = 0;
  auto recycle = [&](Chunk* c) {
    if (!was_exited && c == current_.load(std::memory_order_acquire)) {
      c->next = still_named_;  // see still_named_
      still_named_ = c;
    } else if (!keep_spares || c->is_parked()) {
      Chunk::release(c);
    } else if (was_exited || kept == kKeptSpares) {
      ChunkPool::put(c);  // for any thread, a new one too
    } else {
      spares_.push(c);
      ++kept;
    }
  };
  while (named_before != nullptr) {  // finished and drained already
    Chunk* next = named_before->next;
    recycle(named_before);
    named_before = next;
  }
  for (Chunk* list : finished) {
    // The stacks are LIFO; reverse to read oldest first.
    Chunk* reversed = nullptr;
    while (list != nullptr) {
      Chunk* next = list->next;
      list->next = reversed;
      reversed = list;
      list = next;
    }
    while (reversed != nullptr) {
      Chunk* next = reversed->next;
      consume(reversed);
      if (reversed == current) current = nullptr;  // finished after all
      recycle(reversed);
      reversed = next;
    }
  }
  if (current != nullptr) consume(current);
  if (was_exited && exit_record_count_ > 0)
    visit(static_cast<const RawRecord*>(exit_records_), exit_record_count_, false);
  if (!was_exited) {
    if (!keep_spares) {
      for (Chunk* c = spares_.take_all(); c != nullptr;) {
        Chunk* next = c->next;
        Chunk::release(c);
        c = next;
      }
    }
    return false;
  }
  // The owner is gone: nothing else will be written.
  if (current != nullptr) recycle(current);
  current_.store(nullptr, std::memory_order_relaxed);
  for (Chunk* c = spares_.take_all(); c != nullptr;) {
    Chunk* next = c->next;
    recycle(c);
    c = next;
  }
  free_exit_records();
  return true;
}

}  // namespace profkit
