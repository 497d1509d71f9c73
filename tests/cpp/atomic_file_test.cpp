// AtomicFileWriter: the final path appears only complete, and the temporary
// it writes first never gets in the way of the files around it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string>
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

}  // namespace
}  // namespace profkit
