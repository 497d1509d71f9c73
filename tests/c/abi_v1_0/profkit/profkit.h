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
 *     library reads/writes only the fields that fit;
 *   - record structs without struct_size (pk_host_event and friends) are frozen
 *     layouts; they never change within major 1.
 *   Every bump is listed in capi/CHANGELOG.md.
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
#define PK_API_VERSION_MINOR 0
#define PK_API_VERSION ((PK_API_VERSION_MAJOR << 16) | PK_API_VERSION_MINOR)

/* ------------------------------------------------------------------------- */
/* Types                                                                     */
/* ------------------------------------------------------------------------- */

/* A small, stable id for an interned name. 0 is the empty name. */
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
  PK_EVENT_PYTHON_USER_DEFINED = 14
} pk_event_type;
#define PK_EVENT_TYPE_COUNT 15

/* Recording state. RECORD and RECORD_AND_RETURN both record; the difference is
 * the caller's (a scheduler's) intent to collect at the end of the step. */
typedef enum pk_state {
  PK_STATE_CLOSED = 0,
  PK_STATE_READY = 1,
  PK_STATE_RECORD = 2,
  PK_STATE_RECORD_AND_RETURN = 3
} pk_state;

/* 0 is success; every other value comes with a message in pk_last_error(). */
typedef enum pk_status {
  PK_OK = 0,
  PK_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, an out-of-range value */
  PK_ERR_NOT_FOUND = 2,        /* a file that does not exist */
  PK_ERR_IO = 3,               /* a read, write, rename or mmap failed */
  PK_ERR_CORRUPT = 4,          /* empty, truncated, corrupt or not a profkit file */
  PK_ERR_VERSION = 5,          /* a profkit file from a newer, incompatible version */
  PK_ERR_TOO_LARGE = 6,        /* the result does not fit one trace file */
  PK_ERR_OUT_OF_MEMORY = 7,
  PK_ERR_INVALID_STATE = 8, /* a call that makes no sense in the current state */
  PK_ERR_INTERNAL = 9,      /* a bug in profkit: please report it */
  PK_ERR_UNSUPPORTED = 10   /* not available here (e.g. GPU tracing without CUDA) */
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
 * 0 and sets pk_last_error() if memory runs out. */
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
 * than the nesting limit, the event is dropped and counted. Thread-safe; the
 * event belongs to the calling thread. */
PK_API void pk_begin_event(pk_name_id name, pk_event_type type) PK_NOEXCEPT;

/* Closes the calling thread's innermost open event and records it as one
 * complete record. An end with no open event is counted (unmatched_ends),
 * never a crash. Same cost rules as pk_begin_event. */
PK_API void pk_end_event(void) PK_NOEXCEPT;

/* pk_begin_event with the name given as text: interned through a per-thread
 * cache (no lock once a name has been seen by the thread). NULL is "". */
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

/* Records a zero-duration event at the current time on the calling thread. */
PK_API void pk_instant_event(pk_name_id name, pk_event_type type) PK_NOEXCEPT;

/* Attaches a key/value argument to the calling thread's innermost open event
 * (for example input shapes or a collective's byte count). Ignored when not
 * recording or when no event is open. The key and a string value are interned
 * (a lock the first time a value is seen), so keep string values repetitive. */
PK_API void pk_event_arg_int(pk_name_id key, int64_t value) PK_NOEXCEPT;
PK_API void pk_event_arg_str(pk_name_id key, const char* utf8_value) PK_NOEXCEPT;

/* The current time on the engine clock, in ns. Thread-safe. */
PK_API uint64_t pk_now_ns(void) PK_NOEXCEPT;

/* Names the calling thread in traces ("DataLoader worker 0"). Copies the text.
 * Thread-safe. */
PK_API pk_status pk_set_thread_name(const char* utf8_name) PK_NOEXCEPT;

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
 * (what was recorded waits for pk_collect). Thread-safe; serialized with
 * pk_collect. */
PK_API pk_status pk_set_state(pk_state state) PK_NOEXCEPT;

/* The current state. One relaxed atomic load. Thread-safe. */
PK_API pk_state pk_get_state(void) PK_NOEXCEPT;

/* Ends "ProfileStep#n" (with num_samples attached, 0 for unknown) and begins
 * "ProfileStep#n+1" at the same instant, on the calling thread. The first call
 * without an open step begins ProfileStep#<current step>. Steps are kept in the
 * result only while recording. Thread-safe, but steps are one sequence per
 * process: call it from the training loop's thread. */
PK_API pk_status pk_step(uint64_t num_samples) PK_NOEXCEPT;

/* Finer control for drivers that change state between steps (the Python
 * Profiler does): pk_step_begin(n) begins ProfileStep#n; pk_step_end ends the
 * open step. pk_step_end without an open step is PK_ERR_INVALID_STATE. */
PK_API pk_status pk_step_begin(uint64_t step_number) PK_NOEXCEPT;
PK_API pk_status pk_step_end(uint64_t num_samples) PK_NOEXCEPT;

/* The number of the open (or next) step. Thread-safe. */
PK_API uint64_t pk_current_step(void) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* GPU tracing                                                               */
/* ------------------------------------------------------------------------- */

/* Whether GPU tracing (CUPTI) can work in this process: 1 if it can, 0 if not.
 * When `reason` is not NULL it receives a sentence saying why not (or what was
 * found), e.g. "no CUDA driver (libcuda.so.1 not found)"; static storage,
 * valid until the next call. Probes once and caches the answer. Thread-safe. */
PK_API int32_t pk_gpu_available(const char** reason) PK_NOEXCEPT;

/* Turns GPU tracing on or off for the recording windows that follow (off by
 * default). Turning it on where it cannot work is PK_ERR_UNSUPPORTED with the
 * reason in pk_last_error(); CPU recording is unaffected either way.
 * Thread-safe; serialized with pk_set_state. */
PK_API pk_status pk_set_gpu_tracing(int32_t enabled) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Configuration, metadata and counters                                      */
/* ------------------------------------------------------------------------- */

/* Caps the memory that recorded events may use (bytes; default 1 GiB, at least
 * one buffer chunk per recording thread). Past it events are dropped and
 * counted. Thread-safe; takes effect for the next buffer a thread needs. */
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
  uint64_t dropped_events;    /* dropped because the memory cap was reached */
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
 * their number is reported as unfinished_events. Thread-safe; collects are
 * serialized. */
PK_API pk_status pk_collect(pk_result** out) PK_NOEXCEPT;

/* Writes the result as a profkit trace file (FlatBuffers, .pktrace). The file
 * is written to a temporary name and renamed into place, so `path` never holds
 * half a file. Thread-safe for distinct paths. */
PK_API pk_status pk_result_save(const pk_result* r, const char* path) PK_NOEXCEPT;

/* Writes the result as Chrome-trace JSON (chrome://tracing, ui.perfetto.dev),
 * streamed, through a temporary file renamed into place. */
PK_API pk_status pk_result_export_chrome(const pk_result* r, const char* path) PK_NOEXCEPT;

typedef struct pk_chrome_options {
  size_t struct_size;      /* sizeof(pk_chrome_options) */
  int32_t label_durations; /* nonzero: names read "name[1.23 ms]" */
  int32_t include_flows;   /* nonzero (default): launch -> GPU flow arrows */
} pk_chrome_options;

/* Fills `options` with the defaults (its struct_size set by the caller). */
PK_API void pk_chrome_options_init(pk_chrome_options* options) PK_NOEXCEPT;

/* pk_result_export_chrome with options; NULL options means the defaults. */
PK_API pk_status pk_result_export_chrome_ex(const pk_result* r, const char* path,
                                            const pk_chrome_options* options) PK_NOEXCEPT;

/* Loads a .pktrace file (memory-mapped, verified). A missing file is
 * PK_ERR_NOT_FOUND; an empty, truncated, corrupt or foreign file PK_ERR_CORRUPT;
 * in every failure *out is left NULL and nothing is leaked. Thread-safe. */
PK_API pk_status pk_result_load(const char* path, pk_result** out) PK_NOEXCEPT;

/* Frees a result. NULL is ignored. Not safe while another thread uses `r`. */
PK_API void pk_result_release(pk_result* r) PK_NOEXCEPT;

/* ------------------------------------------------------------------------- */
/* Reading a result                                                          */
/* ------------------------------------------------------------------------- */
/* All accessors are read-only and safe to call from several threads at once
 * on the same result. Returned pointers are borrowed from the result. */

/* Frozen record layouts (24 bytes each), identical in memory and on disk. */
typedef struct pk_host_event {
  uint64_t start_ns; /* engine clock */
  uint64_t end_ns;   /* == start_ns for instant events */
  uint32_t name;     /* index into the result's string table */
  uint8_t type;      /* pk_event_type */
  uint8_t depth;     /* nesting depth on its thread, 0 = outermost; saturates at 255 */
  uint16_t flags;    /* PK_HOST_EVENT_* */
} pk_host_event;
#define PK_HOST_EVENT_INSTANT 0x1

typedef enum pk_arg_kind { PK_ARG_INT = 0, PK_ARG_STRING = 1 } pk_arg_kind;

typedef struct pk_event_arg {
  uint64_t event; /* index into pk_result_host_events */
  uint32_t key;   /* string table index */
  uint32_t kind;  /* pk_arg_kind */
  int64_t value;  /* the integer, or a string table index */
} pk_event_arg;

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
  uint64_t dropped_events; /* memory cap reached */
  uint64_t unmatched_ends;
  uint64_t overflowed_events;
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
 * O(depth) per call. */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PROFKIT_PROFKIT_H_ */
