// The checksum a .pktrace carries (schemas/trace.fbs, Trace.checksum, from
// schema 2): the CRC-32C of the whole size-prefixed file, its own four bytes
// counted as zeros. The FlatBuffers verifier only proves a buffer safe to
// read; one changed byte in a name, a flag or an id passes it and profkit's
// consistency checks alike, and would load as a plausible wrong trace.
//
// Thread-safety: pure functions of their arguments (seal writes only the
// buffer it is given).
#pragma once

#include <cstddef>
#include <cstdint>

namespace profkit {

// Where Trace.checksum lies in a size-prefixed trace buffer that has passed
// the FlatBuffers verifier; nullptr when the file has no such field.
const uint8_t* checksum_field(const uint8_t* buffer) noexcept;

// The checksum `buffer` (size bytes) should carry in `field` (inside it).
uint32_t trace_checksum(const uint8_t* buffer, size_t size, const uint8_t* field) noexcept;

// The checksum stored at `field`.
uint32_t stored_checksum(const uint8_t* field) noexcept;

// Writes the checksum into a finished trace buffer, which must carry the
// field (the writer stores it even at 0). False, with nothing changed, when it
// does not.
bool seal_trace_checksum(uint8_t* buffer, size_t size) noexcept;

}  // namespace profkit
