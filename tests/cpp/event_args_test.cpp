// Event arguments across collects: an argument attached to an event that is
// still open when pk_collect runs arrives with that event in a later result,
// and one whose event can never end in a window is counted, never silently
// lost.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "profkit/profkit.h"
#include "recorder/recorder.h"
#include "test_support.h"
#include "trace/result.h"

namespace {

using profkit::Recorder;
using profkit::Result;
using profkit_test::answer_from;
using profkit_test::reset_engine;

class EventArgsTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override { reset_engine(); }
};

// The engine's own collect, so that counters the C ABI does not show yet
// (lost_event_args) can be read.
std::unique_ptr<Result> collect() { return Recorder::instance().collect(); }

// "key=value" for each argument of the event named `event`, in result order.
std::vector<std::string> args_of(const Result& r, const std::string& event) {
  std::vector<std::string> out;
  for (const pk_event_arg& a : r.event_args) {
    if (r.strings.view(r.host_events[a.event].name) != event) continue;
    const std::string value =
        a.kind == PK_ARG_STRING ? std::string(r.strings.view(static_cast<size_t>(a.value))) : std::to_string(a.value);
    out.push_back(std::string(r.strings.view(a.key)) + "=" + value);
  }
  return out;
}

size_t events_named(const Result& r, const std::string& name) {
  size_t n = 0;
  for (const pk_host_event& e : r.host_events) n += r.strings.view(e.name) == name;
  return n;
}

TEST_F(EventArgsTest, ArgumentsAttachedBeforeACollectStayWithTheirEventEndedAfterIt) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("A", PK_EVENT_OPERATOR);
  pk_event_arg_int(pk_intern("before_collect"), 1);
  pk_event_arg_str(pk_intern("shape"), "[2, 3]");
  pk_begin_event_str("B", PK_EVENT_OPERATOR_INNER);
  pk_event_arg_int(pk_intern("inner"), 7);
  pk_end_event();  // B is whole in the first result, with its argument
  const std::unique_ptr<Result> first = collect();
  EXPECT_EQ(events_named(*first, "A"), 0u);
  EXPECT_EQ(args_of(*first, "B"), (std::vector<std::string>{"inner=7"}));
  EXPECT_EQ(first->event_args.size(), 1u);
  EXPECT_EQ(first->info.unfinished_events, 1u);  // A
  EXPECT_EQ(first->info.lost_event_args, 0u);    // A's wait for A

  pk_event_arg_int(pk_intern("after_collect"), 2);
  pk_end_event();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const std::unique_ptr<Result> second = collect();
  ASSERT_EQ(events_named(*second, "A"), 1u);
  EXPECT_EQ(args_of(*second, "A"), (std::vector<std::string>{"before_collect=1", "shape=[2, 3]", "after_collect=2"}));
  EXPECT_EQ(second->event_args.size(), 3u);
  EXPECT_EQ(second->info.lost_event_args, 0u);
}

TEST_F(EventArgsTest, ArgumentsWaitThroughSeveralCollectsAndNestedEventsKeepTheirOwn) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("outer", PK_EVENT_FORWARD);
  pk_event_arg_int(pk_intern("o"), 1);
  pk_begin_event_str("middle", PK_EVENT_OPERATOR);
  pk_event_arg_int(pk_intern("m"), 2);
  std::unique_ptr<Result> r = collect();
  EXPECT_TRUE(r->event_args.empty());
  pk_begin_event_str("leaf", PK_EVENT_OPERATOR_INNER);
  pk_event_arg_int(pk_intern("l"), 3);
  pk_end_event();  // leaf
  r = collect();
  EXPECT_EQ(args_of(*r, "leaf"), (std::vector<std::string>{"l=3"}));
  EXPECT_EQ(r->event_args.size(), 1u);
  pk_event_arg_int(pk_intern("m"), 4);
  pk_end_event();  // middle
  r = collect();
  EXPECT_EQ(args_of(*r, "middle"), (std::vector<std::string>{"m=2", "m=4"}));
  EXPECT_EQ(r->event_args.size(), 2u);
  pk_end_event();  // outer
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  r = collect();
  EXPECT_EQ(args_of(*r, "outer"), (std::vector<std::string>{"o=1"}));
  EXPECT_EQ(r->event_args.size(), 1u);
  EXPECT_EQ(r->info.lost_event_args, 0u);
}

