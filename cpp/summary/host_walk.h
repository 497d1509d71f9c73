// One pass over every thread's event tree that the name-keyed tables share.
//
// Host events of a thread are stored in preorder with their nesting depth,
// so a stack of the open events is all it takes to know each event's
// ancestors. The walk also brings GPU work to the host side: a device event
// belongs to its launching runtime call (launch_event) and, through it, to
// every enclosing host event; OpenEvent::gpu_ns sums that work over the
// event's subtree by the time the event closes.
//
// Self time: each moment of a thread's time belongs to one event, the one
// started last among those running then (of nested events, the innermost).
// Events recorded whole (with_stack's Python calls, ranges, complete events)
// can cross: one starts inside an event and ends after it, and nesting by
// containment makes it a sibling of that event, not its child. Self time as
// the duration less the children's would count the overlap twice (in the
// crossed event's self time, and in the crossing one's subtree): a flame
// graph could hold more time than the thread ran. So an event crossed by
// a later one keeps its time up to where that one starts only, and so does
// its subtree (its events not ended by then are crossed too): the rest goes
// to the crossing event. OpenEvent::children_ns is the part of an event's
// duration it does not keep: its children's kept time, as they close, and
// by the time it closes what a crossing event took. Self times (duration
// less children_ns) then add up to the time the thread's events cover,
// each moment once; without crossings they are as before.
//
// Visitors register for the event types they care about, so an event costs
// nothing for a table that ignores its type.
//
// Thread-safety: a walk reads the Result only; visitors are not shared.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/result.h"

namespace profkit {

constexpr uint32_t kNoPosition = UINT32_MAX;

struct OpenEvent {
  uint64_t index = 0;                 // host event index
  uint64_t gpu_ns = 0;                // GPU time launched in its subtree (so far)
  uint64_t children_ns = 0;           // its time its children (so far) or a crossing event took: self time is the rest
  uint32_t nearest_op = kNoPosition;  // stack position of the nearest enclosing Operator/OperatorInner
  uint32_t name = 0;                  // its string id
  uint8_t type = 0;                   // its pk_event_type (unknown values read as UserDefined)
  bool in_communication = false;      // it or an ancestor is a Communication event
};

// The open events of the walk, outermost first. Host-event depth saturates
// at 255, so 256 frames always suffice. Visitors get it read-only.
class OpenStack {
 public:
  static constexpr size_t kCapacity = 256;

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool full() const noexcept { return size_ == kCapacity; }
  const OpenEvent& operator[](size_t i) const noexcept { return frames_[i]; }
  const OpenEvent& back() const noexcept { return frames_[size_ - 1]; }

  // For the walk only.
  OpenEvent& top() noexcept { return frames_[size_ - 1]; }
  OpenEvent& frame(size_t i) noexcept { return frames_[i]; }
  void push(const OpenEvent& e) noexcept { frames_[size_++] = e; }
  // Pops the top event; the reference stays valid until the next push.
  const OpenEvent& pop() noexcept { return frames_[--size_]; }

 private:
  std::array<OpenEvent, kCapacity> frames_;
  size_t size_ = 0;
};

// A GPU record as the walk hands it to visitors: the fields they need, read
// in launch order (the device event column itself is in start order, so
// visiting it by launch would jump around in memory).
struct LaunchedWork {
  uint64_t host_event;    // the launching host event
  uint64_t device_event;  // index into Result::device_events
  uint64_t duration_ns;
  uint32_t name;  // string id
  uint8_t type;   // PK_EVENT_KERNEL, PK_EVENT_MEMCPY, PK_EVENT_MEMSET
  // CUPTI gave it no timestamps (PK_DEVICE_EVENT_NO_TIMING): duration_ns is
  // 0 for want of one, not a measured 0.
  bool untimed;
};

class HostEventVisitor {
 public:
  virtual ~HostEventVisitor() = default;
  // Bit t set: on_open/on_close are called for events of type t.
  virtual uint32_t type_mask() const = 0;
  // Optionally, names too: when not null, on_open/on_close are called only
  // for events whose name id has a nonzero entry (ids past the end: no).
  // Must stay valid for the walk.
  virtual const std::vector<uint8_t>* name_filter() const { return nullptr; }
  // Types of type_mask() called whatever their name (bit t: type t).
  virtual uint32_t types_past_name_filter() const { return 0; }
  virtual void begin_thread(size_t /*thread*/) {}
  // After the thread's last event has closed.
  virtual void end_thread(size_t /*thread*/) {}
  // stack.back() is the event just opened; the rest are its ancestors.
  virtual void on_open(const OpenStack& /*stack*/) {}
  // `closed` has just been popped; `stack` holds its ancestors. closed.gpu_ns
  // and closed.children_ns are final.
  virtual void on_close(const OpenStack& /*stack*/, const OpenEvent& /*closed*/) {}
  // GPU work launched by stack.back() (whatever its type); called for every
  // visitor that wants_launches().
  virtual bool wants_launches() const { return false; }
  virtual void on_launch(const OpenStack& /*stack*/, const LaunchedWork& /*work*/) {}
};

constexpr uint32_t type_bit(uint32_t type) noexcept { return 1u << type; }

// An instant (pk_instant_event, a Chrome "ph":"i" read back) marks a moment:
// no table counts it as a call (one would add a call of 0 time, halving an
// average and zeroing a minimum); the walk still visits it.
inline bool is_instant(const pk_host_event& e) noexcept { return (e.flags & PK_HOST_EVENT_INSTANT) != 0; }

void walk_host_events(const Result& result, const std::vector<HostEventVisitor*>& visitors);

}  // namespace profkit
