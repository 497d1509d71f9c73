// CRC-32C (Castagnoli, the iSCSI / ext4 / RFC 3720 checksum): the checksum a
// .pktrace file carries (storage/trace_checksum.h).
//
// On x86-64 with SSE4.2 (every x86-64 CPU since 2008) it runs on the CPU's
// crc32 instruction, chosen at run time so the library still loads on an
// older CPU; elsewhere on a table-driven loop that reads 8 bytes a step. The
// two give the same value (a test holds them to the standard check values).
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>

namespace profkit {

// The CRC-32C of `size` bytes at `data`, continuing from `crc`, the value
// returned for the bytes before them (0 to start): crc32c(b, crc32c(a)) is
// the CRC of a followed by b.
uint32_t crc32c(const uint8_t* data, size_t size, uint32_t crc = 0) noexcept;

// The same with the portable loop only, whatever the CPU (for the tests).
uint32_t crc32c_portable(const uint8_t* data, size_t size, uint32_t crc = 0) noexcept;

}  // namespace profkit
