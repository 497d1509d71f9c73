// The native PyTorch hook's name scan (python/profkit/integrations/
// _torch_name_scan.h): lengths and keys that do not depend on where a name
// lies in memory, word reads that never fault at the end of a mapping, and a
// comparison that sees every byte.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

#include "_torch_name_scan.h"

namespace {

using profkit_torch::same_text;
using profkit_torch::scan_name;

// Two pages: the first readable, the second not. A name copied to the very
// end of the first page has its terminator as the page's last byte, so any
// read past the terminator would fault.
class GuardedPage {
 public:
  GuardedPage() : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    void* p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<char*>(p);
    if (mprotect(base_ + page_, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
  }
  ~GuardedPage() { munmap(base_, 2 * page_); }
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;

  // A copy of `text` ending (terminator included) at the end of the readable page.
  const char* at_end(const std::string& text) {
    char* start = base_ + page_ - (text.size() + 1);
    std::memcpy(start, text.c_str(), text.size() + 1);
    return start;
  }

 private:
  size_t page_;
  char* base_ = nullptr;
};

std::string name_of_length(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>('a' + (i * 7 + 3) % 26);
  return s;
}

TEST(TorchNameScan, LengthAndKeyDoNotDependOnWhereTheNameLies) {
  GuardedPage guarded;
  alignas(16) char buffer[128];
  for (size_t n = 0; n <= 70; ++n) {
    const std::string text = name_of_length(n);
    const auto reference = scan_name(text.c_str());
    ASSERT_EQ(reference.length, n);
    ASSERT_NE(reference.key, 0u);
    for (size_t offset = 0; offset < 16; ++offset) {  // every alignment of the first word
      std::memcpy(buffer + offset, text.c_str(), n + 1);
      const auto moved = scan_name(buffer + offset);
      EXPECT_EQ(moved.length, n) << "length " << n << " offset " << offset;
      EXPECT_EQ(moved.key, reference.key) << "length " << n << " offset " << offset;
    }
    // Ending at a page boundary (the terminator the last readable byte): the
    // words that would cross it are read byte by byte, so this cannot fault.
    const auto at_end = scan_name(guarded.at_end(text));
    EXPECT_EQ(at_end.length, n);
    EXPECT_EQ(at_end.key, reference.key);
  }
}

TEST(TorchNameScan, BytesAfterTheTerminatorDoNotCount) {
  alignas(16) char a[32];
  alignas(16) char b[32];
  std::memset(a, 'x', sizeof a);
  std::memset(b, 'y', sizeof b);
  std::memcpy(a, "detach", 7);
  std::memcpy(b, "detach", 7);
  EXPECT_EQ(scan_name(a).length, 6u);
  EXPECT_EQ(scan_name(a).key, scan_name(b).key);
}

TEST(TorchNameScan, NamesThatShareLongPrefixesAndSuffixesGetDistinctKeys) {
  const char* const nodes[] = {"AddmmBackward0",      "TBackward0",    "GeluBackward0",
                               "NllLossBackward0",    "MmBackward0",   "NativeLayerNormBackward0",
                               "LogSoftmaxBackward0", "ReluBackward0", "torch::autograd::AccumulateGrad"};
  std::set<uint64_t> keys;
  for (const char* node : nodes) {
    keys.insert(scan_name(("autograd::engine::evaluate_function: " + std::string(node)).c_str()).key);
  }
  EXPECT_EQ(keys.size(), sizeof nodes / sizeof nodes[0]);
  // Each a prefix of the next: the final, partial word and the length tell them apart.
  std::set<uint64_t> prefixes;
  const std::string text = name_of_length(40);
  for (size_t n = 0; n <= text.size(); ++n) prefixes.insert(scan_name(text.substr(0, n).c_str()).key);
  EXPECT_EQ(prefixes.size(), text.size() + 1);
}

TEST(TorchNameScan, SameTextSeesEveryByte) {
  for (size_t n = 0; n <= 40; ++n) {
    const std::string text = name_of_length(n);
    std::string copy = text;
    EXPECT_TRUE(same_text(text.c_str(), copy.c_str(), n)) << n;
    for (size_t i = 0; i < n; ++i) {
      copy = text;
      copy[i] = static_cast<char>(copy[i] ^ 0x20);
      EXPECT_FALSE(same_text(text.c_str(), copy.c_str(), n)) << "length " << n << " byte " << i;
    }
  }
}

}  // namespace
