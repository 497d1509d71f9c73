/*
 * profkit — the stable C ABI of libprofkit.so.
 *
 * This header is the only surface of the profiler engine. It is plain C99, needs
 * nothing but <stddef.h> and <stdint.h>, and is safe to include from C++.
 *
 * VERSIONING
 *   pk_api_version() returns (major << 16) | minor. Programs compiled against
 *   major 1 keep working with every later 1.x library:
 *   - a minor bump may add functions, enum values and fields at the END of
 *     structs that begin with `struct_size`; it never changes or removes
 *     anything that exists;
 *   - structs that start with `size_t struct_size` are versioned by that field:
 *     the caller sets it to sizeof the struct it was compiled with, and the
 *     library reads/writes only the fields that fit (an options struct whose
 *     struct_size ends inside one of its fields is PK_ERR_INVALID_ARGUMENT);
 *   - an enum argument may hold any int; values that are no enumerator are
 *     refused or counted as documented for each function, never trusted;
 *   - record structs without struct_size (pk_host_event and friends) are frozen
 *     layouts; they never change within major 1.
 *   Every bump is listed in capi/CHANGELOG.md.
 *   A program built against a newer minor that must also run on an older
 *   library checks pk_api_version() before calling a function marked
 *   "since 1.x", and zeroes any struct whose newer fields it reads (an older
 *   library leaves fields it does not know as the caller set them). Under
 *   immediate binding (-Wl,-z,now, LD_BIND_NOW) a missing function fails at
 *   load time instead: declare such functions weak (#pragma weak) or look
 *   them up with dlsym.
 *
 * ERRORS
 *   No C++ exception ever crosses this boundary. Functions that can fail return a
 *   pk_status; on failure pk_last_error() returns a message that names what
 *   failed and what to do about it. The hot-path functions (pk_begin_event,
 *   pk_end_event, pk_instant_event) never fail: problems are counted instead and
 *   reported in pk_counters and in every pk_result.
 *
 * THREADS
 *   Every function is safe to call from any thread unless its comment says
 *   otherwise. Begin/end pairs belong to the thread that made them and nest
 *   last-in-first-out on that thread.
 *
 * SIGNALS
 *   No function is async-signal-safe except reading PK_IS_RECORDING() and
 *   pk_now_ns(). A signal handler that records can interrupt the same
 *   thread's recording and corrupt its buffer (a crash at the next
 *   pk_collect), and a thread's first record allocates.
 *
 * OWNERSHIP
 *   Pointers passed in are borrowed for the duration of the call. A pk_result*
 *   returned through an out-parameter is owned by the caller and released with
 *   pk_result_release(). Pointers returned by pk_result_* accessors are borrowed
 *   from that result and stay valid until it is released.
 *
 * CLOCK
 *   All timestamps are nanoseconds on the engine clock: CLOCK_MONOTONIC (read
 *   through a calibrated TSC where the CPU has an invariant one). Every result
 *   carries clock_offset_ns so that wall-clock time = engine time + offset, which
 *   lines up traces of several processes and hosts.
 */
#ifndef PROFKIT_PROFKIT_H_
#define PROFKIT_PROFKIT_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define PK_API
#elif defined(PROFKIT_BUILDING_LIBRARY)
#define PK_API __attribute__((visibility("default")))
#else
#define PK_API
#endif

