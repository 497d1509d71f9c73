// JSON string escaping for any input bytes: quotes, backslashes and control
// characters are escaped, valid UTF-8 passes through, and every byte of an
// invalid UTF-8 sequence becomes U+FFFD, so the output is always valid JSON.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace profkit {

// Appends the escaped text (without surrounding quotes) to `out`.
void append_json_escaped(std::string& out, std::string_view text);

// The escaped text wrapped in double quotes.
std::string json_quoted(std::string_view text);

}  // namespace profkit
