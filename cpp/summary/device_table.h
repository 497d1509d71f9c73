// Device Summary: utilization of the CPU (this process, the whole machine)
// and of each GPU over the recorded span (SPEC §6):
//   CPU(Process) = process CPU time / elapsed (can pass 100% on several cores)
//   CPU(System)  = busy / (busy + idle), all cores, over the window
//   GPU d        = union of kernel time on device d / elapsed
// Thread-safety: pure function of the context.
#pragma once

#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

SummaryTable make_device_table(const SummaryContext& context);

}  // namespace profkit
