// Reading back the values profkit's Chrome writer formats (chrome_trace.cpp):
// whole numbers and µs times kept as their JSON text, thread lane labels and
// duration labels. Used by chrome_trace_reader.cpp.
//
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace profkit {

// The whole of `text` as an Int; nullopt for anything else (a fraction, an
// exponent, a sign Int cannot hold, a value out of range, trailing bytes).
template <class Int>
std::optional<Int> parse_integer(const std::string& text) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A time in µs as ns: the writer's "1234.567" exactly, anything else JSON
// allows ("1.5e3", more fraction digits) through a double, rounded to the
// ns. nullopt when negative, out of range or not a number.
std::optional<uint64_t> parse_us(const std::string& text);

// The thread name behind a lane label: "Main (Python) [123]" -> "Main"; the
// writer's stand-in for an unnamed thread, "Thread 123", -> "".
std::string thread_name_from_lane(const std::string& label, uint64_t tid);

// "name[1.23 ms]" -> "name" (a file written with duration labels).
void strip_duration_label(std::string& name);

}  // namespace profkit
