#include "summary/kernel_name.h"

namespace profkit {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The position of the bracket that opens the group closing at `close`
// (scanning back over nested () and <>), or npos if unbalanced.
size_t matching_open(std::string_view s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    const char c = s[i];
    if (c == ')' || c == '>') ++depth;
    if (c == '(' || c == '<') {
      if (--depth == 0) return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string short_kernel_name(std::string_view name) {
  const std::string_view original = trim(name);
  // A space inside "(anonymous namespace)" would split the name below.
  std::string text(original);
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (size_t at = text.find(kAnonymous); at != std::string::npos; at = text.find(kAnonymous, at)) {
    text.replace(at, kAnonymous.size(), "{anonymous}");
  }
  std::string_view s = text;
  constexpr std::string_view kConst = " const";
  if (s.size() > kConst.size() && s.substr(s.size() - kConst.size()) == kConst) {
    s = trim(s.substr(0, s.size() - kConst.size()));
  }
  if (!s.empty() && s.back() == ')') {
    const size_t open = matching_open(s, s.size() - 1);
    if (open == std::string_view::npos) return std::string(original);
    s = trim(s.substr(0, open));
  }
  // Drop template arguments: keep only the text outside <...> and (...).
  std::string out;
  out.reserve(s.size());
  int depth = 0;
  for (char c : s) {
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      if (--depth < 0) return std::string(original);
    } else if (depth == 0) {
      out += c;
    }
  }
  if (depth != 0) return std::string(original);
  // The return type and specifiers come first, separated by spaces.
  const std::string_view kept = trim(out);
  const size_t space = kept.find_last_of(" \t");
  const std::string_view last = space == std::string_view::npos ? kept : kept.substr(space + 1);
  if (last.empty()) return std::string(original);
  return std::string(last);
}

uint32_t DeviceNames::lookup(uint32_t name, bool kernel) {
  std::vector<uint32_t>& by_string = kernel ? kernel_by_string_ : other_by_string_;
  // One slot per string, and a last one for ids out of range (shown as "").
  if (by_string.empty()) by_string.assign(strings_.size() + 1, kUnknown);
  uint32_t& slot = by_string[name < strings_.size() ? name : strings_.size()];
  if (slot != kUnknown) return slot;
  const std::string_view recorded = strings_.view_or_empty(name);
  std::string text = kernel ? short_kernel_name(recorded) : std::string(recorded);
  auto [it, inserted] = by_text_.emplace(std::move(text), static_cast<uint32_t>(texts_.size()));
  if (inserted) texts_.push_back(it->first);
  slot = it->second;
  return slot;
}

}  // namespace profkit
