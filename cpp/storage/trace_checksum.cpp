// See trace_checksum.h.
#include "storage/trace_checksum.h"

#include <flatbuffers/flatbuffers.h>

#include "storage/crc32c.h"
#include "trace_generated.h"

namespace profkit {

const uint8_t* checksum_field(const uint8_t* buffer) noexcept {
  const auto* root = flatbuffers::GetSizePrefixedRoot<flatbuffers::Table>(buffer);
  return root->GetAddressOf(schema::Trace::VT_CHECKSUM);
}

uint32_t trace_checksum(const uint8_t* buffer, size_t size, const uint8_t* field) noexcept {
  static constexpr uint8_t kZeros[sizeof(uint32_t)] = {};
  const size_t at = static_cast<size_t>(field - buffer);
  uint32_t crc = crc32c(buffer, at);
  crc = crc32c(kZeros, sizeof kZeros, crc);
  return crc32c(field + sizeof kZeros, size - at - sizeof kZeros, crc);
}

uint32_t stored_checksum(const uint8_t* field) noexcept { return flatbuffers::ReadScalar<uint32_t>(field); }

bool seal_trace_checksum(uint8_t* buffer, size_t size) noexcept {
  const uint8_t* field = checksum_field(buffer);
  if (field == nullptr) return false;
  uint8_t* writable = buffer + (field - buffer);
  flatbuffers::WriteScalar<uint32_t>(writable, trace_checksum(buffer, size, field));
  return true;
}

}  // namespace profkit
