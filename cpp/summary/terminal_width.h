// How many terminal columns text takes, so that summary tables stay aligned
// when names hold CJK characters or emoji (two columns each) or combining
// marks (none): Paddle's users often name their ranges in Chinese.
//
// The widths follow Unicode's East Asian Width (W and F) and the emoji
// presentation ranges, as terminals render them; like POSIX wcwidth(), but
// without the process locale, which a library must not depend on or change.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace profkit {

// Columns of one code point: 0 (combining marks, zero-width characters),
// 2 (wide and fullwidth characters, emoji) or 1.
size_t code_point_width(char32_t c) noexcept;

// Columns of valid UTF-8 text.
size_t terminal_width(std::string_view utf8) noexcept;

// Bytes of the longest prefix of valid UTF-8 text that fits in `columns`,
// never cutting a character (nor a mark from the character it follows).
size_t prefix_fitting(std::string_view utf8, size_t columns) noexcept;

}  // namespace profkit
