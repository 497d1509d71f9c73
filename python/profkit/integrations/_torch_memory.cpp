// See _torch_memory.h.
//
// Why a ProfilerStateBase: torch's profiler code casts whatever sits in a
// thread's PROFILER_STATE slot to torch::profiler::impl::ProfilerStateBase
// (profilerEnabled(), torch.profiler's own start), so nothing else may sit
// there. Ours has a config in state Disabled: torch's profilerEnabled() stays
// false, torch records nothing through it, and only the memory reports come
// to us.
#include "_torch_memory.h"

#include <c10/util/ThreadLocalDebugInfo.h>
#include <profkit/profkit.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

namespace profkit_torch {
namespace {

namespace impl = torch::profiler::impl;
// The slot torch's allocators read (an enum value in older torch, an object
// in newer ones: a function serves both).
c10::DebugInfoKind profiler_slot() { return c10::DebugInfoKind::PROFILER_STATE; }

// Whether allocators should report now. While false, torch's CPU allocator
// skips its size bookkeeping, so outside windows allocations cost what they
// cost without profkit (one virtual call more where the reporter is pushed).
std::atomic<bool> g_reporting{false};

// Threads whose debug info holds the reporter now (pushed, not yet popped).
// A thread that exits holding it is never subtracted: an overcount, never an
// undercount, is the safe side (see threads_holding_reporter).
std::atomic<int64_t> g_holders{0};

class MemoryReporter final : public impl::ProfilerStateBase {
 public:
  MemoryReporter() : ProfilerStateBase(impl::ProfilerConfig(impl::ProfilerState::Disabled)) {}

  // Runs on the allocating thread, inside the allocator (for CPU tensors,
  // under torch's reporter lock): pk_record_memory neither blocks nor throws.
  void reportMemoryUsage(void* ptr, int64_t bytes, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    const int32_t index = device.is_cpu() ? -1 : (device.has_index() ? device.index() : 0);
    pk_record_memory(index, reinterpret_cast<uintptr_t>(ptr), bytes, total_allocated, total_reserved);
  }

  bool memoryProfilingEnabled() const override { return g_reporting.load(std::memory_order_relaxed); }

  impl::ActiveProfilerType profilerType() override { return impl::ActiveProfilerType::NONE; }
};

// Made on first use and never destroyed: debug-info stacks of threads that
// outlive a window may still hold it at exit.
const std::shared_ptr<MemoryReporter>& shared_reporter() {
  static auto* shared = new std::shared_ptr<MemoryReporter>(std::make_shared<MemoryReporter>());
  return *shared;
}

}  // namespace

MemoryWindow open_memory_window() noexcept {
  try {
    const c10::DebugInfoBase* ours = shared_reporter().get();
    g_reporting.store(true, std::memory_order_relaxed);
    const c10::DebugInfoBase* found = c10::ThreadLocalDebugInfo::get(profiler_slot());
    if (found == ours) return MemoryWindow::kReporting;  // pushed by an earlier window
    if (found != nullptr) return MemoryWindow::kOtherProfiler;
    c10::ThreadLocalDebugInfo::_push(profiler_slot(), shared_reporter());
    g_holders.fetch_add(1, std::memory_order_relaxed);
    return MemoryWindow::kReporting;
  } catch (const std::exception&) {  // out of memory: report nothing rather than fail the step
    return MemoryWindow::kOtherProfiler;
  }
}

bool leave_memory_thread() noexcept {
  try {
    if (c10::ThreadLocalDebugInfo::get(profiler_slot()) != shared_reporter().get()) return false;
    // Throws (changing nothing) when debug info of another kind was pushed
    // above ours and is still there; ours then stays until a later window
    // finds it.
    c10::ThreadLocalDebugInfo::_pop(profiler_slot());
    g_holders.fetch_sub(1, std::memory_order_relaxed);
    return g_reporting.load(std::memory_order_relaxed);
  } catch (const std::exception&) {
    return false;
  }
}

void close_memory_window() noexcept {
  g_reporting.store(false, std::memory_order_relaxed);
  leave_memory_thread();
}

int64_t threads_holding_reporter() noexcept { return g_holders.load(std::memory_order_relaxed); }

void forget_memory_after_fork() noexcept { g_reporting.store(false, std::memory_order_relaxed); }

}  // namespace profkit_torch
