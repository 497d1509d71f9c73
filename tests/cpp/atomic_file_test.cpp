// AtomicFileWriter: the final path appears only complete, and the temporary
// it writes first never gets in the way of the files around it. What is
// already at the path survives as what it was: a symbolic link stays a link
// (its target is replaced), a FIFO or device is written in place, a name of
// an open descriptor (/dev/stdout) is written through it, and a directory is
// refused before anything is written.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "test_support.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  EXPECT_NE(d, nullptr) << dir;
  if (d == nullptr) return names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

TEST(AtomicFile, ANameAsLongAsTheFileSystemAllowsIsWritten) {
  TempDir dir;
  const long name_max = pathconf(dir.path().c_str(), _PC_NAME_MAX);
  ASSERT_GT(name_max, 20);
  // A temporary named after the target ("<name>.tmp.<pid>.<random>") would
  // not fit: every valid name must work.
  const std::string name = std::string(static_cast<size_t>(std::min(name_max, 255L)) - 11, 'n') + ".trace.json";
  const std::string path = dir.file(name);
  AtomicFileWriter out(path);
  out.write("{}");
  out.commit();
  EXPECT_EQ(read_file(path), "{}");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{name});
}

// The mode is the user's umask's, as for any file the program makes: a
// group-writable log directory under umask 002 gets group-writable traces.
TEST(AtomicFile, TheFileModeFollowsTheUmask) {
  TempDir dir;
  for (const mode_t mask : {mode_t{002}, mode_t{022}, mode_t{077}}) {
    const mode_t before = umask(mask);
    const std::string path = dir.file("t" + std::to_string(mask) + ".trace.json");
    AtomicFileWriter out(path);
    out.write("{}");
    out.commit();
    umask(before);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << std::oct << mask;
  }
}

TEST(AtomicFile, TheTemporaryIsHiddenInTheTargetsDirectory) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.file("log").c_str(), 0755), 0);
  const std::string path = dir.file("log/host_1.trace.json");
  {
    AtomicFileWriter out(path);
    out.write(std::string(8 << 20, 'x'));  // past the buffer: the temporary holds data
    // Mid-write, as a process killed now would leave it: a dot file beside
    // the target (same file system, so the rename is atomic) that
    // `profkit merge log/*` and ls do not see.
    const std::vector<std::string> during = entries(dir.file("log"));
    ASSERT_EQ(during.size(), 1u);
    EXPECT_TRUE(starts_with(during[0], ".profkit-tmp.")) << during[0];
    EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"log"});
    out.commit();
  }
  EXPECT_EQ(entries(dir.file("log")), std::vector<std::string>{"host_1.trace.json"});
  EXPECT_EQ(read_file(path).size(), size_t{8} << 20);
}

TEST(AtomicFile, APathWithoutADirectoryWritesInTheWorkingDirectory) {
  TempDir dir;
  char previous[PATH_MAX];
  ASSERT_NE(getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(chdir(dir.path().c_str()), 0);
  {
    AtomicFileWriter out("plain.pktrace");
    const std::vector<std::string> during = entries(".");
    ASSERT_EQ(during.size(), 1u);
    EXPECT_TRUE(starts_with(during[0], ".profkit-tmp.")) << during[0];
    out.write("data");
    out.commit();
  }
  EXPECT_EQ(entries("."), std::vector<std::string>{"plain.pktrace"});
  EXPECT_EQ(read_file("plain.pktrace"), "data");
  ASSERT_EQ(chdir(previous), 0);
}

TEST(AtomicFile, AWriterNotCommittedLeavesNothing) {
  TempDir dir;
  {
    AtomicFileWriter out(dir.file("never.pktrace"));
    out.write("half");
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

bool is_symlink(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

std::string link_text(const std::string& path) {
  char text[PATH_MAX];
  const ssize_t n = readlink(path.c_str(), text, sizeof text);
  return n < 0 ? std::string() : std::string(text, static_cast<size_t>(n));
}

TEST(AtomicFile, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.file("data").c_str(), 0755), 0);
  profkit_test::write_file(dir.file("data/target.json"), "old");
  // A relative link: it is resolved from the link's directory, not the
  // working directory.
  ASSERT_EQ(symlink("data/target.json", dir.file("link.json").c_str()), 0);
  {
    AtomicFileWriter out(dir.file("link.json"));
    out.write(std::string(8 << 20, 'x'));  // past the buffer: the temporary holds data
    // The temporary sits beside the target, so the rename stays on its file system.
    const std::vector<std::string> during = entries(dir.file("data"));
    ASSERT_EQ(during.size(), 2u);
    EXPECT_TRUE(starts_with(during[0], ".profkit-tmp.")) << during[0];
    out.commit();
  }
  EXPECT_TRUE(is_symlink(dir.file("link.json")));
  EXPECT_EQ(link_text(dir.file("link.json")), "data/target.json");
  EXPECT_EQ(read_file(dir.file("data/target.json")).size(), size_t{8} << 20);
  EXPECT_EQ(entries(dir.file("data")), std::vector<std::string>{"target.json"});
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"data", "link.json"}));
}

