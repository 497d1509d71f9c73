// The C ABI's fixed facts: the frozen record layouts are the sizes the header
// states, and a failed system call's errno reaches callers through
// pk_last_error_errno() (1.14) beside pk_last_error(), per thread.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
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

}  // namespace
