#include "export/stack_paths.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/error.h"

namespace profkit {

namespace {

constexpr uint32_t kUnknown = UINT32_MAX;

// Nearest whole µs, halves up, without overflowing near UINT64_MAX.
uint64_t rounded_us(uint64_t ns) noexcept { return ns / 1000 + (ns % 1000 >= 500 ? 1 : 0); }

}  // namespace

std::string folded_frame_text(std::string_view name) {
  if (name.empty()) return "[unnamed]";
  std::string text(name);
  for (char& c : text) {
    if (c == ';') {
      c = ':';
    } else if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return text;
}

StackPaths::StackPaths(const StringTable& strings) : strings_(strings), frame_of_name_(strings.size(), kUnknown) {
  nodes_.push_back({kRoot, kUnknown});
  ns_.push_back(0);
}

uint32_t StackPaths::frame_of_name(uint32_t name) {
  if (name >= frame_of_name_.size()) return frame_of_text({});
  uint32_t& frame = frame_of_name_[name];
  if (frame == kUnknown) frame = frame_of_text(strings_.view(name));
  return frame;
}

uint32_t StackPaths::frame_of_text(std::string_view name) {
  std::string text = folded_frame_text(name);
  auto found = frame_by_text_.find(text);
  if (found != frame_by_text_.end()) return found->second;
  const auto frame = static_cast<uint32_t>(frame_texts_.size());
  frame_texts_.push_back(text);
  frame_by_text_.emplace(std::move(text), frame);
  return frame;
}

uint32_t StackPaths::child(uint32_t parent, uint32_t frame) {
  const uint64_t key = (static_cast<uint64_t>(parent) << 32) | frame;
  auto [it, added] = child_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (added) {
    // Ids are 32 bits (two make the key); a result with 4 billion distinct
    // stacks would not fit in memory anyway.
    if (nodes_.size() >= kUnknown) {
      child_.erase(it);
      throw Error(PK_ERR_TOO_LARGE, "stacks export: the result has more than 4294967294 distinct stacks");
    }
    nodes_.push_back({parent, frame});
    ns_.push_back(0);
  }
  return it->second;
}

void StackPaths::write(AtomicFileWriter& out) const {
  std::vector<std::pair<std::string, uint64_t>> lines;
  std::vector<uint32_t> frames;  // of one path, leaf first
  for (uint32_t path = 1; path < nodes_.size(); ++path) {
    const uint64_t us = rounded_us(ns_[path]);
    if (us == 0) continue;
    frames.clear();
    size_t length = 0;
    for (uint32_t p = path; p != kRoot; p = nodes_[p].parent) {
      frames.push_back(nodes_[p].frame);
      length += frame_texts_[nodes_[p].frame].size() + 1;
    }
    std::string text;
    text.reserve(length);
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
      if (!text.empty()) text += ';';
      text += frame_texts_[*frame];
    }
    lines.emplace_back(std::move(text), us);
  }
  // Stack texts are distinct (frames are interned by text and hold no ';'),
  // so this order is total.
  std::sort(lines.begin(), lines.end());
  for (const auto& [text, us] : lines) {
    out.write(text);
    char number[24] = {' '};
    const auto end = std::to_chars(number + 1, number + sizeof number - 1, us).ptr;
    *end = '\n';
    out.write(number, static_cast<size_t>(end + 1 - number));
  }
}

}  // namespace profkit
