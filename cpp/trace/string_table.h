// StringTable: the names and string values of a Result, indexed by the ids
// that events carry. Entries are NUL-terminated; they are owned by the table
// (collected results) or borrowed from the file's bytes (loaded results).
//
// Thread-safety: immutable once built; safe to read from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace profkit {

class StringTable {
 public:
  StringTable() = default;
  // Moving keeps every entry's address (deque blocks move as a whole); copying
  // would leave pointers into the source, so it is not allowed.
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // Appends a copy of `text`; returns its index.
  uint32_t add_copy(std::string_view text);
  // Appends a pointer to NUL-terminated text that outlives the table.
  uint32_t add_borrowed(const char* text, uint32_t length);

  // Keeps only the entries whose `keep` flag is set, in order, and returns the
  // old-index -> new-index map (UINT32_MAX for dropped entries). Owned text
  // stays where it is, so pointers handed out earlier remain valid.
  std::vector<uint32_t> compact(const std::vector<bool>& keep);

  size_t size() const noexcept { return ptrs_.size(); }
  const char* c_str(size_t i) const noexcept { return ptrs_[i]; }
  std::string_view view(size_t i) const noexcept { return {ptrs_[i], lengths_[i]}; }
  // "" for an index out of range, so a bad id never crashes a reader.
  std::string_view view_or_empty(size_t i) const noexcept { return i < size() ? view(i) : std::string_view(); }

 private:
  std::vector<const char*> ptrs_;
  std::vector<uint32_t> lengths_;
  std::deque<std::string> owned_;  // deque: growing never moves existing strings
};

}  // namespace profkit
