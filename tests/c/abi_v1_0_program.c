/* A program written against the FIRST C ABI (1.0) header, kept verbatim in
 * tests/c/abi_v1_0/profkit/profkit.h, and run against the current library:
 * the header's promise is that a program compiled against major 1 keeps
 * working with every later 1.x library. Every 1.0 function and struct is used
 * here at its 1.0 size (the struct_size-first structs were shorter then), and
 * each behaviour the 1.0 header documents is checked.
 * Usage: abi_v1_0_program OUTPUT_DIR. Exits non-zero on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <profkit/profkit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PK_API_VERSION_MINOR != 0
#error "this program must be compiled against the 1.0 header (tests/c/abi_v1_0)"
#endif

static int failures = 0;

#define CHECK(cond)                                                                                                \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; pk_last_error: %s\n", __FILE__, __LINE__, #cond, pk_last_error()); \
      ++failures;                                                                                                  \
    }                                                                                                              \
  } while (0)

/* Guard bytes after each struct_size-first struct: the library must write
 * only the fields a 1.0 caller's struct_size covers. */
#define GUARD_BYTES 64
static int untouched(const unsigned char* guard) {
  int i;
  for (i = 0; i < GUARD_BYTES; ++i)
    if (guard[i] != 0xA5) return 0;
  return 1;
}

static pk_name_id g_op;

