// Allocation and free events from torch's allocators, for profile_memory.
//
// c10's allocators (the CPU allocator, CUDA's caching allocator) report each
// allocation and free to the MemoryReportingInfoBase they find in the calling
// thread's debug info (c10::DebugInfoKind::PROFILER_STATE), when it says that
// memory profiling is on. The reporter here is that object: it turns each
// report into pk_record_memory. It is pushed onto the debug info of the thread
// that opens a window asking for memory (the thread driving the Profiler,
// whose autograd work inherits it) and popped when the window closes.
//
// Thread-safety: open/close are called with the GIL held and act on the
// calling thread's debug info; reports arrive on any thread that inherited
// the reporter and only call pk_record_memory. Ownership: one reporter for
// the process, shared with the debug-info stacks it sits on.
#pragma once

#include <cstdint>

namespace profkit_torch {

enum class MemoryWindow {
  kReporting,     // allocations on this thread are reported
  kOtherProfiler  // torch's own profiler holds this thread: nothing is reported
};

// Starts reporting allocations and frees on the calling thread (and on the
// threads its autograd work runs on). Does nothing more when already
// reporting here. Never throws.
MemoryWindow open_memory_window() noexcept;

// Stops reporting everywhere; takes the reporter off the calling thread's
// debug info when it is on top there (elsewhere it stays, silent). Never
// throws.
void close_memory_window() noexcept;

// Takes the reporter off the calling thread's debug info only, so that
// torch's own profiler can start here; reporting goes on elsewhere. True
// when it was reporting on this thread (a window wants memory) and is off
// here now. Never throws.
bool leave_memory_thread() noexcept;

// How many threads hold the reporter in their debug info now: ones a window
// closed on another thread left it on (silent), and the window's own. A
// thread that exited holding it still counts.
int64_t threads_holding_reporter() noexcept;

// In a forked child: stop reporting, touching no lock.
void forget_memory_after_fork() noexcept;

}  // namespace profkit_torch