TEST_F(EventArgsTest, ArgumentsOfAnEventOpenWhenTheWindowClosesAreCountedOnce) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("never ends", PK_EVENT_USER_DEFINED);
  pk_event_arg_int(pk_intern("x"), 1);
  const std::unique_ptr<Result> while_recording = collect();
  EXPECT_EQ(while_recording->info.lost_event_args, 0u);  // the event may still end
  pk_event_arg_int(pk_intern("y"), 2);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const std::unique_ptr<Result> at_close = collect();
  EXPECT_EQ(at_close->info.unfinished_events, 1u);
  EXPECT_EQ(at_close->info.lost_event_args, 2u);
  EXPECT_TRUE(at_close->event_args.empty());
  EXPECT_EQ(collect()->info.lost_event_args, 0u);  // not again
}

TEST_F(EventArgsTest, ArgumentsOfAnEventForgottenWithAnUncollectedWindowAreCounted) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("left open", PK_EVENT_USER_DEFINED);
  pk_event_arg_int(pk_intern("stale"), 1);
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  // A new window before any collect: this thread forgets the open event when
  // it next records, and an event at the same depth must not take its
  // argument.
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  pk_begin_event_str("fresh", PK_EVENT_USER_DEFINED);
  pk_event_arg_int(pk_intern("mine"), 2);
  pk_end_event();
  const std::unique_ptr<Result> r = collect();
  EXPECT_EQ(args_of(*r, "fresh"), (std::vector<std::string>{"mine=2"}));
  EXPECT_EQ(r->event_args.size(), 1u);
  EXPECT_EQ(r->info.lost_event_args, 1u);
  EXPECT_EQ(r->info.unfinished_events, 1u);  // "left open", the first window's
}

TEST_F(EventArgsTest, ArgumentsOfAnEventLeftOpenByAThreadThatExitedAreCounted) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([] {
    pk_begin_event_str("worker range", PK_EVENT_USER_DEFINED);
    pk_event_arg_int(pk_intern("batch"), 3);
    pk_event_arg_str(pk_intern("phase"), "load");
  }).join();
  const std::unique_ptr<Result> r = collect();  // still recording: the thread is gone all the same
  EXPECT_EQ(events_named(*r, "worker range"), 0u);
  EXPECT_EQ(r->info.lost_event_args, 2u);
  EXPECT_EQ(collect()->info.lost_event_args, 0u);
}

// An argument that finds no room under the memory cap is a lost argument,
// not a dropped event: counted as one, an operator with three arguments made
// the window's dropped events (and its "lost events" warning) four times
// what was lost.
TEST_F(EventArgsTest, ArgumentsPastTheMemoryCapAreLostArgumentsNotDroppedEvents) {
  pk_counters counters{};
  counters.struct_size = sizeof counters;
  ASSERT_EQ(pk_get_counters(&counters), PK_OK);
  ASSERT_EQ(pk_set_memory_cap(counters.memory_used + 256 * 1024), PK_OK);  // one more buffer
  const pk_name_id op = pk_intern("capped op");
  const pk_name_id key = pk_intern("flops");
  constexpr uint64_t kEvents = 10000;  // 40,000 records: far more than one buffer holds
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([&] {
    for (uint64_t i = 0; i < kEvents; ++i) {
      pk_begin_event(op, PK_EVENT_OPERATOR);
      for (int a = 0; a < 3; ++a) pk_event_arg_int(key, 48);
      pk_end_event();
    }
  }).join();
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  const std::unique_ptr<Result> r = collect();
  pk_set_memory_cap(1ull << 30);
  const uint64_t kept_events = events_named(*r, "capped op");
  ASSERT_GT(kept_events, 0u);
  ASSERT_LT(kept_events, kEvents);
  EXPECT_EQ(r->info.dropped_events, kEvents - kept_events);
  EXPECT_EQ(r->info.lost_event_args, 3 * kEvents - r->event_args.size());
}

