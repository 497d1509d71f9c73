/* A framework hook in plain C99: nested events from several threads, steps,
 * collect, save, export, reload — using nothing but <profkit/profkit.h>.
 * Usage: c_api_program OUTPUT_DIR. Exits non-zero on the first failure. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <profkit/profkit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ITERATIONS 1000

static int failures = 0;

#define CHECK(cond)                                                                                                \
  do {                                                                                                             \
    if (!(cond)) {                                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; pk_last_error: %s\n", __FILE__, __LINE__, #cond, pk_last_error()); \
      ++failures;                                                                                                  \
    }                                                                                                              \
  } while (0)

static pk_name_id g_forward, g_matmul, g_relu;

static void* worker(void* arg) {
  char name[32];
  int i;
  const int id = *(const int*)arg;
  snprintf(name, sizeof name, "worker %d", id);
  CHECK(pk_set_thread_name(name) == PK_OK);
  for (i = 0; i < ITERATIONS; ++i) {
    if (id % 2 == 0) {
      pk_begin_event(g_forward, PK_EVENT_FORWARD);
      pk_begin_event(g_matmul, PK_EVENT_OPERATOR);
      pk_event_arg_int(pk_intern("flops"), 2 * i);
      pk_end_event();
      pk_begin_event_str("aten::relu", PK_EVENT_OPERATOR);
      pk_end_event();
      pk_end_event();
    } else {
      /* The same events through the thread writer (1.17), mixed with the
       * calls: begun one way and ended the other, they still pair. */
      PK_BEGIN_EVENT_INLINE(g_forward, PK_EVENT_FORWARD);
      PK_BEGIN_EVENT_INLINE(g_matmul, PK_EVENT_OPERATOR);
      pk_event_arg_int(pk_intern("flops"), 2 * i); /* attaches to the event begun inline */
      PK_END_EVENT_INLINE();
      pk_begin_event_str("aten::relu", PK_EVENT_OPERATOR);
      PK_END_EVENT_INLINE();
      pk_end_event();
    }
  }
#if PK_INLINE_WRITER
  /* The thread's writer exists after its first event and records this window. */
  CHECK(pk_thread_writer_current != NULL);
  CHECK(pk_thread_writer_current != NULL && pk_thread_writer_current->inline_window == pk_recording_word);
  CHECK(pk_thread_writer_current != NULL && pk_thread_writer_current->depth == 0);
#endif
  return NULL;
}

