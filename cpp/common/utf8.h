// UTF-8 validation shared by everything that prints names from untrusted
// callers (Chrome JSON escaping, summary text).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace profkit {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 if
// the bytes there are not one: overlong forms, surrogates, code points past
// U+10FFFF and sequences cut short are all invalid.
size_t utf8_sequence_length(std::string_view s, size_t i) noexcept;

// Where utf8_sequence_length(s, i) is 0: how many bytes, from s[i], one
// U+FFFD stands for -- the maximal subpart of the ill-formed sequence (the
// start of a valid sequence cut short; else one byte), as Unicode recommends
// and Python's decode(errors="replace") does, so that every reader of a
// name shows it alike.
size_t utf8_invalid_length(std::string_view s, size_t i) noexcept;

}  // namespace profkit
