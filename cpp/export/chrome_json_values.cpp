#include "export/chrome_json_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace profkit {

std::optional<uint64_t> parse_us(const std::string& text) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  uint64_t us = 0;
  const auto [dot, ec] = std::from_chars(begin, end, us);
  const bool digits_first = begin != end && *begin >= '0' && *begin <= '9';
  if (digits_first && ec == std::errc() && us < std::numeric_limits<uint64_t>::max() / 1000 &&
      (dot == end || (*dot == '.' && end - dot - 1 <= 3))) {
    uint64_t ns = us * 1000;
    uint64_t scale = 100;
    bool plain = true;
    for (const char* p = dot == end ? end : dot + 1; p < end; ++p) {
      plain &= *p >= '0' && *p <= '9';
      ns += static_cast<uint64_t>(*p - '0') * scale;
      scale /= 10;
    }
    if (plain) return ns;
  }
  errno = 0;
  char* parsed_to = nullptr;
  const double value = std::strtod(text.c_str(), &parsed_to);
  // 1.8e16 µs is about the largest ns count a uint64_t holds.
  if (errno != 0 || parsed_to == begin || parsed_to != end || !(value >= 0.0) || value > 1.8e16) return std::nullopt;
  return static_cast<uint64_t>(std::llround(value * 1000.0));
}

std::string thread_name_from_lane(const std::string& label, uint64_t tid) {
  std::string name = label;
  for (const char* lane :
       {" (Python) [", " (C++) [", " (Python, overlapping) [", " (C++, overlapping) [", " (overlapping 2) ["}) {
    const std::string suffix = lane + std::to_string(tid) + "]";
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
      break;
    }
  }
  return name == "Thread " + std::to_string(tid) ? std::string() : name;
}

void strip_duration_label(std::string& name) {
  if (name.empty() || name.back() != ']') return;
  const size_t open = name.rfind('[');
  if (open != std::string::npos) name.resize(open);
}

}  // namespace profkit
