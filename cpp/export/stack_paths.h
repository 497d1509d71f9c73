// StackPaths: the distinct stacks of a folded-stack export (folded_stacks.h)
// as a tree of interned paths, each with the time summed under it.
//
// A path is (its parent path, its leaf frame); extending a path by a frame
// is one hash lookup, so an event costs O(1) however deep its stack, and a
// path's text is built once, when the file is written. Frames are interned
// by their text as the file shows it, so names that read the same there
// ("a;b" and "a:b", every "ProfileStep#<n>") are one frame and their stacks
// one line.
//
// Thread-safety: none; one object per export. Ownership: borrows the Result's
// string table for its lifetime.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/atomic_file.h"
#include "trace/string_table.h"

namespace profkit {

class StackPaths {
 public:
  static constexpr uint32_t kRoot = 0;  // the empty stack, parent of every outermost frame

  explicit StackPaths(const StringTable& strings);

  // The frame of string-table name `name` (ids past the table read as "").
  uint32_t frame_of_name(uint32_t name);
  // The frame that shows as `name` once made safe for the format.
  uint32_t frame_of_text(std::string_view name);

  // `parent` extended by `frame`.
  uint32_t child(uint32_t parent, uint32_t frame);
  void add(uint32_t path, uint64_t ns) noexcept { ns_[path] += ns; }

  // One "frame;frame;... <µs>\n" line per path whose time rounds to at least
  // 1 µs, sorted by the stack text.
  void write(AtomicFileWriter& out) const;

 private:
  struct Node {
    uint32_t parent;
    uint32_t frame;
  };

  const StringTable& strings_;
  std::vector<uint32_t> frame_of_name_;  // per string id; kUnknown until first asked
  std::unordered_map<std::string, uint32_t> frame_by_text_;
  std::vector<std::string> frame_texts_;
  std::vector<Node> nodes_;                       // per path; nodes_[kRoot] is the root
  std::vector<uint64_t> ns_;                      // per path: the time summed under exactly this stack
  std::unordered_map<uint64_t, uint32_t> child_;  // (parent << 32 | frame) -> path
};

// `name` as a frame of the folded format: ';' (the frame separator) becomes
// ':', line breaks become spaces, and an empty name "[unnamed]".
std::string folded_frame_text(std::string_view name);

}  // namespace profkit