TEST(AtomicFile, AChainOfLinksAndADanglingLinkLeadToTheFileAtTheirEnd) {
  TempDir dir;
  // first -> second -> (absolute) missing.json: the file is created where
  // the last link points, and both links stay.
  ASSERT_EQ(symlink(dir.file("missing.json").c_str(), dir.file("second").c_str()), 0);
  ASSERT_EQ(symlink("second", dir.file("first").c_str()), 0);
  AtomicFileWriter out(dir.file("first"));
  out.write("{}");
  out.commit();
  EXPECT_TRUE(is_symlink(dir.file("first")));
  EXPECT_TRUE(is_symlink(dir.file("second")));
  EXPECT_EQ(read_file(dir.file("missing.json")), "{}");
}

// A FIFO at dir/out/pipe with a hard link to it at dir/keep: the link still
// reaches the FIFO after a writer renamed a file over its path, as one that
// regressed would, so release_reader() can wake a reader left waiting for a
// writer that never came, and the test fails instead of hanging.
class Fifo {
 public:
  explicit Fifo(const TempDir& dir) : dir_(dir.file("out")), path_(dir.file("out/pipe")), keep_(dir.file("keep")) {
    EXPECT_EQ(mkdir(dir_.c_str(), 0755), 0);
    EXPECT_EQ(mkfifo(path_.c_str(), 0600), 0);
    EXPECT_EQ(link(path_.c_str(), keep_.c_str()), 0);
  }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }
  // Opening for writing without blocking succeeds only while a reader is
  // there; closing at once gives that reader end-of-file.
  void release_reader() const {
    const int fd = open(keep_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) close(fd);
  }

 private:
  std::string dir_;
  std::string path_;
  std::string keep_;
};

