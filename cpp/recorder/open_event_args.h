// OpenEventArgs: one thread's argument records whose event has not ended
// yet, kept by the collector from one collect to the next.
//
// An argument record is written while its event is open; the event's own
// record only when it ends, which may be after a collect. A collect that
// handed the builder every argument at once lost those whose event was
// still open: the event came in a later result, without them. So each
// argument goes to the builder together with its event's record, and the
// ones still waiting when the collect ends are carried to the next.
//
// Events nest last in, first out and an argument belongs to the innermost
// open event, so when an event at depth d ends its arguments are at the tail,
// after those of the events enclosing it. Waiting arguments at depth d or
// deeper that are not its own belong to events that ended without a record
// (dropped at the memory cap) or were forgotten with an earlier window: they
// can never be attached, and are counted lost, never silently forgotten.
//
// Thread-safety: none; used by the collector only, under the recorder's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "recorder/raw_record.h"

namespace profkit {

class OpenEventArgs {
 public:
  // A kArgInt / kArgStr record, in record order.
  void add(const RawRecord& arg) { waiting_.push_back(arg); }

  // `event` (a kEvent record) ended: calls attach(arg) for each of its
  // arguments, oldest first.
  template <class Attach>
  void on_event_end(const RawRecord& event, Attach&& attach) {
    if (waiting_.empty()) return;
    size_t first = waiting_.size();
    while (first > 0 && waiting_[first - 1].depth >= event.depth) --first;
    for (size_t i = first; i < waiting_.size(); ++i) {
      const RawRecord& arg = waiting_[i];
      if (arg.depth == event.depth && arg.a == event.a) {
        attach(arg);
      } else {
        ++lost_;
      }
    }
    waiting_.resize(first);
  }

  // The thread's open events will never end in a window (it closed, or the
  // thread exited): every waiting argument is lost.
  void abandon() noexcept {
    lost_ += waiting_.size();
    // Released, not only cleared: a thread that attached many arguments to
    // one long event should not keep their memory once they are lost.
    std::vector<RawRecord>().swap(waiting_);
  }

  // Arguments found lost since the last call.
  uint64_t take_lost() noexcept { return std::exchange(lost_, 0); }

  // In a fork()'s child: the waiting arguments are the parent's to report.
  void forget() noexcept {
    waiting_.clear();
    lost_ = 0;
  }

 private:
  std::vector<RawRecord> waiting_;
  uint64_t lost_ = 0;
};

}  // namespace profkit