static void* worker(void* arg) {
  (void)arg;
  CHECK(pk_set_thread_name("v1.0 worker") == PK_OK);
  pk_begin_event(g_op, PK_EVENT_OPERATOR);
  pk_end_event();
  return NULL; /* exits while still recording: its events stay in the result */
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  char trace_path[4096], json_path[4096], json_ex_path[4096];
  pk_result* result = NULL;
  pk_result* loaded = NULL;
  pthread_t thread;
  size_t i, count = 0;
  const pk_host_event* events;
  pk_name_id key, forward;
  uint64_t t0;

  /* Version: major 1, some minor >= 0; the 1.0 helpers. */
  CHECK((pk_api_version() >> 16) == 1u);
  CHECK(pk_version_string() != NULL && pk_version_string()[0] != '\0');
  CHECK(strcmp(pk_last_error(), "") == 0); /* "" if nothing failed yet */
  CHECK(strcmp(pk_status_string(PK_ERR_CORRUPT), "PK_ERR_CORRUPT") == 0);
  CHECK(strcmp(pk_status_string(PK_ERR_UNSUPPORTED), "PK_ERR_UNSUPPORTED") == 0);
  CHECK(strcmp(pk_event_type_name(PK_EVENT_PROFILE_STEP), "ProfileStep") == 0);
  CHECK(strcmp(pk_event_type_name(PK_EVENT_PYTHON_USER_DEFINED), "PythonUserDefined") == 0);
  CHECK(pk_event_type_name((pk_event_type)15) == NULL);

  /* Names: NULL and "" are 0; the same text, the same id; unknown ids NULL. */
  CHECK(pk_intern(NULL) == 0 && pk_intern("") == 0);
  g_op = pk_intern("v1.0 op");
  CHECK(g_op != 0 && pk_intern("v1.0 op") == g_op);
  CHECK(strcmp(pk_name_string(g_op), "v1.0 op") == 0);
  CHECK(pk_name_string(0xFFFFFFF0u) == NULL);
  key = pk_intern("bytes");
  forward = pk_intern("Forward");

  /* Not recording: the hot path records nothing and the word reads 0. */
  CHECK(pk_get_state() == PK_STATE_CLOSED);
  CHECK(!PK_IS_RECORDING());
  pk_begin_event(g_op, PK_EVENT_OPERATOR);
  pk_end_event();

  /* Configuration. */
  CHECK(pk_get_memory_cap() == (uint64_t)1 << 30); /* the 1.0 default: 1 GiB */
  CHECK(pk_set_memory_cap(256u << 20) == PK_OK && pk_get_memory_cap() == 256u << 20);
  CHECK(pk_set_rank(0, 1) == PK_OK);
  CHECK(pk_set_metadata("model", "v1.0 net") == PK_OK);
  CHECK(pk_set_metadata("gone", "x") == PK_OK && pk_set_metadata("gone", NULL) == PK_OK);
  CHECK(pk_set_metadata(NULL, "x") == PK_ERR_INVALID_ARGUMENT);
  CHECK(strlen(pk_last_error()) > 0);
  {
    const char* reason = NULL;
    const int32_t available = pk_gpu_available(&reason);
    CHECK(available == 0 || available == 1);
    CHECK(reason != NULL && reason[0] != '\0');
    CHECK(pk_set_gpu_tracing(0) == PK_OK); /* off is always possible */
  }

  /* Recording. */
  CHECK(pk_set_state(PK_STATE_READY) == PK_OK && pk_get_state() == PK_STATE_READY);
  CHECK(pk_set_state(PK_STATE_RECORD) == PK_OK && pk_get_state() == PK_STATE_RECORD);
  CHECK(PK_IS_RECORDING());
  CHECK(pk_set_thread_name("v1.0 main") == PK_OK);
  t0 = pk_now_ns();
  CHECK(pk_step_begin(7) == PK_OK && pk_current_step() == 7);
  PK_BEGIN_EVENT(forward, PK_EVENT_FORWARD);
  pk_begin_event(g_op, PK_EVENT_OPERATOR);
  pk_event_arg_int(key, 4096);
  pk_event_arg_str(pk_intern("dtype"), "float32");
  pk_record_memory(-1, 0x1000, 4096, 4096, 8192);
  pk_record_memory(-1, 0x1000, -4096, 0, 8192);
  pk_end_event();
  pk_begin_event_str("v1.0 str", PK_EVENT_USER_DEFINED);
  pk_end_event();
  pk_begin_event_str(NULL, PK_EVENT_USER_DEFINED); /* NULL is "" */
  pk_end_event();
  PK_END_EVENT();
  pk_instant_event(pk_intern("v1.0 instant"), PK_EVENT_USER_DEFINED);
  CHECK(pthread_create(&thread, NULL, worker, NULL) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(pk_step(32) == PK_OK && pk_current_step() == 8); /* ends #7, begins #8 */
  CHECK(pk_step_end(32) == PK_OK);
  CHECK(pk_step_end(32) == PK_ERR_INVALID_STATE); /* no open step */
  CHECK(strlen(pk_last_error()) > 0);
  pk_end_event();                          /* unmatched: counted, never a crash */
  pk_begin_event(g_op, PK_EVENT_OPERATOR); /* left open: unfinished */
  {
    struct {
      pk_counters c;
      unsigned char guard[GUARD_BYTES];
    } counters;
    memset(&counters, 0xA5, sizeof counters);
    counters.c.struct_size = sizeof counters.c;
    CHECK(pk_get_counters(&counters.c) == PK_OK);
    CHECK(counters.c.struct_size == sizeof counters.c);
    CHECK(counters.c.recorded_events >= 8 && counters.c.unmatched_ends >= 1);
    CHECK(counters.c.memory_cap == 256u << 20 && counters.c.memory_used > 0);
    CHECK(untouched(counters.guard));
  }
  CHECK(pk_set_state(PK_STATE_RECORD_AND_RETURN) == PK_OK); /* still the same window */
  CHECK(pk_set_state(PK_STATE_CLOSED) == PK_OK && !PK_IS_RECORDING());
  pk_end_event(); /* closes the open one, outside the window: not recorded */

  CHECK(pk_collect(NULL) == PK_ERR_INVALID_ARGUMENT);
  CHECK(pk_collect(&result) == PK_OK && result != NULL);

  /* pk_result_info at its 1.0 size (192 bytes; 1.14 appended a field). */
  {
    struct {
      pk_result_info info;
      unsigned char guard[GUARD_BYTES];
    } in;
    memset(&in, 0xA5, sizeof in);
    in.info.struct_size = sizeof in.info;
    CHECK(sizeof in.info == 192);
    CHECK(pk_result_get_info(result, &in.info) == PK_OK);
    CHECK(untouched(in.guard));
    CHECK(in.info.struct_size == sizeof in.info);
    CHECK(in.info.rank == 0 && in.info.world_size == 1);
    CHECK(in.info.start_ns <= t0 && in.info.end_ns >= in.info.start_ns);
    CHECK(in.info.thread_count == 2);
    CHECK(in.info.unmatched_ends == 1 && in.info.unfinished_events == 1);
    CHECK(in.info.first_step == 7 && in.info.step_count == 2);
    CHECK(in.info.device_event_count == 0);
    CHECK(in.info.profkit_version != NULL && strcmp(in.info.profkit_version, pk_version_string()) == 0);
    CHECK(in.info.hostname != NULL && in.info.hostname[0] != '\0');
    count = 0;
    events = pk_result_host_events(result, &count);
    CHECK(in.info.host_event_count == count);
  }
  /* Forward, op, v1.0 str, "", instant, 2 steps on main; op on the worker. */
  CHECK(count == 8);
  {
    size_t threads = pk_result_thread_count(result), t, named = 0;
    for (t = 0; t < threads; ++t) {
      struct {
        pk_thread_info info;
        unsigned char guard[GUARD_BYTES];
      } th;
      memset(&th, 0xA5, sizeof th);
      th.info.struct_size = sizeof th.info;
      CHECK(pk_result_get_thread(result, t, &th.info) == PK_OK);
      CHECK(untouched(th.guard));
      CHECK(th.info.tid != 0 && th.info.first_event + th.info.event_count <= count);
      if (strcmp(th.info.name, "v1.0 main") == 0 || strcmp(th.info.name, "v1.0 worker") == 0) ++named;
    }
    CHECK(named == 2);
    CHECK(pk_result_get_thread(result, threads, NULL) == PK_ERR_INVALID_ARGUMENT);
  }
  {
    size_t n_strings = pk_result_string_count(result);
    int saw_op = 0, saw_step7 = 0, saw_instant = 0;
    for (i = 0; i < count; ++i) {
      const char* name = pk_result_string(result, events[i].name);
      CHECK(events[i].name < n_strings && name != NULL);
      if (name == NULL) continue;
      /* Steps enclose the events in them: op is ProfileStep > Forward > op. */
      if (strcmp(name, "v1.0 op") == 0 && events[i].depth == 2) {
        uint64_t parent = pk_result_parent(result, i);
        saw_op = 1;
        CHECK(parent != PK_NO_EVENT && strcmp(pk_result_string(result, events[parent].name), "Forward") == 0);
      }
      if (strcmp(name, "ProfileStep#7") == 0) saw_step7 = events[i].type == PK_EVENT_PROFILE_STEP;
      if (strcmp(name, "v1.0 instant") == 0) {
        saw_instant = 1;
        CHECK((events[i].flags & PK_HOST_EVENT_INSTANT) != 0 && events[i].start_ns == events[i].end_ns);
      }
    }
    CHECK(saw_op && saw_step7 && saw_instant);
    CHECK(pk_result_string(result, n_strings) == NULL);
    CHECK(pk_result_parent(result, count) == PK_NO_EVENT);
  }
  {
    size_t n = 0;
    const pk_event_arg* args = pk_result_event_args(result, &n);
    const pk_memory_event* mem;
    int ours = 0;
    CHECK(n == 4); /* ours, and each step's num_samples */
    for (i = 0; i < n; ++i) {
      const char* k = pk_result_string(result, args[i].key);
      CHECK(args[i].event < count);
      if (strcmp(k, "num_samples") == 0) continue;
      ++ours;
      if (strcmp(k, "bytes") == 0) CHECK(args[i].kind == PK_ARG_INT && args[i].value == 4096);
      if (strcmp(k, "dtype") == 0)
        CHECK(args[i].kind == PK_ARG_STRING && strcmp(pk_result_string(result, (size_t)args[i].value), "float32") == 0);
      CHECK(strcmp(pk_result_string(result, events[args[i].event].name), "v1.0 op") == 0);
    }
    CHECK(ours == 2);
    mem = pk_result_memory_events(result, &n);
    CHECK(n == 2 && mem[0].bytes == 4096 && mem[1].bytes == -4096 && mem[0].device == -1);
    CHECK(mem[0].total_reserved == 8192 && mem[0].address == 0x1000);
    CHECK(pk_result_device_events(result, &n) == NULL || n == 0);
    CHECK(n == 0);
    pk_result_kernel_details(result, &n);
    CHECK(n == 0);
    pk_result_memory_op_details(result, &n);
    CHECK(n == 0);
    CHECK(pk_result_device_count(result) == 0);
    {
      pk_device_info dev;
      memset(&dev, 0, sizeof dev);
      dev.struct_size = sizeof dev;
      CHECK(pk_result_get_device(result, 0, &dev) == PK_ERR_INVALID_ARGUMENT);
    }
  }
  {
    size_t m, n = pk_result_metadata_count(result);
    int saw_model = 0;
    for (m = 0; m < n; ++m) {
      const char *k = NULL, *v = NULL;
      CHECK(pk_result_metadata(result, m, &k, &v) == PK_OK);
      if (k != NULL && strcmp(k, "model") == 0) saw_model = strcmp(v, "v1.0 net") == 0;
      CHECK(k == NULL || strcmp(k, "gone") != 0);
    }
    CHECK(saw_model);
  }

  /* Saving, exporting (the 1.0 options struct is 16 bytes) and loading. */
  snprintf(trace_path, sizeof trace_path, "%s/abi_v1_0.pktrace", dir);
  snprintf(json_path, sizeof json_path, "%s/abi_v1_0.trace.json", dir);
  snprintf(json_ex_path, sizeof json_ex_path, "%s/abi_v1_0_ex.trace.json", dir);
  CHECK(pk_result_save(result, trace_path) == PK_OK);
  CHECK(pk_result_export_chrome(result, json_path) == PK_OK);
  {
    struct {
      pk_chrome_options o;
      unsigned char guard[GUARD_BYTES];
    } opt;
    memset(&opt, 0xA5, sizeof opt);
    opt.o.struct_size = sizeof opt.o;
    CHECK(sizeof opt.o == 16);
    pk_chrome_options_init(&opt.o);
    CHECK(untouched(opt.guard));
    CHECK(opt.o.struct_size == 16 && opt.o.label_durations == 0 && opt.o.include_flows == 1);
    opt.o.label_durations = 1;
    CHECK(pk_result_export_chrome_ex(result, json_ex_path, &opt.o) == PK_OK);
    CHECK(pk_result_export_chrome_ex(result, json_ex_path, NULL) == PK_OK);
  }
  CHECK(pk_result_load(trace_path, &loaded) == PK_OK);
  {
    size_t n = 0;
    const pk_host_event* again = pk_result_host_events(loaded, &n);
    CHECK(n == count && memcmp(again, events, count * sizeof *events) == 0);
  }
  pk_result_release(loaded);
  loaded = (pk_result*)1;
  CHECK(pk_result_load("/nonexistent/abi_v1_0.pktrace", &loaded) == PK_ERR_NOT_FOUND && loaded == NULL);
  CHECK(strstr(pk_last_error(), "/nonexistent/abi_v1_0.pktrace") != NULL);
  pk_result_release(NULL); /* ignored */
  pk_result_release(result);
  if (failures == 0)
    printf("abi_v1_0_program: all checks passed against libprofkit %s (ABI 1.%u)\n", pk_version_string(),
           (unsigned)(pk_api_version() & 0xFFFFu));
  return failures == 0 ? 0 : 1;
}
