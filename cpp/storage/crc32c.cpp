// See crc32c.h.
#include "storage/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace profkit {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Castagnoli's, bit-reversed

// Slicing-by-8: kTables[k][b] is the CRC of byte b followed by k zero bytes,
// so eight table reads advance the CRC by one 8-byte word.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) != 0 ? kPolynomial : 0u);
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  }
  return t;
}

constexpr Tables kTables = make_tables();

// On the inverted register (the CRC's running state).
uint32_t portable_update(uint32_t state, const uint8_t* p, size_t n) noexcept {
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);  // little-endian: trace files are (storage/record_layouts.h)
    word ^= state;
    state = kTables[7][word & 0xFF] ^ kTables[6][(word >> 8) & 0xFF] ^ kTables[5][(word >> 16) & 0xFF] ^
            kTables[4][(word >> 24) & 0xFF] ^ kTables[3][(word >> 32) & 0xFF] ^ kTables[2][(word >> 40) & 0xFF] ^
            kTables[1][(word >> 48) & 0xFF] ^ kTables[0][word >> 56];
  }
  for (; n > 0; ++p, --n) state = (state >> 8) ^ kTables[0][(state ^ *p) & 0xFFu];
  return state;
}

#if defined(__x86_64__)
// One crc32 instruction per 8 bytes. Its 3-cycle latency bounds this at
// about 8 GB/s on one core, a few percent of a trace's load (BENCHMARKS.md).
__attribute__((target("sse4.2"))) uint32_t sse42_update(uint32_t state, const uint8_t* p, size_t n) noexcept {
  uint64_t s = state;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);
    s = _mm_crc32_u64(s, word);
  }
  auto s32 = static_cast<uint32_t>(s);
  for (; n > 0; ++p, --n) s32 = _mm_crc32_u8(s32, *p);
  return s32;
}

bool cpu_has_sse42() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2") != 0;
  return has;
}
#endif

}  // namespace

uint32_t crc32c_portable(const uint8_t* data, size_t size, uint32_t crc) noexcept {
  return ~portable_update(~crc, data, size);
}

uint32_t crc32c(const uint8_t* data, size_t size, uint32_t crc) noexcept {
#if defined(__x86_64__)
  if (cpu_has_sse42()) return ~sse42_update(~crc, data, size);
#endif
  return crc32c_portable(data, size, crc);
}

}  // namespace profkit
