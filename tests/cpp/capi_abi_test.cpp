// The C ABI's fixed facts: the frozen record layouts are the sizes the header
// states, a failed system call's errno reaches callers through
// pk_last_error_errno() (1.14) beside pk_last_error(), per thread, and a
// failure is reported safely however late in a thread's or the process's
// life it happens.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "profkit/profkit.h"
#include "test_support.h"

namespace {

using profkit_test::collect;
using profkit_test::reset_engine;
using profkit_test::ResultPtr;
using profkit_test::TempDir;

// The header's "Frozen N-byte layout" comments, and no padding: the same
// bytes are the .pktrace columns, so a size change would break every file.
static_assert(sizeof(pk_host_event) == 24, "pk_host_event is a frozen 24-byte layout");
static_assert(offsetof(pk_host_event, flags) == 22, "pk_host_event has no padding");
static_assert(sizeof(pk_event_arg) == 24, "pk_event_arg is a frozen 24-byte layout");
static_assert(offsetof(pk_event_arg, value) == 16, "pk_event_arg has no padding");
static_assert(sizeof(pk_memory_event) == 48, "pk_memory_event is a frozen 48-byte layout");
static_assert(offsetof(pk_memory_event, device) == 44, "pk_memory_event has no padding");
static_assert(sizeof(pk_device_event) == 48, "pk_device_event is a frozen 48-byte layout");
static_assert(offsetof(pk_device_event, detail) == 44, "pk_device_event has no padding");
static_assert(sizeof(pk_kernel_detail) == 48, "pk_kernel_detail is a frozen 48-byte layout");
static_assert(sizeof(pk_memory_op_detail) == 16, "pk_memory_op_detail is a frozen 16-byte layout");

class CapiErrnoTest : public ::testing::Test {
 protected:
  void SetUp() override { reset_engine(); }
  void TearDown() override { reset_engine(); }
};

TEST_F(CapiErrnoTest, TheLibraryHasTheErrnoFunction) { EXPECT_GE(pk_api_version() & 0xFFFFu, 14u); }

TEST_F(CapiErrnoTest, SavingIntoAMissingDirectoryIsNotFoundWithENOENT) {
  TempDir dir;
  const ResultPtr r = collect();
  const std::string path = dir.file("missing/run.pktrace");
  EXPECT_EQ(pk_result_save(r.get(), path.c_str()), PK_ERR_NOT_FOUND);
  EXPECT_EQ(pk_last_error_errno(), ENOENT) << pk_last_error();
  EXPECT_NE(std::string(pk_last_error()).find(path), std::string::npos) << pk_last_error();
}

TEST_F(CapiErrnoTest, SavingUnderARegularFileIsENOTDIR) {
  TempDir dir;
  profkit_test::write_file(dir.file("plain"), "x");
  const ResultPtr r = collect();
  EXPECT_EQ(pk_result_export_chrome(r.get(), dir.file("plain/run.json").c_str()), PK_ERR_IO);
  EXPECT_EQ(pk_last_error_errno(), ENOTDIR) << pk_last_error();
}

TEST_F(CapiErrnoTest, SavingOntoADirectoryIsEISDIRAndWritesNothing) {
  TempDir dir;
  const ResultPtr r = collect();
  EXPECT_EQ(pk_result_save(r.get(), dir.path().c_str()), PK_ERR_IO);
  EXPECT_EQ(pk_last_error_errno(), EISDIR) << pk_last_error();
  EXPECT_EQ(std::string(pk_last_error()), "'" + dir.path() + "' is a directory; give a file path");
}

TEST_F(CapiErrnoTest, LoadingCarriesTheErrnoAndOtherFailuresZero) {
  TempDir dir;
  pk_result* out = nullptr;
  EXPECT_EQ(pk_result_load(dir.file("missing.pktrace").c_str(), &out), PK_ERR_NOT_FOUND);
  EXPECT_EQ(pk_last_error_errno(), ENOENT) << pk_last_error();
  EXPECT_EQ(pk_result_load(dir.path().c_str(), &out), PK_ERR_IO);
  EXPECT_EQ(pk_last_error_errno(), EISDIR) << pk_last_error();
  // A failure that is not a system call's replaces the errno with 0: the
  // errno always belongs to the failure pk_last_error() describes.
  profkit_test::write_file(dir.file("junk.pktrace"), "not a trace at all, not at all");
  EXPECT_EQ(pk_result_load(dir.file("junk.pktrace").c_str(), &out), PK_ERR_CORRUPT);
  EXPECT_EQ(pk_last_error_errno(), 0) << pk_last_error();
  EXPECT_EQ(pk_result_load(dir.file("missing.pktrace").c_str(), &out), PK_ERR_NOT_FOUND);
  EXPECT_EQ(pk_result_load(nullptr, &out), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_last_error_errno(), 0) << pk_last_error();
  EXPECT_EQ(out, nullptr);
}

TEST_F(CapiErrnoTest, TheErrnoIsPerThread) {
  TempDir dir;
  pk_result* out = nullptr;
  EXPECT_EQ(pk_result_load(dir.path().c_str(), &out), PK_ERR_IO);
  ASSERT_EQ(pk_last_error_errno(), EISDIR);
  int other_before = -1;
  int other_after = -1;
  std::thread other([&] {
    other_before = pk_last_error_errno();  // nothing failed on this thread
    pk_result* missing = nullptr;
    pk_result_load(dir.file("missing.pktrace").c_str(), &missing);
    other_after = pk_last_error_errno();
  });
  other.join();
  EXPECT_EQ(other_before, 0);
  EXPECT_EQ(other_after, ENOENT);
  EXPECT_EQ(pk_last_error_errno(), EISDIR);  // untouched by the other thread
}

// A failing call reports its error even from a thread's exit handlers or the
// process's: frameworks end ranges, save traces and name threads from
// thread_local and static destructors. The error slot was a thread_local
// std::string, destroyed with the thread's thread_locals (for the main
// thread, at exit() before static destructors and atexit handlers), and a
// failure after that wrote into freed memory: glibc aborted the process.
// Each scenario runs in a child process whose exit code says whether the
// late failure was reported with its own message (0) -- a crash is a signal.

// The failure a late caller makes: loading a file that does not exist, with a
// path long enough that its message needs a heap buffer of its own.
bool late_failure_is_reported(const char* path) {
  pk_result* out = nullptr;
  if (pk_result_load(path, &out) != PK_ERR_NOT_FOUND || out != nullptr) return false;
  return std::strstr(pk_last_error(), path) != nullptr && pk_last_error_errno() == ENOENT;
}

constexpr const char* kLatePath =
    "/nonexistent/a framework saving its trace from a destructor, long enough for the heap.pktrace";

// Constructed before the thread's first failure, so destroyed after the
// library's error slot (thread_locals are destroyed in reverse order).
struct FailsWhenDestroyed {
  bool* reported;
  ~FailsWhenDestroyed() { *reported = late_failure_is_reported(kLatePath); }
};

TEST(CapiLastErrorTest, AFailureInAThreadLocalDestructorAfterTheErrorSlotIsGoneIsReported) {
  EXPECT_EXIT(
      {
        bool reported = false;
        std::thread worker([&] {
          thread_local FailsWhenDestroyed late{&reported};
          (void)late;
          pk_result* out = nullptr;
          pk_result_load("/nonexistent/the thread's first failure, before it exits.pktrace", &out);
        });
        worker.join();
        // The worker's exit handlers ran; a second thread reuses the freed
        // memory the first one would have scribbled on.
        bool again = false;
        std::thread([&] { again = late_failure_is_reported(kLatePath); }).join();
        std::exit(reported && again ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CapiLastErrorTest, AFailureInAnAtexitHandlerAfterTheMainThreadsSlotIsGoneIsReported) {
  EXPECT_EXIT(
      {
        pk_result* out = nullptr;
        // This thread's slot exists, with a message in a heap buffer.
        pk_result_load("/nonexistent/the main thread's first failure, a long message.pktrace", &out);
        // exit() destroys the thread's thread_locals, then runs this.
        std::atexit([] { _exit(late_failure_is_reported(kLatePath) ? 0 : 1); });
        std::exit(2);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
