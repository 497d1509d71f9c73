// The FlatBuffers structs of schemas/trace.fbs and the C ABI records are the
// same bytes: a saved column is written with one memcpy and a loaded one is
// read in place. These checks keep the two definitions from drifting apart.
#pragma once

#include "profkit/profkit.h"
#include "trace_generated.h"

namespace profkit {

// Files written by this engine can be read by readers of this version or later.
constexpr uint32_t kMinReaderVersion = 1;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "trace files are little-endian, read in place");

#define PK_SAME_LAYOUT(Schema, Record)                                      \
  static_assert(sizeof(schema::Schema) == sizeof(Record), #Record " size"); \
  static_assert(alignof(schema::Schema) <= alignof(Record), #Record " alignment")

PK_SAME_LAYOUT(HostEvent, pk_host_event);
PK_SAME_LAYOUT(EventArg, pk_event_arg);
PK_SAME_LAYOUT(MemoryEvent, pk_memory_event);
PK_SAME_LAYOUT(DeviceEvent, pk_device_event);
PK_SAME_LAYOUT(KernelDetail, pk_kernel_detail);
PK_SAME_LAYOUT(MemoryOpDetail, pk_memory_op_detail);

#undef PK_SAME_LAYOUT

}  // namespace profkit
