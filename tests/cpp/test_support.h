// Helpers shared by the C++ tests: temporary directories and a RAII result.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

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

}  // namespace profkit_test
