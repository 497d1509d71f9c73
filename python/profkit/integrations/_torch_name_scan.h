// Name text for the operator-name caches (_torch_op_names.cpp), without
// libc's strlen and memcmp: the length and content hash of a NUL-terminated
// name in one pass, and a comparison, both 8 bytes at a time. Apart from the
// hook so that a C++ test can reach it (tests/cpp/torch_name_scan_test.cpp);
// it needs nothing of torch.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "_torch_hook_layout.h"

namespace profkit_torch {

// The 8 bytes at p as a little-endian word (the first byte lowest) on any
// byte order, so that scan_name finds the first NUL by counting trailing zeros.
inline uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// load8 for scan_name, whose word reads may run past a name's terminator
// (within its page): a plain load that AddressSanitizer does not check
// (memcpy could become a call that it intercepts).
__attribute__((no_sanitize_address)) inline uint64_t load8_past_end(const char* p) {
  typedef uint64_t __attribute__((may_alias, aligned(1))) UnalignedWord;
  uint64_t v = *reinterpret_cast<const UnalignedWord*>(p);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// The word at p read byte by byte, up to its NUL only: for the one word of a
// name that straddles a page boundary. Out of line and cold: rare, and
// scan_name's loop stays a few cache lines long without it.
__attribute__((noinline, cold)) inline uint64_t load8_up_to_nul(const char* p) noexcept {
  uint64_t word = 0;
  for (size_t b = 0; b < 8; ++b) {
    word |= uint64_t{static_cast<unsigned char>(p[b])} << (8 * b);
    if (p[b] == '\0') break;
  }
  return word;
}

constexpr uint64_t kNameMul = 0x9E3779B97F4A7C15ull;

struct ScannedName {
  uint64_t key;   // a hash of every byte and of the length; never 0 (the empty key)
  size_t length;  // strlen
};

// A name's length and content hash in one pass, 8 bytes at a time.
//
// The hash covers every byte: names built per call share long prefixes and
// suffixes ("autograd::engine::evaluate_function: ...Backward0"), and a key
// made of the first and last 8 bytes and the length once put every backward
// node in one slot. One pass instead of strlen, a hash loop and memcmp: this
// runs ~80 times per mlp training step (each backward node's range, each
// "detach"), and callgrind's cache simulation counted ~15 instruction-cache
// misses per lookup when it ran through libc's strlen and memcmp, which are
// cold by then.
//
// A word read may run up to 7 bytes past the terminator, never across a page
// boundary (the one word that would is read byte by byte), so it cannot
// fault; AddressSanitizer would still report those bytes, so it does not
// look here. Each word costs ~10 instructions.
__attribute__((no_sanitize_address)) PK_HOOK_HOT inline ScannedName scan_name(const char* name) noexcept {
  constexpr uint64_t kLowBits = 0x0101010101010101ull;
  constexpr uint64_t kHighBits = 0x8080808080808080ull;
  constexpr size_t kPage = 4096;  // the smallest page size: its boundaries are every page's
  // Bytes from `name` to the end of its page: words below it are safe to read whole.
  size_t safe_end = kPage - (reinterpret_cast<uintptr_t>(name) & (kPage - 1));
  uint64_t h = 0;
  for (size_t i = 0;; i += 8) {
    uint64_t word;
    if (__builtin_expect(i + 8 <= safe_end, 1)) {
      word = load8_past_end(name + i);
    } else {
      word = load8_up_to_nul(name + i);
      safe_end += kPage;
    }
    // The lowest flagged byte is exactly the first NUL (bytes above it may be
    // flagged falsely by the borrow, and are ignored).
    const uint64_t zeros = (word - kLowBits) & ~word & kHighBits;
    if (zeros != 0) {
      const unsigned before_nul = static_cast<unsigned>(__builtin_ctzll(zeros)) / 8;
      const uint64_t last = before_nul == 0 ? 0 : word & (~uint64_t{0} >> (64 - 8 * before_nul));
      const size_t n = i + before_nul;
      // Multiplying by an odd constant loses nothing; this final mix brings
      // every word's high bits down to the low bits the table indexes by.
      h = (h ^ last ^ (n * 0xC2B2AE3D27D4EB4Full)) * kNameMul;
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9ull;
      return {(h ^ (h >> 32)) | 1, n};
    }
    h = (h ^ word) * kNameMul;
  }
}

// Whether two names of length n (both NUL-terminated) are the same, compared
// in words for the same reason as scan_name.
PK_HOOK_HOT inline bool same_text(const char* a, const char* b, size_t n) noexcept {
  if (n < 8) {
    for (size_t i = 0; i < n; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  for (size_t i = 0; i + 8 <= n; i += 8) {
    if (load8(a + i) != load8(b + i)) return false;
  }
  return load8(a + n - 8) == load8(b + n - 8);  // the tail, overlapping the words above
}

}  // namespace profkit_torch