#ifdef __cplusplus
#define PK_NOEXCEPT noexcept
extern "C" {
#else
#define PK_NOEXCEPT
#endif

#define PK_API_VERSION_MAJOR 1
#define PK_API_VERSION_MINOR 27
#define PK_API_VERSION ((PK_API_VERSION_MAJOR << 16) | PK_API_VERSION_MINOR)

/* ------------------------------------------------------------------------- */
/* Types                                                                     */
/* ------------------------------------------------------------------------- */

/* A small, stable id for an interned name. 0 is the empty name. 0xFFFFFFFF is
 * never a name's id: the engine marks with it an event whose name could not be
 * interned, and collects drop such an event and count it (since 1.26). */
typedef uint32_t pk_name_id;

/* What an event marks. The values are fixed forever. */
typedef enum pk_event_type {
  PK_EVENT_OPERATOR = 0,
  PK_EVENT_DATALOADER = 1,
  PK_EVENT_PROFILE_STEP = 2,
  PK_EVENT_CUDA_RUNTIME = 3,
  PK_EVENT_KERNEL = 4,
  PK_EVENT_MEMCPY = 5,
  PK_EVENT_MEMSET = 6,
  PK_EVENT_USER_DEFINED = 7,
  PK_EVENT_OPERATOR_INNER = 8,
  PK_EVENT_FORWARD = 9,
  PK_EVENT_BACKWARD = 10,
  PK_EVENT_OPTIMIZATION = 11,
  PK_EVENT_COMMUNICATION = 12,
  PK_EVENT_PYTHON_OP = 13,
  PK_EVENT_PYTHON_USER_DEFINED = 14,
  /* Not a type: keeps the enum 32 bits wide in every compiler, so any value a
   * C caller passes is representable (out-of-range types are sanitized). */
  PK_EVENT_TYPE_MAX_ENUM = 0x7FFFFFFF
} pk_event_type;
#define PK_EVENT_TYPE_COUNT 15

/* Recording state. RECORD and RECORD_AND_RETURN both record; the difference is
 * the caller's (a scheduler's) intent to collect at the end of the step. */
typedef enum pk_state {
  PK_STATE_CLOSED = 0,
  PK_STATE_READY = 1,
  PK_STATE_RECORD = 2,
  PK_STATE_RECORD_AND_RETURN = 3,
  PK_STATE_MAX_ENUM = 0x7FFFFFFF /* not a state: keeps the enum 32 bits wide */
} pk_state;

/* 0 is success; every other value comes with a message in pk_last_error(). */
typedef enum pk_status {
  PK_OK = 0,
  PK_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, an out-of-range value */
  PK_ERR_NOT_FOUND = 2,        /* a file that does not exist (loading), or a
                                * directory that does not exist (writing:
                                * saving or exporting into a missing folder) */
  PK_ERR_IO = 3,               /* a read, write, rename or mmap failed */
  PK_ERR_CORRUPT = 4,          /* empty, truncated, corrupt or not a profkit file */
  PK_ERR_VERSION = 5,          /* a profkit file from a newer, incompatible version */
  PK_ERR_TOO_LARGE = 6,        /* the result does not fit one trace file */
  PK_ERR_OUT_OF_MEMORY = 7,
  PK_ERR_INVALID_STATE = 8,       /* a call that makes no sense in the current state */
  PK_ERR_INTERNAL = 9,            /* a bug in profkit: please report it */
  PK_ERR_UNSUPPORTED = 10,        /* not available here (e.g. GPU tracing without CUDA) */
  PK_STATUS_MAX_ENUM = 0x7FFFFFFF /* not a status: keeps the enum 32 bits wide */
} pk_status;

/* A collected (or loaded) trace. Opaque; owned by whoever received it. */
typedef struct pk_result pk_result;

/* ------------------------------------------------------------------------- */
/* Version and errors                                                        */
/* ------------------------------------------------------------------------- */

/* (major << 16) | minor of the library actually loaded. Thread-safe. */
PK_API uint32_t pk_api_version(void) PK_NOEXCEPT;

/* The profkit release, e.g. "0.1.0". Static storage; never freed. Thread-safe. */
PK_API const char* pk_version_string(void) PK_NOEXCEPT;

/* This thread's last failure, human-readable, or "" if none. The pointer stays
 * valid until the next failing call on this thread. Thread-safe (per thread). */
PK_API const char* pk_last_error(void) PK_NOEXCEPT;

/* The errno of the system call behind this thread's last failure (ENOENT,
 * EACCES, ENOTDIR, EISDIR, ENOSPC, ...), or 0 when that failure was not a
 * failed system call (a corrupt file, an invalid argument) or nothing has
 * failed yet. Set together with pk_last_error() by the same failing call, so
 * the two always describe the same failure; successful calls leave both as
 * they were. Lets a binding raise the OS's own error kind (Python's
 * PermissionError, FileNotFoundError, ...) without parsing the message.
 * Mostly set by PK_ERR_NOT_FOUND and PK_ERR_IO. Thread-safe (per thread).
 * Since 1.14. */
PK_API int pk_last_error_errno(void) PK_NOEXCEPT;

/* The text name of a status ("PK_ERR_CORRUPT"). Static storage. Thread-safe. */
PK_API const char* pk_status_string(pk_status status) PK_NOEXCEPT;

/* The event type's name as shown in traces and summaries ("Operator",
 * "ProfileStep", "PythonUserDefined"); NULL for a value out of range. */
PK_API const char* pk_event_type_name(pk_event_type type) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Names                                                                     */
/* ------------------------------------------------------------------------- */

/* Interns a UTF-8 name and returns its id; the same text always gives the same
 * id for the life of the process. NULL or "" give 0. Thread-safe; takes a lock,
 * so intern names once (at registration) and pass ids on the hot path. Returns
 * 0 and sets pk_last_error() (PK_ERR_OUT_OF_MEMORY) if memory runs out or the
 * process's name table is full (4,194,304 names: intern stable names, not
 * per-call strings such as addresses). */
PK_API pk_name_id pk_intern(const char* utf8_name) PK_NOEXCEPT;

/* The text of an interned id, or NULL for an id never returned by pk_intern.
 * Interned text lives as long as the process. Thread-safe. */
PK_API const char* pk_name_string(pk_name_id id) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Recording: the hot path                                                   */
/* ------------------------------------------------------------------------- */

/* Opens an event on the calling thread. When not recording it costs one
 * relaxed atomic load and a branch. While recording it never allocates in
 * steady state, never locks and never fails: past the memory cap, or deeper
 * than the nesting limit, the event is dropped and counted. A `type` that is
 * no pk_event_type is recorded as PK_EVENT_USER_DEFINED. Thread-safe; the
 * event belongs to the calling thread. */
PK_API void pk_begin_event(pk_name_id name, pk_event_type type) PK_NOEXCEPT;

/* Closes the calling thread's innermost open event and records it as one
 * complete record. An end with no open event is counted (unmatched_ends),
 * never a crash. Same cost rules as pk_begin_event. */
PK_API void pk_end_event(void) PK_NOEXCEPT;

/* pk_begin_event with the name given as text: interned through a per-thread
 * cache (no lock once a name has been seen by the thread). NULL is "". A name
 * that cannot be interned (see pk_intern) drops the event, counted in
 * dropped_events when collected, and sets pk_last_error() on the calling
 * thread (since 1.26; before, the event was recorded as "" uncounted). */
PK_API void pk_begin_event_str(const char* utf8_name, pk_event_type type) PK_NOEXCEPT;

/* The recording word: nonzero exactly while recording (it holds the id of the
 * current recording window). Hooks that want no call at all when profiling is
 * off test it inline through PK_BEGIN_EVENT / PK_END_EVENT below — one load
 * and a branch at the call site. Read-only for everyone but the engine. */
#ifdef PROFKIT_BUILDING_LIBRARY
PK_API extern volatile uint32_t pk_recording_word;
#else
PK_API extern const volatile uint32_t pk_recording_word;
#endif

/* Call-free when not recording; same meaning as pk_begin_event/pk_end_event.
 * Pairs must use the same form (an end skipped while idle is not counted). */
#define PK_IS_RECORDING() (pk_recording_word != 0)
#define PK_BEGIN_EVENT(name, type)                         \
  do {                                                     \
    if (PK_IS_RECORDING()) pk_begin_event((name), (type)); \
  } while (0)
#define PK_END_EVENT()                     \
  do {                                     \
    if (PK_IS_RECORDING()) pk_end_event(); \
  } while (0)

/* ---- Recording without a call: the thread writer (since 1.17) ------------
 *
 * A hook that records every operator of a framework spends much of what it
 * costs on instruction-cache misses: between two operators the framework's
 * own code evicts most of L1i, so every cache line an event executes tends to
 * miss, and a call into libprofkit adds the library's lines to the hook's.
 * PK_BEGIN_EVENT_INLINE / PK_END_EVENT_INLINE record the common case in the
 * caller's own code instead: they write the calling thread's pk_thread_writer,
 * which is the engine's own per-thread buffer (pk_begin_event uses the same
 * code below), and fall back to pk_begin_event / pk_end_event for everything
 * else (the thread's first event, a new window, a full buffer, too deep a
 * nesting, a clock other than the TSC). Events recorded either way pair with
 * each other: one begun inline may end through pk_end_event and vice versa.
 *
 * Where the inline path exists (PK_INLINE_WRITER is 1: x86-64, little-endian,
 * GCC or Clang), the macros read pk_recording_word, the exported thread-local
 * pk_thread_writer_current and the writer; elsewhere they are plain calls.
 * The same rules as pk_begin_event hold: pairs nest last-in-first-out on one
 * thread, no allocation, no lock, nothing fails (problems are counted).
 *
 * The layout of pk_thread_writer and of its records is frozen within major 1.
 * It belongs to the engine: callers use the functions below and write no
 * field themselves. Thread-safety: a writer is its thread's alone; the
 * engine's collector reads it through `committed` (release/acquire).
 * A program that uses the macros refers to pk_thread_writer_current, so it
 * loads only with a 1.17 or later library; one that must also run with older
 * ones defines PK_NO_INLINE_WRITER before including this header (the macros
 * are then the calls). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(PK_NO_INLINE_WRITER)
#define PK_INLINE_WRITER 1
#else
#define PK_INLINE_WRITER 0
#endif

#define PK_WRITER_MAX_DEPTH 256 /* open events a writer holds; deeper ones take pk_begin_event */
#define PK_WRITER_RECORD_WORDS 3

/* One open event: its start and its record's last word but the depth. */
typedef struct pk_writer_open_event {
  uint64_t start_ticks;
  uint64_t tail;
} pk_writer_open_event;

/* A thread's record buffer. A record is PK_WRITER_RECORD_WORDS 64-bit words:
 * start ticks, end ticks (the TSC), then the tail: name id in bits 0-31, event
 * type in 32-39, nesting depth in 40-47, record kind (0: a complete event) in
 * 48-63. */
typedef struct pk_thread_writer {
  uint32_t window;        /* engine: the recording window the buffer is in */
  uint32_t inline_window; /* the window inline writes may record in; 0: none */
  uint32_t depth;         /* events open on the thread (relaxed atomic) */
  uint32_t count;         /* records in `records` */
  uint32_t capacity;      /* room in `records`, in records */
  uint32_t reserved;
  uint64_t* records;
  uint32_t* committed; /* `count`, published to the collector (release store) */
  uint64_t recorded;   /* complete records written (relaxed atomic) */
  pk_writer_open_event stack[PK_WRITER_MAX_DEPTH];
} pk_thread_writer;

#if PK_INLINE_WRITER
/* The calling thread's writer; NULL until its first event through
 * pk_begin_event (or any other recording call) and after it exits. A
 * thread's writer stays at the same address for as long as the thread runs,
 * so a hook may keep the pointer by its own thread id rather than read this
 * thread-local, which from another shared library costs a TLS descriptor
 * call. */
__extension__ PK_API extern __thread pk_thread_writer* pk_thread_writer_current;

/* The common case of pk_begin_event on `w` for the recording window `window`
 * (pk_recording_word, read by the caller): 1 when recorded, 0 (nothing done)
 * when pk_begin_event must take the event. */
static inline int pk_writer_try_begin(pk_thread_writer* w, uint32_t window, pk_name_id name, pk_event_type type) {
  const uint32_t depth = __atomic_load_n(&w->depth, __ATOMIC_RELAXED);
  /* A type that is no pk_event_type is clamped as pk_begin_event clamps it. */
  const uint32_t type_bits = (uint32_t)type > 255u ? 255u : (uint32_t)type;
  if (__builtin_expect(w->inline_window != window || depth >= PK_WRITER_MAX_DEPTH, 0)) return 0;
  __atomic_store_n(&w->depth, depth + 1, __ATOMIC_RELAXED);
  w->stack[depth].start_ticks = __builtin_ia32_rdtsc();
  w->stack[depth].tail = (uint64_t)name | (uint64_t)type_bits << 32;
  return 1;
}

/* The common case of pk_end_event: 1 when recorded, 0 (nothing done) when
 * pk_end_event must take it. */
static inline int pk_writer_try_end(pk_thread_writer* w, uint32_t window) {
  const uint64_t now = __builtin_ia32_rdtsc(); /* first: the event ends here */
  const uint32_t depth = __atomic_load_n(&w->depth, __ATOMIC_RELAXED);
  const uint32_t count = w->count;
  /* depth - 1 wraps when no event is open: pk_end_event counts that. */
  if (__builtin_expect(w->inline_window != window || depth - 1 >= PK_WRITER_MAX_DEPTH || count == w->capacity, 0)) {
    return 0;
  }
  __atomic_store_n(&w->depth, depth - 1, __ATOMIC_RELAXED);
  uint64_t* record = w->records + (size_t)count * PK_WRITER_RECORD_WORDS;
  record[0] = w->stack[depth - 1].start_ticks;
  record[1] = now;
  record[2] = w->stack[depth - 1].tail | (uint64_t)(depth - 1) << 40;
  w->count = count + 1;
  __atomic_store_n(w->committed, count + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&w->recorded, __atomic_load_n(&w->recorded, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  return 1;
}

#define PK_BEGIN_EVENT_INLINE(name, type)                                                     \
  do {                                                                                        \
    const uint32_t pk_window_ = pk_recording_word;                                            \
    if (pk_window_ != 0) {                                                                    \
      pk_thread_writer* const pk_writer_ = pk_thread_writer_current;                          \
      if (pk_writer_ == NULL || !pk_writer_try_begin(pk_writer_, pk_window_, (name), (type))) \
        pk_begin_event((name), (type));                                                       \
    }                                                                                         \
  } while (0)
#define PK_END_EVENT_INLINE()                                                               \
  do {                                                                                      \
    const uint32_t pk_window_ = pk_recording_word;                                          \
    if (pk_window_ != 0) {                                                                  \
      pk_thread_writer* const pk_writer_ = pk_thread_writer_current;                        \
      if (pk_writer_ == NULL || !pk_writer_try_end(pk_writer_, pk_window_)) pk_end_event(); \
    }                                                                                       \
  } while (0)
#else
#define PK_BEGIN_EVENT_INLINE(name, type) PK_BEGIN_EVENT(name, type)
#define PK_END_EVENT_INLINE() PK_END_EVENT()
#endif

/* Records a zero-duration event at the current time on the calling thread. */
PK_API void pk_instant_event(pk_name_id name, pk_event_type type) PK_NOEXCEPT;

/* Records an event that has already ended, from start_ns to end_ns (times
 * from pk_now_ns()), on the calling thread (since 1.22). It is not on the
 * thread's stack of open events, so it pairs with nothing: the result nests
 * it among the thread's other events by time alone, and one that overlaps an
 * event without containing it or being contained sits beside it. For a
 * tracer that learns of an event's start only when it ends, or that cannot
 * keep begin/end last-in-first-out with the events around it (profkit's
 * Python call tracer, with_stack). An end before the start is recorded as
 * zero-length at the start. No argument attaches to it. Recorded only while
 * recording: the caller is to take start_ns inside the window. Same cost
 * rules as pk_begin_event. */
PK_API void pk_complete_event(pk_name_id name, pk_event_type type, uint64_t start_ns, uint64_t end_ns) PK_NOEXCEPT;

/* pk_complete_event with its times in the engine's raw clock ticks, from
 * pk_now_ticks() (since 1.23): the same event, converted to ns when the
 * result is made, as begin/end events are. Where the engine clock is the
 * TSC, reading it costs a fraction of pk_now_ns(); profkit's Python call
 * tracer takes two readings per call. Ticks taken on another machine, or
 * from any other clock, are meaningless here. */
PK_API void pk_complete_event_ticks(pk_name_id name, pk_event_type type, uint64_t start_ticks,
                                    uint64_t end_ticks) PK_NOEXCEPT;

/* Attaches a key/value argument to the calling thread's innermost open event
 * (for example input shapes or a collective's byte count). Ignored when not
 * recording or when no event is open. The key and a string value are interned
 * (a lock the first time a value is seen), so keep string values repetitive.
 * An argument attached to an event still open at a pk_collect comes with that
 * event in the result that takes it (since 1.14; before, it was lost); if the
 * event never ends in a recording window, its arguments are counted in
 * pk_result_info.lost_event_args. Since 1.26 an argument that finds no room
 * under the memory cap is counted there too (before, in dropped_events, as if
 * it were an event), and so is a pk_event_arg_str whose value cannot be
 * interned (the name table is full; before, the value was recorded as ""). */
PK_API void pk_event_arg_int(pk_name_id key, int64_t value) PK_NOEXCEPT;
PK_API void pk_event_arg_str(pk_name_id key, const char* utf8_value) PK_NOEXCEPT;

/* The current time on the engine clock, in ns. Thread-safe. */
PK_API uint64_t pk_now_ns(void) PK_NOEXCEPT;

/* The engine clock's raw reading, for pk_complete_event_ticks (since 1.23):
 * the TSC where the engine times events with it (an invariant TSC on
 * x86-64), otherwise CLOCK_MONOTONIC in ns. Only differences of readings on
 * this machine mean anything, and only through the engine. Thread-safe. */
PK_API uint64_t pk_now_ticks(void) PK_NOEXCEPT;

/* Names the calling thread in traces ("DataLoader worker 0"). Copies the text.
 * Thread-safe. */
PK_API pk_status pk_set_thread_name(const char* utf8_name) PK_NOEXCEPT;

/* Data loading: what the training loop waits for to get its next batch
 * (since 1.5). pk_data_loading_begin opens a data-loading range on the
 * calling thread and pk_data_loading_end closes it. The outermost range on a
 * thread is timed whether or not profkit records, and its time is added to
 * the process's reader time; while recording it is also a PK_EVENT_DATALOADER
 * event named `name` (kept only when it begins and ends in the same recording
 * window). Ranges opened inside it are part of it: they record nothing and add
 * no time of their own, so a framework's range and a user's may both mark the
 * same fetch. An end with no open range is ignored. Cost: two CLOCK_MONOTONIC
 * reads per outermost range, plus an event pair while recording. Thread-safe;
 * ranges belong to the calling thread. */
PK_API void pk_data_loading_begin(pk_name_id name) PK_NOEXCEPT;
PK_API void pk_data_loading_end(void) PK_NOEXCEPT;

/* How many data-loading ranges are open on the calling thread (0: none), since
 * 1.14: a framework hook asks it to tell work done while a batch is fetched
 * (a transform module in a Dataset) from the model's own. Thread-safe; the
 * calling thread's own count, a thread-local read. */
PK_API uint32_t pk_data_loading_depth(void) PK_NOEXCEPT;

/* The process's reader time: ns spent in outermost data-loading ranges, by
 * every thread, since the library was loaded. A step's reader cost is the
 * difference between two reads (benchmark mode reads it at step boundaries).
 * Thread-safe (since 1.5). */
PK_API uint64_t pk_reader_time_ns(void) PK_NOEXCEPT;

/* The calling thread's reader time: ns spent in its own outermost
 * data-loading ranges since it began. What a training loop waited for its
 * batches: a thread that fetches batches in the background (a prefetcher)
 * adds to pk_reader_time_ns but not to the loop thread's. Benchmark mode reads
 * this one, on the thread that calls its step. Thread-safe (since 1.11). */
PK_API uint64_t pk_thread_reader_time_ns(void) PK_NOEXCEPT;

/* Records an allocation (bytes > 0) or a free (bytes < 0) of `address` on
 * `device` (-1 for host memory), with the allocator's totals after it, for the
 * Memory summary. Same cost rules as pk_begin_event. */
PK_API void pk_record_memory(int32_t device, uint64_t address, int64_t bytes, uint64_t total_allocated,
                             uint64_t total_reserved) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* State and steps                                                           */
/* ------------------------------------------------------------------------- */

/* Moves the engine to `state`. CLOSED -> READY arms the tracers (GPU tracing
 * warms up) and keeps nothing; entering RECORD or RECORD_AND_RETURN from a
 * non-recording state opens a new recording window; leaving them closes it
 * (what was recorded waits for pk_collect). Since 1.18, leaving CLOSED and
 * each window's start and end map record buffers for the next window ahead
 * (as many as the last window took: 2-32 MiB, at most half of what the
 * memory cap leaves; counted in memory_used), so that recording threads do
 * not map them mid-window; entering CLOSED unmaps the unused ones. Since
 * 1.26 entering CLOSED, and each pk_collect while CLOSED, also gives back the
 * record buffer of every live thread whose records have all been collected,
 * all but its first page, which alone stays counted in memory_used; the
 * thread takes a new buffer when it next records. Before, a thread that had
 * recorded kept its 256 KiB, counted against the cap, until it exited. A
 * record that a call which read the recording state before the window closed
 * writes after its buffer was given back goes to no result and is counted:
 * an event in unfinished_events, an argument in lost_event_args, a memory
 * event in dropped_events.
 * Thread-safe; serialized with pk_collect. */
PK_API pk_status pk_set_state(pk_state state) PK_NOEXCEPT;

/* (since 1.3) Called after every state change with the old and the new state. Frameworks
 * use it to arm costly hooks only while recording (a listener added while the
 * state is not CLOSED is called at once with (PK_STATE_CLOSED, current state),
 * so every listener sees a sequence of transitions that starts from CLOSED).
 * It runs on the thread that changed the state while state changes are
 * serialized: it must return quickly and must not call pk_set_state,
 * pk_collect, pk_step* or pk_add/remove_state_listener (since 1.25 they
 * return PK_ERR_INVALID_STATE there; before, they deadlocked), nor fork()
 * (since 1.12 fork() waits for the engine's locks; that would deadlock).
 * pk_current_step, pk_set_rank and pk_set_metadata may be called. */
typedef void (*pk_state_listener)(pk_state from, pk_state to, void* user_data);

/* (since 1.3) Registers `listener` (with `user_data`, passed back unchanged)
 * and stores a handle for pk_remove_state_listener in *handle. Thread-safe. */
PK_API pk_status pk_add_state_listener(pk_state_listener listener, void* user_data, uint64_t* handle) PK_NOEXCEPT;

/* (since 1.3) Unregisters a listener; after it returns the listener is not running and
 * will not be called again. An unknown handle is PK_ERR_INVALID_ARGUMENT.
 * Thread-safe. */
PK_API pk_status pk_remove_state_listener(uint64_t handle) PK_NOEXCEPT;

/* The current state. One relaxed atomic load. Thread-safe. */
PK_API pk_state pk_get_state(void) PK_NOEXCEPT;

/* Ends "ProfileStep#n" (with num_samples attached, 0 for unknown; since 1.26
 * a num_samples above INT64_MAX is recorded as INT64_MAX: an argument's value
 * is an int64_t, and larger counts read back as negative) and begins
 * "ProfileStep#n+1" at the same instant, on the calling thread. The first call
 * without an open step begins ProfileStep#<current step>. Steps are kept in the
 * result only while recording. Thread-safe, but steps are one sequence per
 * process: call it from the training loop's thread. */
PK_API pk_status pk_step(uint64_t num_samples) PK_NOEXCEPT;

/* Finer control for drivers that change state between steps (the Python
 * Profiler does): pk_step_begin(n) begins ProfileStep#n; pk_step_end ends the
 * open step. pk_step_end without an open step is PK_ERR_INVALID_STATE.
 * pk_step_begin while a step is open first ends that step (with num_samples
 * 0, as pk_step would), so it is kept; before 1.9 it was silently lost.
 * n must be at most INT64_MAX (PK_ERR_INVALID_ARGUMENT since 1.13): larger
 * numbers read as negative in signed 64-bit readers (JSON, numpy), and the
 * steps after UINT64_MAX were numbered from 0 again. A pk_step that would
 * begin a step past INT64_MAX (after ProfileStep#INT64_MAX) is
 * PK_ERR_INVALID_ARGUMENT too (since 1.14) and changes nothing: the open step
 * stays open and pk_step_end ends it; pk_step_begin starts a new numbering. */
PK_API pk_status pk_step_begin(uint64_t step_number) PK_NOEXCEPT;
PK_API pk_status pk_step_end(uint64_t num_samples) PK_NOEXCEPT;

/* The number of the open (or next) step. Thread-safe. At most INT64_MAX:
 * after ProfileStep#INT64_MAX has ended it stays INT64_MAX (since 1.16;
 * before, INT64_MAX + 1, which signed readers saw as negative). */
PK_API uint64_t pk_current_step(void) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* GPU tracing                                                               */
/* ------------------------------------------------------------------------- */

/* Whether GPU tracing (CUPTI) can work in this process: 1 if it can, 0 if not.
 * When `reason` is not NULL it receives a sentence saying why not (or what was
 * found), e.g. "no CUDA driver (libcuda.so.1 not found)"; static storage,
 * valid for the life of the process and readable from any thread (before
 * 1.14 it was freed when the calling thread exited). Probes once and caches the answer; the probe
 * loads libraries but does not initialize the CUDA driver. A problem found
 * later, when tracing was turned on (another CUPTI subscriber, missing
 * profiling privileges), replaces the answer. Thread-safe. */
PK_API int32_t pk_gpu_available(const char** reason) PK_NOEXCEPT;

/* Turns GPU tracing on or off for the recording windows that follow (off by
 * default). Turning it on initializes the CUDA driver and attaches to CUPTI;
 * where that cannot work it is PK_ERR_UNSUPPORTED with the reason in
 * pk_last_error(); CPU recording is unaffected either way. Kernels still
 * running when recording stops are only caught if the caller synchronizes the
 * device first (cudaDeviceSynchronize / torch.cuda.synchronize). Entering
 * PK_STATE_CLOSED detaches from CUPTI before pk_set_state returns (since
 * 1.19; before, at the program's next CUDA call), so that the program runs
 * untraced and another profiler (torch.profiler, Nsight) can attach at once;
 * the next window attaches again. Turning tracing off detaches likewise.
 * Since 1.27 kernels launched through the CUDA driver API (cuBLAS, Triton)
 * are tied to a CUDA_RUNTIME event named for the driver call
 * ("cuLaunchKernel"), as runtime launches are; $PROFKIT_CUPTI_DRIVER=0 leaves
 * them unattached, =all records every driver call.
 * Thread-safe; serialized with pk_set_state. */
PK_API pk_status pk_set_gpu_tracing(int32_t enabled) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Configuration, metadata and counters                                      */
/* ------------------------------------------------------------------------- */

/* Caps the memory that recorded events may use (bytes; default 1 GiB). The
 * cap counts every record buffer (256 KiB each) that any thread holds, plus
 * the free ones kept for reuse: one cap for the whole process, not per
 * thread. A cap below one buffer is PK_ERR_INVALID_ARGUMENT, so one buffer
 * in total can be had, but not one per recording thread: with a cap of N
 * buffers, a thread that needs a buffer while N are held drops its events
 * (counted) even if it has recorded nothing yet. Past the cap events are
 * dropped and counted; steps (ProfileStep) are kept (since 1.8). Thread-safe; takes
 * effect for the next buffer a thread needs, and (since 1.18) unmaps at once
 * free buffers that a lowered cap no longer covers. */
PK_API pk_status pk_set_memory_cap(uint64_t bytes) PK_NOEXCEPT;
PK_API uint64_t pk_get_memory_cap(void) PK_NOEXCEPT;

/* Rank and world size of this process in a distributed job (-1 for unknown).
 * They go into every later result and into default file names. Thread-safe. */
PK_API pk_status pk_set_rank(int32_t rank, int32_t world_size) PK_NOEXCEPT;

/* Free-form run metadata copied into every later result (for example "model"
 * -> "resnet50"). Setting a key again replaces its value; a NULL value removes
 * it. Thread-safe. */
PK_API pk_status pk_set_metadata(const char* key, const char* value) PK_NOEXCEPT;

/* Engine-wide counters since the process started. */
typedef struct pk_counters {
  size_t struct_size;         /* set by the caller to sizeof(pk_counters) */
  uint64_t recorded_events;   /* complete host records written */
  uint64_t dropped_events;    /* dropped because the memory cap was reached; since 1.26 also, once collected,
                                 events whose name could not be interned */
  uint64_t unmatched_ends;    /* pk_end_event with no open event */
  uint64_t overflowed_events; /* dropped because nesting exceeded the limit */
  uint64_t memory_used;       /* bytes of record buffers held now */
  uint64_t memory_cap;        /* the current cap */
} pk_counters;

/* Fills `out` (its struct_size set by the caller). Thread-safe. */
PK_API pk_status pk_get_counters(pk_counters* out) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Collecting, saving, exporting, loading                                    */
/* ------------------------------------------------------------------------- */

/* Takes everything recorded since the last collect (including all threads that
 * have exited) into a new result owned by the caller. Works while recording
 * and after pk_set_state(PK_STATE_CLOSED). Events still open are not included;
 * their number is reported as unfinished_events, with the step in progress
 * (pk_step_begin without its end, begun in this window) counted as one; a
 * window's open events are reported by the collect that takes its end, not
 * again by later collects. Thread-safe; collects are serialized.
 * In a fork()'s child (since 1.13) collects and pk_get_counters cover only
 * what the child recorded: the parent's uncollected records stay the
 * parent's; the forking thread's events carry the child's thread id, and
 * those open at the fork start there. */
PK_API pk_status pk_collect(pk_result** out) PK_NOEXCEPT;

/* Writes the result as a profkit trace file (FlatBuffers, .pktrace). The file
 * is written to a temporary name and renamed into place, so `path` never holds
 * half a file. Since 1.14: a symbolic link `path` is kept and the file it
 * points to is replaced (a temporary in that file's directory, renamed onto
 * it); an existing `path` that is neither a regular file nor a directory (a
 * FIFO, /dev/null, a character or block device) is opened and written in
 * place, without a temporary (an open that waits for a FIFO's reader waits
 * here too); a directory is PK_ERR_IO (errno EISDIR) before anything is
 * written. A missing directory is PK_ERR_NOT_FOUND; pk_last_error_errno()
 * gives the system call's errno of every failed open, write or rename.
 * Thread-safe for distinct paths. Since 1.26 the file is schema 2: it
 * carries a CRC-32C of its bytes (schemas/trace.fbs, Trace.checksum), which
 * pk_result_load checks; earlier loaders read it as before (they skip the
 * checksum). */
PK_API pk_status pk_result_save(const pk_result* r, const char* path) PK_NOEXCEPT;

/* Writes the result as Chrome-trace JSON (chrome://tracing, ui.perfetto.dev),
 * streamed, through a temporary file renamed into place (links, FIFOs,
 * devices and directories as pk_result_save). Memory events are
 * counter tracks of the allocator's totals per device (since 1.7) and, since
 * 1.8, "[memory]" instants on the allocating thread with each one's address
 * and size. pk_result_load reads the file back (since 1.8). A result with a
 * time past INT64_MAX ns (an event recorded with times not from pk_now_ns,
 * such as pk_complete_event(..., 0, UINT64_MAX)) is PK_ERR_TOO_LARGE, before
 * any file is made (since 1.24; before, the file was written and load refused
 * it); pk_result_save keeps such a result. */
PK_API pk_status pk_result_export_chrome(const pk_result* r, const char* path) PK_NOEXCEPT;

typedef struct pk_chrome_options {
  size_t struct_size;      /* sizeof(pk_chrome_options) */
  int32_t label_durations; /* nonzero: names read "name[1.23 ms]" */
  int32_t include_flows;   /* nonzero (default): launch -> GPU flow arrows */
  /* 1.4: placing the trace in a timeline shared with other processes (what
   * `profkit merge` does). The defaults (all 0, pid -1, prefix NULL) leave the
   * trace as 1.0 wrote it. */
  int32_t use_time_base;     /* nonzero: "ts" 0 stands for time_base_wall_ns */
  int32_t sort_index_offset; /* added to every process sort index */
  /* Wall-clock ns (engine ns + the result's clock_offset_ns) at or before the
   * start of the result's trace: its recording window's start (start_ns), or
   * its first event where that is earlier (GPU work begun before the window);
   * a later base is PK_ERR_INVALID_ARGUMENT, and so (since 1.24) is a base so
   * early that the trace's last time lies more than INT64_MAX ns after it
   * (INT64_MIN, say), where the file's times would not load back. */
  int64_t time_base_wall_ns;
  /* >= 0: the host process's "pid" in the file (GPU d gets pid + 10000000 *
   * (d + 1)); -1: the OS pid. The top-level metadata keeps the OS pid. */
  int64_t pid;
  uint64_t flow_id_offset;          /* added to every flow arrow's id (ids start at 1) */
  const char* process_label_prefix; /* NULL, or UTF-8 text put before every process
                                     * name ("rank0: "); copied, borrowed for the call */
} pk_chrome_options;

/* Fills `options` with the defaults (its struct_size set by the caller). */
PK_API void pk_chrome_options_init(pk_chrome_options* options) PK_NOEXCEPT;

/* pk_result_export_chrome with options; NULL options means the defaults, and
 * so (as in 1.0-1.5, never broken since) does a struct_size smaller than the
 * struct_size field itself; one that ends inside a later field is
 * PK_ERR_INVALID_ARGUMENT. */
PK_API pk_status pk_result_export_chrome_ex(const pk_result* r, const char* path,
                                            const pk_chrome_options* options) PK_NOEXCEPT;

/* What pk_result_export_stacks adds up (since 1.22). */
typedef enum pk_stacks_metric {
  PK_STACKS_SELF_CPU = 0,                /* host events' self time (torch's "self_cpu_time_total") */
  PK_STACKS_SELF_DEVICE = 1,             /* GPU records' time under their launch ("self_cuda_time_total") */
  PK_STACKS_METRIC_MAX_ENUM = 0x7FFFFFFF /* not a metric: keeps the enum 32 bits wide */
} pk_stacks_metric;

/* Writes the result as folded stacks (since 1.22): the "collapsed" text that
 * flamegraph.pl (`flamegraph.pl --countname us. FILE > out.svg`) and
 * https://www.speedscope.app read, as torch.profiler's export_stacks writes
 * it. One line per distinct stack: its frames root-first joined by ';', a
 * space, and the time summed under it in whole microseconds (nearest, halves
 * up); lines are sorted by the stack text.
 *   PK_STACKS_SELF_CPU: each host event that is not an instant adds its self
 *     time (its duration less its direct children's, at least 0) under the
 *     names of its enclosing events on its thread (pk_result_parent) and its
 *     own. No frame names the thread. Since 1.26 each moment of a thread
 *     counts once, for the event started last among those running then:
 *     an event crossed by a later sibling that starts inside it and ends
 *     after it (events recorded whole: Python calls, ranges) keeps its time
 *     up to that start only, with its subtree, so the lines add up to the
 *     time the thread's events cover (before, the overlap counted twice).
 *     Without crossing events nothing changes. The Operator table's Self
 *     CPU follows the same rule.
 *   PK_STACKS_SELF_DEVICE: each kernel, memcpy and memset adds its duration
 *     under its launching runtime call's stack, with its own name as the last
 *     frame; GPU work whose launch was not captured goes under the frame
 *     "[GPU work with no launching call]".
 * Stacks whose time rounds to 0 µs are left out (an empty result gives an
 * empty file). "ProfileStep#<n>" steps are the frame "ProfileStep", so a
 * window's steps make one flame. In names ';' becomes ':' and line breaks
 * spaces; an empty name is "[unnamed]".
 * The file is written through a temporary renamed into place (links, FIFOs,
 * devices and directories as pk_result_save), so `path` never holds half a
 * file. A NULL r or path, or a metric that is not a pk_stacks_metric, is
 * PK_ERR_INVALID_ARGUMENT; a path that cannot be written is PK_ERR_IO
 * (PK_ERR_NOT_FOUND for a missing directory) with the system call's errno in
 * pk_last_error_errno(). Thread-safe for distinct paths. */
PK_API pk_status pk_result_export_stacks(const pk_result* r, const char* path, pk_stacks_metric metric) PK_NOEXCEPT;

/* Loads a .pktrace file (read into memory, verified) or, since 1.8, a Chrome
 * trace JSON file that profkit wrote (pk_result_export_chrome; streamed and
 * checked against the counts in its "profkit" object), told apart by the
 * file's first byte. A missing file is PK_ERR_NOT_FOUND; a file that cannot be
 * opened or read (a directory, no permission) PK_ERR_IO, both with the system
 * call's errno in pk_last_error_errno() (since 1.14); an empty, truncated,
 * corrupt or foreign file (torch.profiler's JSON, a profkit merge timeline)
 * PK_ERR_CORRUPT; a file from a newer profkit PK_ERR_VERSION; in every
 * failure *out is left NULL and nothing is leaked. Since 1.26 a .pktrace of
 * schema 2 or later whose bytes do not give the checksum stored with them
 * (any byte changed after it was written) is PK_ERR_CORRUPT; schema 1 files
 * (written before 1.26) carry none and load unchecked. Thread-safe. */
PK_API pk_status pk_result_load(const char* path, pk_result** out) PK_NOEXCEPT;

/* Frees a result. NULL is ignored. Not safe while another thread uses `r`. */
PK_API void pk_result_release(pk_result* r) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Reading a result                                                          */
/* ------------------------------------------------------------------------- */
/* All accessors are read-only and safe to call from several threads at once
 * on the same result. Returned pointers are borrowed from the result. */

/* Frozen record layouts, identical in memory and on disk, without padding;
 * each comment states the struct's size. */

/* Frozen 24-byte layout. */
typedef struct pk_host_event {
  uint64_t start_ns; /* engine clock */
  uint64_t end_ns;   /* == start_ns for instant events */
  uint32_t name;     /* index into the result's string table */
  uint8_t type;      /* pk_event_type */
  uint8_t depth;     /* nesting depth on its thread, 0 = outermost; saturates at 255 */
  uint16_t flags;    /* PK_HOST_EVENT_* */
} pk_host_event;
#define PK_HOST_EVENT_INSTANT 0x1

typedef enum pk_arg_kind { PK_ARG_INT = 0, PK_ARG_STRING = 1, PK_ARG_KIND_MAX_ENUM = 0x7FFFFFFF } pk_arg_kind;

/* Frozen 24-byte layout. */
typedef struct pk_event_arg {
  uint64_t event; /* index into pk_result_host_events */
  uint32_t key;   /* string table index */
  uint32_t kind;  /* pk_arg_kind */
  int64_t value;  /* the integer, or a string table index */
} pk_event_arg;

/* Frozen 48-byte layout. */
typedef struct pk_memory_event {
  uint64_t time_ns;
  uint64_t address;
  int64_t bytes;            /* > 0 allocation, < 0 free */
  uint64_t total_allocated; /* allocator's total after this event */
  uint64_t total_reserved;
  uint32_t thread; /* index into the thread table */
  int32_t device;  /* -1 = host memory */
} pk_memory_event;

/* GPU activity (kernels, memcpys, memsets) on one lane per device stream.
 * Frozen 48-byte layout. */
typedef struct pk_device_event {
  uint64_t start_ns; /* engine clock */
  uint64_t end_ns;
  uint64_t launch_event;   /* host event index of the launching runtime call,
                              UINT64_MAX when that call was not captured */
  uint32_t name;           /* string table index (demangled kernel name, "Memcpy HtoD", ...) */
  uint32_t correlation_id; /* CUPTI correlation id */
  uint32_t stream;
  uint32_t context;
  uint16_t device;
  uint8_t type;    /* PK_EVENT_KERNEL, PK_EVENT_MEMCPY, PK_EVENT_MEMSET */
  uint8_t flags;   /* PK_DEVICE_EVENT_* */
  uint32_t detail; /* index into kernel details (kernels) or memory-op
                      details (memcpy/memset); UINT32_MAX for none */
} pk_device_event;
#define PK_DEVICE_EVENT_NO_TIMING 0x1 /* CUPTI gave no timestamps for it */
#define PK_NO_EVENT UINT64_MAX
#define PK_NO_DETAIL UINT32_MAX

/* Launch parameters and occupancy of a kernel. Frozen 48-byte layout. */
typedef struct pk_kernel_detail {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t registers_per_thread;
  uint32_t static_shared_memory;  /* bytes per block */
  uint32_t dynamic_shared_memory; /* bytes per block */
  float blocks_per_sm;            /* grid blocks / SM count */
  float warps_per_sm;             /* blocks_per_sm * warps per block */
  float occupancy;                /* theoretical, 0..1 (0 when unknown) */
} pk_kernel_detail;

/* Size and kinds of a memcpy or memset. Frozen 16-byte layout. */
typedef struct pk_memory_op_detail {
  uint64_t bytes;
  uint32_t value;    /* memset value */
  uint8_t copy_kind; /* CUPTI_ACTIVITY_MEMCPY_KIND_* (1 HtoD, 2 DtoH, 8 DtoD, ...) */
  uint8_t src_kind;  /* CUPTI_ACTIVITY_MEMORY_KIND_* */
  uint8_t dst_kind;
  uint8_t reserved;
} pk_memory_op_detail;

/* A GPU that appears in the result. */
typedef struct pk_device_info {
  size_t struct_size; /* sizeof(pk_device_info), set by the caller */
  int32_t id;
  const char* name;
  int32_t sm_count;
  int32_t compute_major;
  int32_t compute_minor;
  uint64_t total_memory;
  int32_t max_threads_per_sm;
  int32_t max_registers_per_sm;
  int32_t max_shared_memory_per_sm;
  int32_t max_blocks_per_sm;
  int32_t warp_size;
} pk_device_info;

/* Result-wide facts. */
typedef struct pk_result_info {
  size_t struct_size;          /* sizeof(pk_result_info), set by the caller */
  const char* profkit_version; /* of the profkit that recorded it */
  uint32_t schema_version;
  uint32_t pid;
  const char* hostname;
  int32_t rank;        /* -1 = unknown */
  int32_t world_size;  /* -1 = unknown */
  uint64_t span_index; /* 0 for the first collect of the process, then 1, 2, ... */
  uint64_t start_ns;   /* recording window (engine clock) */
  uint64_t end_ns;
  int64_t clock_offset_ns; /* wall-clock (UNIX epoch) ns = engine ns + offset */
  uint64_t host_event_count;
  uint64_t thread_count;
  uint64_t dropped_events; /* memory cap reached; since 1.26 also events whose name could not be interned
                              (pk_begin_event_str with the name table full) and memory events written in the
                              race at a close (see pk_set_state) */
  uint64_t unmatched_ends;
  uint64_t overflowed_events; /* nested past the depth limit (256 levels; since 1.24 also those recorded whole) */
  uint64_t unfinished_events; /* still open when collected */
  uint64_t device_event_count;
  uint64_t dropped_device_records;    /* lost by the GPU tracer (buffers full) */
  uint64_t unattached_device_records; /* GPU work whose launch was not captured */
  uint64_t first_step;                /* step range recorded, valid if step_count > 0 */
  uint64_t step_count;
  /* CPU time, for the Device summary: this process's user+system CPU time and
   * the machine's busy and idle time across the window, in ns. */
  uint64_t process_cpu_ns;
  uint64_t system_busy_ns;
  uint64_t system_idle_ns;
  uint32_t cpu_count;
  /* 1.14: arguments (pk_event_arg_int/str) in no result because their event
   * never ended inside a recording window: still open when the closed window
   * was collected, left open by a thread that exited, or dropped at the
   * memory cap (or, since 1.26, because its name could not be interned).
   * Since 1.26 also arguments that found no room under the memory cap
   * themselves (before, counted in dropped_events) or whose string value
   * could not be interned. */
  uint64_t lost_event_args;
} pk_result_info;

PK_API pk_status pk_result_get_info(const pk_result* r, pk_result_info* out) PK_NOEXCEPT;

/* The string table: every name and string value in the result. */
PK_API size_t pk_result_string_count(const pk_result* r) PK_NOEXCEPT;
PK_API const char* pk_result_string(const pk_result* r, size_t index) PK_NOEXCEPT;

/* Threads; their events are contiguous in the host event array, sorted by
 * start time (ties: outer event first). */
typedef struct pk_thread_info {
  size_t struct_size; /* sizeof(pk_thread_info), set by the caller */
  uint64_t tid;       /* OS thread id */
  const char* name;   /* "" when unnamed */
  uint64_t first_event;
  uint64_t event_count;
} pk_thread_info;

PK_API size_t pk_result_thread_count(const pk_result* r) PK_NOEXCEPT;
PK_API pk_status pk_result_get_thread(const pk_result* r, size_t index, pk_thread_info* out) PK_NOEXCEPT;

/* The host events of all threads (thread by thread), arguments and memory
 * events. *count receives the number of elements; the array may be NULL when
 * the count is 0. */
PK_API const pk_host_event* pk_result_host_events(const pk_result* r, size_t* count) PK_NOEXCEPT;
PK_API const pk_event_arg* pk_result_event_args(const pk_result* r, size_t* count) PK_NOEXCEPT;
PK_API const pk_memory_event* pk_result_memory_events(const pk_result* r, size_t* count) PK_NOEXCEPT;

/* The index of the innermost event that encloses host event `event` on its
 * thread, or UINT64_MAX for an outermost event or an index out of range.
 * O(1) per call: the first call on a result indexes the parents of all its
 * host events (O(n) time, 8 bytes per event, kept until the release). */
PK_API uint64_t pk_result_parent(const pk_result* r, uint64_t event) PK_NOEXCEPT;

/* GPU activity and the facts of each device. */
PK_API const pk_device_event* pk_result_device_events(const pk_result* r, size_t* count) PK_NOEXCEPT;
PK_API const pk_kernel_detail* pk_result_kernel_details(const pk_result* r, size_t* count) PK_NOEXCEPT;
PK_API const pk_memory_op_detail* pk_result_memory_op_details(const pk_result* r, size_t* count) PK_NOEXCEPT;
PK_API size_t pk_result_device_count(const pk_result* r) PK_NOEXCEPT;
PK_API pk_status pk_result_get_device(const pk_result* r, size_t index, pk_device_info* out) PK_NOEXCEPT;

/* Free-form metadata (pk_set_metadata) recorded with the result. */
PK_API size_t pk_result_metadata_count(const pk_result* r) PK_NOEXCEPT;
PK_API pk_status pk_result_metadata(const pk_result* r, size_t index, const char** key, const char** value) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Summary tables (since 1.1)                                                */
/* ------------------------------------------------------------------------- */
/* The tables of paddle.profiler's summary (Device, Overview, Model,
 * Distributed, Kernel, Operator, Memory, Memory Manipulation, UserDefined),
 * computed from a result — collected or loaded — by the engine, as text or as
 * JSON rows. Both functions only read the result: they are safe to call from
 * several threads at once on the same result. */

/* Row order of the name-keyed tables. The Min keys sort ascending, the
 * others descending. Values match Python's SortedKeys. */
typedef enum pk_sort_key {
  PK_SORT_CPU_TOTAL = 0,
  PK_SORT_CPU_AVG = 1,
  PK_SORT_CPU_MAX = 2,
  PK_SORT_CPU_MIN = 3,
  PK_SORT_GPU_TOTAL = 4,
  PK_SORT_GPU_AVG = 5,
  PK_SORT_GPU_MAX = 6,
  PK_SORT_GPU_MIN = 7,
  /* Since 1.21: self CPU time, the Operator table's "Self CPU Total"; the
   * other tables order by CPU total under it. Descending. */
  PK_SORT_CPU_SELF = 8,
  PK_SORT_KEY_MAX_ENUM = 0x7FFFFFFF /* not a key: keeps the enum 32 bits wide (since 1.15) */
} pk_sort_key;

/* The tables. Values match Python's SummaryView; select them in
 * pk_summary_options.views with PK_VIEW_BIT(view). */
typedef enum pk_summary_view {
  PK_VIEW_DEVICE = 0,
  PK_VIEW_OVERVIEW = 1,
  PK_VIEW_MODEL = 2,
  PK_VIEW_DISTRIBUTED = 3,
  PK_VIEW_KERNEL = 4,
  PK_VIEW_OPERATOR = 5,
  PK_VIEW_MEMORY = 6,
  PK_VIEW_MEMORY_MANIPULATION = 7,
  PK_VIEW_USER_DEFINED = 8,
  PK_VIEW_MAX_ENUM = 0x7FFFFFFF /* not a view: keeps the enum 32 bits wide (since 1.15) */
} pk_summary_view;
#define PK_SUMMARY_VIEW_COUNT 9
#define PK_VIEW_BIT(view) (1u << (unsigned)(view))

typedef enum pk_time_unit {
  PK_TIME_UNIT_S = 0,
  PK_TIME_UNIT_MS = 1,
  PK_TIME_UNIT_US = 2,
  PK_TIME_UNIT_NS = 3,
  PK_TIME_UNIT_MAX_ENUM = 0x7FFFFFFF /* not a unit: keeps the enum 32 bits wide (since 1.15) */
} pk_time_unit;

typedef struct pk_summary_options {
  size_t struct_size; /* sizeof(pk_summary_options), set by the caller */
  int32_t sorted_by;  /* pk_sort_key; default PK_SORT_CPU_TOTAL */
  int32_t op_detail;  /* nonzero (default): inner events and GPU work nested under each operator,
                       * and (since 1.7) the events memory was allocated in under each device */
  int32_t thread_sep; /* nonzero: Operator and UserDefined rows per thread; default 0 */
  int32_t time_unit;  /* pk_time_unit; default PK_TIME_UNIT_MS */
  uint32_t views;     /* OR of PK_VIEW_BIT(view); 0 (default) = every table */
  uint32_t row_limit; /* most top-level rows per table (per thread with thread_sep; Memory: event
                       * rows per device); 0 (default) = all */
  /* Since 1.21. Nonzero: one Operator row per name and input shapes (the
   * string argument "input_shapes", as profkit's PyTorch integration records
   * with record_shapes), with an "Input Shapes" column (JSON kind "text"; a
   * string, null where none was recorded); default 0. */
  int32_t group_by_input_shape;
  /* Since 1.22. N > 0: one Operator row per name and the innermost N Python
   * function frames around the call (PythonOp events, as profkit's
   * with_stack records them; built-in calls left out), with a "Source
   * Location" column (JSON kind "text"; null where no frame is around the
   * call), as torch.profiler's key_averages(group_by_stack_n=N); 0 (default):
   * off; at most 255. 64 bits wide so that it starts past the padding a 1.21
   * caller's struct ends with. */
  uint64_t group_by_stack_n;
} pk_summary_options;

/* Fills `options` with the defaults (its struct_size set by the caller).
 * Thread-safe. */
PK_API void pk_summary_options_init(pk_summary_options* options) PK_NOEXCEPT;

/* The summary tables as text, laid out like paddle.profiler's. `options` may
 * be NULL for the defaults. On success *out_text receives a NUL-terminated
 * string that the CALLER OWNS and frees with pk_string_free(); *out_length
 * (if out_length is not NULL) its length without the NUL. On failure
 * *out_text is NULL. An out-of-range option is PK_ERR_INVALID_ARGUMENT with
 * the valid values in pk_last_error(). An empty result gives tables that say
 * so, never an error. Since 1.8, a result that lost events (memory cap,
 * nesting limit, GPU buffers) starts with a "Warning: ..." line per kind of
 * loss. */
PK_API pk_status pk_result_summary_text(const pk_result* r, const pk_summary_options* options, char** out_text,
                                        size_t* out_length) PK_NOEXCEPT;

/* The same tables as JSON data, one object per table:
 *   {"format":"profkit-summary","version":1,"time_unit":"ms","total_time":..,
 *    "total_time_source":"ProfileStep"|"recorded span",
 *    "warnings":[".."],   (since 1.8: what the recording lost; empty if nothing)
 *    "tables":[{"view":"OverView","title":"Overview Summary",
 *               "columns":[..],"kinds":["label","count","time","percent","bytes","id","flops","text"],
 *               "nested":bool,"levels":[..],"rows":[[label, value, ..], ..],
 *               "notes":[..],"empty_reason":".."}, ..]}
 * Times are in the chosen unit, ratios in percent, missing values null.
 * Since 1.21, the Operator table has "Self CPU Total" and "Self CPU
 * Ratio(%)" columns after the CPU ones (time outside the events nested in
 * each call), and with group_by_input_shape an "Input Shapes" column last.
 * Since 1.20, the Operator table has a "FLOPs" column (kind "flops", whole
 * floating-point operations) when some event carries an integer "flops"
 * argument (pk_event_arg_int); the text shows it with a decimal prefix.
 * Ownership and errors as pk_result_summary_text. */
PK_API pk_status pk_result_summary_json(const pk_result* r, const pk_summary_options* options, char** out_json,
                                        size_t* out_length) PK_NOEXCEPT;

/* Frees a string returned by pk_result_summary_text / _json. NULL is
 * ignored. Thread-safe. */
PK_API void pk_string_free(char* text) PK_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PROFKIT_PROFKIT_H_ */
