// CRC-32C: the standard check values, on the CPU's instruction and on the
// portable loop alike, and continuing a CRC across pieces.
#include "storage/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace profkit {
namespace {

uint32_t of(const std::string& s) { return crc32c(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

// RFC 3720 (iSCSI), appendix B.4, and the "123456789" check value.
TEST(Crc32c, GivesTheStandardCheckValues) {
  EXPECT_EQ(of(""), 0u);
  EXPECT_EQ(of("123456789"), 0xE3069283u);
  EXPECT_EQ(of(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(of(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(of(ascending), 0x46DD794Eu);
  const auto* nine = reinterpret_cast<const uint8_t*>("123456789");
  EXPECT_EQ(crc32c_portable(nine, 9), 0xE3069283u);
}

TEST(Crc32c, ThePortableLoopAgreesAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(4096 + 16);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n <= 80; ++n) {
      ASSERT_EQ(crc32c(bytes.data() + offset, n), crc32c_portable(bytes.data() + offset, n))
          << "offset " << offset << ", " << n << " bytes";
    }
  }
  EXPECT_EQ(crc32c(bytes.data(), 4096), crc32c_portable(bytes.data(), 4096));
}

TEST(Crc32c, ContinuesAcrossPieces) {
  const std::string whole = "the quick brown fox jumps over the lazy dog, twice over";
  const auto* p = reinterpret_cast<const uint8_t*>(whole.data());
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    EXPECT_EQ(crc32c(p + cut, whole.size() - cut, crc32c(p, cut)), of(whole)) << "cut at " << cut;
    EXPECT_EQ(crc32c_portable(p + cut, whole.size() - cut, crc32c_portable(p, cut)), of(whole)) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace profkit
