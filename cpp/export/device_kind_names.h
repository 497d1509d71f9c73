// Names of the copy and memory kinds a trace stores for GPU memory
// operations (pk_memory_op_detail: CUPTI's numbering, kept in the file so
// that reading a trace needs no CUPTI): "HtoD", "Pinned"... "Unknown" for a
// code this build does not know.
//
// Thread-safety: pure functions; the views point at static strings.
#pragma once

#include <cstdint>
#include <string_view>

namespace profkit {

std::string_view copy_kind_name(uint8_t kind);
std::string_view memory_kind_name(uint8_t kind);

// The inverses, for reading a trace back: 0 for "Unknown" or any other name.
uint8_t copy_kind_code(std::string_view name);
uint8_t memory_kind_code(std::string_view name);

}  // namespace profkit
