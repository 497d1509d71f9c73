#include "common/utf8.h"

#include <cstdint>

namespace profkit {

namespace {

// How many bytes of s, from s[i], begin a valid sequence, and how many that
// sequence needs (0 when s[i] cannot start one).
struct Prefix {
  size_t valid;
  size_t needed;
};

Prefix valid_prefix(std::string_view s, size_t i) noexcept {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return {1, 1};
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0, 0};
  }
  size_t k = 1;
  if (i + k < s.size() && byte(i + k) >= lo && byte(i + k) <= hi) {
    for (++k; k < len && i + k < s.size() && (byte(i + k) & 0xC0) == 0x80;) ++k;
  }
  return {k, len};
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) noexcept {
  const Prefix p = valid_prefix(s, i);
  return p.needed != 0 && p.valid == p.needed ? p.needed : 0;
}

size_t utf8_invalid_length(std::string_view s, size_t i) noexcept {
  const Prefix p = valid_prefix(s, i);
  return p.valid == 0 ? 1 : p.valid;
}

}  // namespace profkit
