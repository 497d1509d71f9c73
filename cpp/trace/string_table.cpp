#include "trace/string_table.h"

namespace profkit {

uint32_t StringTable::add_copy(std::string_view text) {
  owned_.emplace_back(text);
  return add_borrowed(owned_.back().c_str(), static_cast<uint32_t>(text.size()));
}

uint32_t StringTable::add_borrowed(const char* text, uint32_t length) {
  ptrs_.push_back(text);
  lengths_.push_back(length);
  return static_cast<uint32_t>(ptrs_.size() - 1);
}

std::vector<uint32_t> StringTable::compact(const std::vector<bool>& keep) {
  std::vector<uint32_t> remap(ptrs_.size(), UINT32_MAX);
  size_t out = 0;
  for (size_t i = 0; i < ptrs_.size(); ++i) {
    if (i >= keep.size() || !keep[i]) continue;
    ptrs_[out] = ptrs_[i];
    lengths_[out] = lengths_[i];
    remap[i] = static_cast<uint32_t>(out++);
  }
  ptrs_.resize(out);
  lengths_.resize(out);
  return remap;
}

}  // namespace profkit