// Records from its destructor: a framework's thread_local that saves or ends
// something at thread exit. Which of the thread's exit handlers have run by
// then depends on the order the thread made its thread_locals in.
struct RecordsWhenDestroyed {
  explicit RecordsWhenDestroyed(const char* event) : name(event) {}
  ~RecordsWhenDestroyed() {
    pk_begin_event_str(name, PK_EVENT_USER_DEFINED);
    pk_event_arg_str(pk_intern("why"), "thread exit");
    pk_end_event();
  }
  const char* name;
};

// Made (and its destructor registered) when the thread first calls it: a
// block-scope thread_local, since GCC makes all of a file's namespace-scope
// ones at once, on the first use of any.
void record_when_destroyed(const char* event) { thread_local RecordsWhenDestroyed records(event); }
void record_when_destroyed_later(const char* event) { thread_local RecordsWhenDestroyed records(event); }

// The per-thread cache of pk_begin_event_str and pk_event_arg_str was a
// thread_local freed with the thread's others, and both read and wrote it
// after that (heap-use-after-free under ASan; valgrind's invalid reads and
// writes in profkit::intern_cached). Destruction runs in reverse order of
// construction: here the cache goes first, then the second RecordsWhenDestroyed
// (the thread's buffer still takes records), then the buffer's exit handler,
// then the first (nothing is recorded: its begin and its argument are
// ignored, without touching the cache either).
TEST_F(EventArgsTest, ThreadLocalDestructorsRecordStringsAfterTheNameCacheIsGone) {
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  std::thread([] {
    record_when_destroyed("after the buffer's exit");
    pk_begin_event(pk_intern("first"), PK_EVENT_USER_DEFINED);  // makes the thread's buffer
    pk_end_event();
    record_when_destroyed_later("before the buffer's exit");
    pk_begin_event_str("cached", PK_EVENT_USER_DEFINED);  // makes the name cache
    pk_event_arg_str(pk_intern("why"), "warm the cache");
    pk_end_event();
  }).join();
  const std::unique_ptr<Result> r = collect();
  EXPECT_EQ(args_of(*r, "cached"), (std::vector<std::string>{"why=warm the cache"}));
  EXPECT_EQ(events_named(*r, "before the buffer's exit"), 1u);
  EXPECT_EQ(args_of(*r, "before the buffer's exit"), (std::vector<std::string>{"why=thread exit"}));
  EXPECT_EQ(events_named(*r, "after the buffer's exit"), 0u);
  EXPECT_EQ(r->info.lost_event_args, 0u);
}

int g_atexit_answer_fd = -1;

// Runs after the main thread's thread_locals are destroyed (exit() runs
// those first), while the engine still records.
void record_at_exit() {
  pk_begin_event(pk_intern("shutdown"), PK_EVENT_USER_DEFINED);
  pk_event_arg_str(pk_intern("why"), "atexit");  // no event can be open: ignored
  pk_begin_event_str("shutdown by text", PK_EVENT_USER_DEFINED);
  pk_event_arg_str(pk_intern("why"), "atexit");
  pk_end_event();
  pk_end_event();
  const char ok[] = "ok";
  if (write(g_atexit_answer_fd, ok, 2) != 2) _exit(3);
}

TEST_F(EventArgsTest, AnAtexitHandlerRecordsStringsAfterTheMainThreadsNameCacheIsGone) {
  int answer[2];
  ASSERT_EQ(pipe(answer), 0);
  std::fflush(nullptr);  // the child's exit() flushes stdio: nothing twice
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's only thread is the test's (the main thread): it exits
    // through exit(), still recording, as a program returning from main.
    close(answer[0]);
    g_atexit_answer_fd = answer[1];
    pk_set_state(PK_STATE_RECORD);
    pk_begin_event_str("main", PK_EVENT_USER_DEFINED);  // the cache is made (or was, by earlier tests)
    pk_event_arg_str(pk_intern("why"), "warm the cache");
    pk_end_event();
    std::atexit(record_at_exit);
    std::exit(0);
  }
  close(answer[1]);
  // The answer comes through the pipe, not the exit status (see
  // answer_of_child): a child dead of a use-after-free writes none.
  EXPECT_EQ(answer_from(child, answer[0]), "ok");
}

}  // namespace
