// Helpers shared by the C++ tests: temporary directories and a RAII result.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "profkit/profkit.h"

namespace profkit_test {

// A fresh directory under $TMPDIR, removed with its contents afterwards.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base ? base : "/tmp") + "/profkit_test_XXXXXX";
    path_ = mkdtemp(pattern.data()) ? pattern : std::string();
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct ResultDeleter {
  void operator()(pk_result* r) const { pk_result_release(r); }
};
using ResultPtr = std::unique_ptr<pk_result, ResultDeleter>;

inline ResultPtr collect() {
  pk_result* r = nullptr;
  EXPECT_EQ(pk_collect(&r), PK_OK) << pk_last_error();
  return ResultPtr(r);
}

// A result's host events, copied out. Not inlined: inlined into a test body
// built with -O2 -fsanitize=thread, GCC 12 reports a false
// -Wfree-nonheap-object on the vector's destruction.
__attribute__((noinline)) inline std::vector<pk_host_event> events_of(const pk_result* r) {
  size_t n = 0;
  const pk_host_event* e = pk_result_host_events(r, &n);
  return std::vector<pk_host_event>(e, e + n);
}

// A host event's name, from the result's string table.
inline std::string name_of(const pk_result* r, const pk_host_event& e) { return pk_result_string(r, e.name); }

inline pk_result_info info_of(const pk_result* r) {
  pk_result_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(pk_result_get_info(r, &info), PK_OK);
  return info;
}

inline ResultPtr load(const std::string& path) {
  pk_result* r = nullptr;
  EXPECT_EQ(pk_result_load(path.c_str(), &r), PK_OK) << pk_last_error();
  return ResultPtr(r);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Closes any recording left by an earlier test and drops what it left behind.
inline void reset_engine() {
  pk_set_state(PK_STATE_CLOSED);
  ResultPtr discard = collect();
}

// What forked child `child` wrote to the pipe end `answer_fd` (the parent
// closes it), or why it wrote nothing: a child that has not answered after
// 10 s is killed. The child is reaped.
inline std::string answer_from(pid_t child, int answer_fd) {
  std::string verdict;
  pollfd readable{answer_fd, POLLIN, 0};
  if (poll(&readable, 1, 10000) == 1) {
    char buffer[512];
    for (ssize_t got; (got = read(answer_fd, buffer, sizeof buffer)) > 0;) verdict.append(buffer, got);
  } else {
    kill(child, SIGKILL);
    verdict = "the child hung";
  }
  close(answer_fd);
  int status = 0;
  waitpid(child, &status, 0);
  return verdict.empty() ? "the child died without an answer" : verdict;
}

// Runs `body` in a forked child and returns what it answered, or why it
// did not (hung in fork()'s handlers or in `body`: see answer_from). The
// child answers through a pipe, not its exit status: under ThreadSanitizer a
// child of a threaded process exits with 66 (a "thread leak": the parent's
// other threads, which the child lacks).
inline std::string answer_of_child(const std::function<std::string()>& body) {
  int answer[2];
  if (pipe(answer) != 0) return "pipe() failed";
  const pid_t child = fork();
  if (child < 0) return "fork() failed";
  if (child == 0) {
    close(answer[0]);
    const std::string verdict = body();
    _exit(write(answer[1], verdict.data(), verdict.size()) == static_cast<ssize_t>(verdict.size()) ? 0 : 1);
  }
  close(answer[1]);
  return answer_from(child, answer[0]);
}

}  // namespace profkit_test
