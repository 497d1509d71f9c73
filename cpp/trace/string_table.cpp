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

}  // namespace profkit
