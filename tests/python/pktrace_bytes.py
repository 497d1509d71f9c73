"""Editing a saved .pktrace's bytes in tests, and sealing the result again.

A .pktrace (schema 2 on) carries the CRC-32C of its bytes (schemas/trace.fbs,
Trace.checksum), so any edit is refused by the checksum first. Tests of the
checks behind it -- which still guard schema 1 files -- edit a trace and then
give it the checksum of its new bytes. The CRC and the field's place are
worked out here independently of the engine's code, from the standard and
the FlatBuffers layout, so the two check each other.
"""

import struct

_CASTAGNOLI = 0x82F63B78  # bit-reversed
_TABLE = []
for _byte in range(256):
    _c = _byte
    for _ in range(8):
        _c = (_c >> 1) ^ (_CASTAGNOLI if _c & 1 else 0)
    _TABLE.append(_c)

_CHECKSUM_FIELD = 12  # Trace's 13th field: schema_version is 0


def crc32c(data: bytes) -> int:
    """The CRC-32C (iSCSI) of ``data``; crc32c(b"123456789") == 0xE3069283."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def checksum_offset(data: bytes):
    """Where Trace.checksum lies in a size-prefixed .pktrace, or None when absent."""
    table = 4 + struct.unpack_from("<I", data, 4)[0]  # after the size prefix, the root offset
    vtable = table - struct.unpack_from("<i", data, table)[0]
    vtable_size = struct.unpack_from("<H", data, vtable)[0]
    entry = 4 + 2 * _CHECKSUM_FIELD
    if entry + 2 > vtable_size:
        return None
    offset = struct.unpack_from("<H", data, vtable + entry)[0]
    return table + offset if offset != 0 else None


def sealed(data: bytes) -> bytes:
    """``data`` (an edited .pktrace) with the checksum of its new bytes."""
    at = checksum_offset(data)
    assert at is not None, "not a trace with a checksum (schema 2 on)"
    zeroed = data[:at] + bytes(4) + data[at + 4 :]
    return data[:at] + struct.pack("<I", crc32c(zeroed)) + data[at + 4 :]


def with_byte(data: bytes, at: int, value: int, seal: bool = True) -> bytes:
    """``data`` with byte ``at`` set to ``value``, sealed again unless told not to."""
    edited = data[:at] + bytes([value]) + data[at + 1 :]
    return sealed(edited) if seal else edited