int main(int argc, char** argv) {
  pthread_t threads[THREADS];
  int ids[THREADS];
  int t;
  size_t count = 0, i;
  const pk_host_event* events;
  pk_result* result = NULL;
  pk_result* loaded = NULL;
  pk_result_info info;
  char trace_path[4096], json_path[4096], stacks_path[4096];
  const char* dir = argc > 1 ? argv[1] : ".";

  CHECK((pk_api_version() >> 16) == PK_API_VERSION_MAJOR);
  CHECK((pk_api_version() & 0xFFFFu) >= 17u); /* the thread writer */
  /* The frozen record layouts, as the header states them. */
  CHECK(sizeof(pk_host_event) == 24 && sizeof(pk_event_arg) == 24 && sizeof(pk_memory_event) == 48);
  CHECK(sizeof(pk_device_event) == 48 && sizeof(pk_kernel_detail) == 48 && sizeof(pk_memory_op_detail) == 16);
  g_forward = pk_intern("Forward");
  g_matmul = pk_intern("aten::matmul");
  g_relu = pk_intern("aten::relu");
  CHECK(g_forward != 0 && g_matmul != g_forward);

  CHECK(pk_set_state(PK_STATE_READY) == PK_OK);
  CHECK(pk_set_state(PK_STATE_RECORD) == PK_OK);
  CHECK(pk_step_begin(0) == PK_OK);
  for (t = 0; t < THREADS; ++t) {
    ids[t] = t;
    CHECK(pthread_create(&threads[t], NULL, worker, &ids[t]) == 0);
  }
  for (t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  CHECK(pk_step(64) == PK_OK); /* ends ProfileStep#0, begins #1 */
  {
    /* A framework's data loading (1.5): one Dataloader event, reader time. */
    const uint64_t reader_before = pk_reader_time_ns();
    pk_data_loading_begin(pk_intern("DataLoader"));
    pk_data_loading_begin(pk_intern("inner")); /* part of the outer range */
    CHECK(pk_data_loading_depth() == 2);       /* 1.14 */
    pk_data_loading_end();
    pk_data_loading_end();
    CHECK(pk_data_loading_depth() == 0);
    CHECK(pk_reader_time_ns() > reader_before);
    CHECK(pk_thread_reader_time_ns() > 0); /* this thread's own (1.11) */
  }
  pk_instant_event(pk_intern("checkpoint"), PK_EVENT_USER_DEFINED);
  { /* An event recorded after it ended (1.22). */
    const uint64_t started = pk_now_ns();
    pk_complete_event(pk_intern("whole"), PK_EVENT_PYTHON_OP, started, pk_now_ns());
  }
  { /* The same, timed in the engine's raw ticks (1.23). */
    const uint64_t started = pk_now_ticks();
    pk_complete_event_ticks(pk_intern("whole in ticks"), PK_EVENT_PYTHON_OP, started, pk_now_ticks());
  }
  /* C lets an enum argument hold any int (1.6): no type becomes UserDefined. */
  pk_begin_event(pk_intern("odd type"), (pk_event_type)-3);
  pk_end_event();
  pk_begin_event(pk_intern("odd type"), (pk_event_type)256);
  pk_end_event();
  CHECK(pk_set_state((pk_state)-1) == PK_ERR_INVALID_ARGUMENT);
  CHECK(strstr(pk_last_error(), "-1 is not a pk_state") != NULL);
  CHECK(strcmp(pk_status_string((pk_status)-5), "PK_ERR_UNKNOWN") == 0);
  CHECK(pk_event_type_name((pk_event_type)-1) == NULL);
  CHECK(pk_step_end(64) == PK_OK);
  PK_END_EVENT_INLINE(); /* unmatched: counted, harmless (through pk_end_event) */
  CHECK(pk_set_state(PK_STATE_CLOSED) == PK_OK);
  PK_END_EVENT_INLINE(); /* not recording: nothing at all */

  CHECK(pk_collect(&result) == PK_OK);
  events = pk_result_host_events(result, &count);
  /* 3 events per iteration per worker; 2 steps, 1 data loading, 1 instant, 2 whole and 2 of odd types on main. */
  CHECK(count == (size_t)(THREADS * ITERATIONS * 3 + 8));
  CHECK(pk_result_thread_count(result) == THREADS + 1);
  for (i = 0; i < count; ++i) {
    /* Result string ids belong to the result: compare the text. */
    const char* name = pk_result_string(result, events[i].name);
    if (strcmp(name, "aten::relu") == 0) CHECK(events[i].depth == 1);
    if (strcmp(name, "Forward") == 0) CHECK(events[i].depth == 0);
    if (strcmp(name, "DataLoader") == 0) CHECK(events[i].type == PK_EVENT_DATALOADER);
    if (strcmp(name, "odd type") == 0) CHECK(events[i].type == PK_EVENT_USER_DEFINED);
    if (strcmp(name, "whole") == 0) CHECK(events[i].type == PK_EVENT_PYTHON_OP && events[i].depth == 1);
    if (strcmp(name, "whole in ticks") == 0) CHECK(events[i].type == PK_EVENT_PYTHON_OP && events[i].depth == 1);
    CHECK(strcmp(name, "inner") != 0);
  }
  {
    /* A "flops" argument per matmul, however the matmul began. */
    size_t args = 0, flops = 0;
    const pk_event_arg* arg = pk_result_event_args(result, &args);
    for (i = 0; i < args; ++i) flops += strcmp(pk_result_string(result, arg[i].key), "flops") == 0;
    CHECK(flops == (size_t)(THREADS * ITERATIONS));
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK(pk_result_get_info(result, &info) == PK_OK);
  CHECK(info.unmatched_ends == 1);
  CHECK(info.step_count == 2 && info.first_step == 0);

  snprintf(trace_path, sizeof trace_path, "%s/c_program.pktrace", dir);
  snprintf(json_path, sizeof json_path, "%s/c_program.trace.json", dir);
  CHECK(pk_result_save(result, trace_path) == PK_OK);
  CHECK(pk_result_export_chrome(result, json_path) == PK_OK);
  /* Folded stacks for flamegraph.pl (1.22); a C caller may pass any int as the metric. */
  snprintf(stacks_path, sizeof stacks_path, "%s/c_program.stacks", dir);
  CHECK(pk_result_export_stacks(result, stacks_path, PK_STACKS_SELF_CPU) == PK_OK);
  CHECK(pk_result_export_stacks(result, stacks_path, PK_STACKS_SELF_DEVICE) == PK_OK);
  CHECK(pk_result_export_stacks(result, stacks_path, (pk_stacks_metric)7) == PK_ERR_INVALID_ARGUMENT);
  CHECK(strstr(pk_last_error(), "PK_STACKS_SELF_CPU") != NULL);
  CHECK(pk_result_load(trace_path, &loaded) == PK_OK);
  {
    size_t loaded_count = 0;
    const pk_host_event* again = pk_result_host_events(loaded, &loaded_count);
    CHECK(loaded_count == count);
    CHECK(loaded_count == count && memcmp(again, events, count * sizeof *events) == 0);
  }
  /* The summary tables of the loaded result, as a framework would print them. */
  {
    pk_summary_options options;
    char* text = NULL;
    size_t length = 0;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    pk_summary_options_init(&options);
    options.views = PK_VIEW_BIT(PK_VIEW_OPERATOR) | PK_VIEW_BIT(PK_VIEW_MODEL);
    options.sorted_by = PK_SORT_CPU_AVG;
    CHECK(pk_result_summary_text(loaded, &options, &text, &length) == PK_OK);
    CHECK(text != NULL && strlen(text) == length);
    CHECK(text != NULL && strstr(text, "Operator Summary") != NULL && strstr(text, "aten::matmul") != NULL);
    pk_string_free(text);
    options.time_unit = 17;
    text = NULL;
    CHECK(pk_result_summary_json(loaded, &options, &text, NULL) == PK_ERR_INVALID_ARGUMENT && text == NULL);
  }
  /* Errors come back as statuses with messages. */
  {
    pk_result* missing = NULL;
    CHECK(pk_result_load("/nonexistent/x.pktrace", &missing) == PK_ERR_NOT_FOUND);
    CHECK(missing == NULL);
    CHECK(strstr(pk_last_error(), "/nonexistent/x.pktrace") != NULL);
    /* The system call's errno beside the message (1.14). */
    CHECK(pk_last_error_errno() == ENOENT);
    CHECK(pk_result_save(result, "/nonexistent/x.pktrace") == PK_ERR_NOT_FOUND);
    CHECK(pk_last_error_errno() == ENOENT);
    CHECK(pk_result_save(result, dir) == PK_ERR_IO); /* a directory */
    CHECK(pk_last_error_errno() == EISDIR);
    CHECK(strstr(pk_last_error(), "is a directory; give a file path") != NULL);
    CHECK(pk_result_load(NULL, &missing) == PK_ERR_INVALID_ARGUMENT);
    CHECK(pk_last_error_errno() == 0); /* not a system call's failure */
  }
  pk_result_release(loaded);
  pk_result_release(result);
  if (failures == 0) printf("c_api_program: all checks passed (%lu events)\n", (unsigned long)count);
  return failures == 0 ? 0 : 1;
}