TEST(AtomicFile, AFifoIsWrittenInPlaceForItsReader) {
  TempDir dir;
  const Fifo fifo(dir);
  std::string received;
  std::thread reader([&] {
    const int fd = open(fifo.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0) received.append(chunk, static_cast<size_t>(n));
    close(fd);
  });
  const std::string payload = std::string(5 << 20, 'p') + "end";  // more than the pipe holds
  try {
    AtomicFileWriter out(fifo.path());  // opening waits for the reader
    out.write("head:");
    out.write(payload);
    out.commit();
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  fifo.release_reader();
  reader.join();
  EXPECT_EQ(received.size(), payload.size() + 5);
  EXPECT_EQ(received.substr(0, 5), "head:");
  EXPECT_EQ(received.substr(received.size() - std::min<size_t>(received.size(), 3)), "end");
  struct stat st;
  ASSERT_EQ(lstat(fifo.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));                                 // not replaced by a regular file
  EXPECT_EQ(entries(fifo.dir()), std::vector<std::string>{"pipe"});  // no temporary
}

TEST(AtomicFile, AFifoWhoseReaderLeftIsAnErrorNotASignal) {
  TempDir dir;
  const Fifo fifo(dir);
  // SIGPIPE's default action kills the process, as it would a C program that
  // exports into `| head`; the writer must turn it into EPIPE instead.
  struct sigaction previous;
  struct sigaction deflt = {};
  deflt.sa_handler = SIG_DFL;
  ASSERT_EQ(sigaction(SIGPIPE, &deflt, &previous), 0);
  std::thread reader([&] {
    const int fd = open(fifo.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) close(fd);  // goes away without reading
  });
  int errnum = 0;
  try {
    AtomicFileWriter out(fifo.path());
    // More than the pipe holds: once it is full, the writes wait for the
    // reader, which has closed or soon will.
    out.write(std::string(8 << 20, 'x'));
    out.commit();
  } catch (const Error& e) {
    errnum = e.os_errno();
    EXPECT_EQ(e.status(), PK_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("cannot write '" + fifo.path() + "'"), std::string::npos) << e.what();
  }
  fifo.release_reader();
  reader.join();
  EXPECT_EQ(errnum, EPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ASSERT_EQ(sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);  // taken, not left to fire later
  sigaction(SIGPIPE, &previous, nullptr);
}

TEST(AtomicFile, ACharacterDeviceLikeDevNullStaysADevice) {
  // As root a regression would replace the real /dev/null with a regular
  // file, for every process on the machine: root tests a private node of
  // the same device (1, 3) in a temporary directory instead. Other users
  // cannot make one, and cannot replace /dev/null either (creating the
  // temporary in /dev fails), so they test the real one.
  TempDir dir;
  std::string device = dir.file("null");
  if (mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) device = "/dev/null";
  struct stat before;
  ASSERT_EQ(stat(device.c_str(), &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  {
    AtomicFileWriter out(device);
    out.write(std::string(6 << 20, 'n'));
    out.write("tail");
    out.commit();
  }
  struct stat after;
  ASSERT_EQ(lstat(device.c_str(), &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  EXPECT_EQ(after.st_ino, before.st_ino);
  if (device != "/dev/null") {
    EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"null"});
  }
}

// `profkit export x.pktrace -o /dev/stdout >> log.txt`: /dev/stdout leads
// (through /proc/self/fd/1) to the regular file log.txt, which a rename would
// replace, losing the log's text. A name of one of our descriptors is written
// through it instead: appended after what the file held, the file kept.
TEST(AtomicFile, ANameOfAnOpenDescriptorAppendsThroughIt) {
  TempDir dir;
  const std::string log = dir.file("log.txt");
  profkit_test::write_file(log, "KEEP\n");
  struct stat before;
  ASSERT_EQ(stat(log.c_str(), &before), 0);
  const int fd = open(log.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string number = std::to_string(fd);
  const std::string pid = std::to_string(getpid());
  for (const std::string& path : {"/dev/fd/" + number, "/proc/self/fd/" + number, "/proc/" + pid + "/fd/" + number}) {
    AtomicFileWriter out(path);
    out.write(std::string(6 << 20, 'x'));  // past the buffer: written as it goes
    out.write(path + "\n");
    out.commit();
  }
  ASSERT_EQ(close(fd), 0);  // the writers closed only their duplicates
  const std::string text = read_file(log);
  const std::string block(6 << 20, 'x');
  EXPECT_EQ(text, "KEEP\n" + block + "/dev/fd/" + number + "\n" + block + "/proc/self/fd/" + number + "\n" + block +
                      "/proc/" + pid + "/fd/" + number + "\n");
  struct stat after;
  ASSERT_EQ(stat(log.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // the same file, not a new one renamed over it
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"log.txt"});
}

TEST(AtomicFile, ANameOfADescriptorNotOpenIsAnError) {
  const int fd = dup(STDERR_FILENO);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(close(fd), 0);  // a number that is surely free now
  const std::string path = "/dev/fd/" + std::to_string(fd);
  try {
    AtomicFileWriter out(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.os_errno(), EBADF) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot write '" + path + "'"), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, ADirectoryIsRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  ASSERT_EQ(mkdir(dir.file("out").c_str(), 0755), 0);
  ASSERT_EQ(symlink("out", dir.file("link").c_str()), 0);
  for (const std::string& path : {dir.file("out"), dir.file("link")}) {
    try {
      AtomicFileWriter out(path);
      ADD_FAILURE() << "no error for the directory " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), PK_ERR_IO);
      EXPECT_EQ(e.os_errno(), EISDIR);
      EXPECT_EQ(std::string(e.what()), "'" + path + "' is a directory; give a file path");
    }
  }
  // No temporary was made, in the directory or beside it.
  EXPECT_TRUE(entries(dir.file("out")).empty());
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"link", "out"}));
}

TEST(AtomicFile, FailuresCarryTheSystemCallsErrno) {
  TempDir dir;
  profkit_test::write_file(dir.file("plain"), "x");
  const struct {
    std::string path;
    pk_status status;
    int errnum;
  } cases[] = {
      {dir.file("missing/out.json"), PK_ERR_NOT_FOUND, ENOENT},
      {dir.file("plain/out.json"), PK_ERR_IO, ENOTDIR},  // a parent that is a file
  };
  for (const auto& c : cases) {
    try {
      AtomicFileWriter out(c.path);
      ADD_FAILURE() << "no error for " << c.path;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), c.status) << c.path;
      EXPECT_EQ(e.os_errno(), c.errnum) << c.path << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.path), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace profkit
