#include "recorder/record_conversion.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "recorder/open_event_args.h"
#include "recorder/raw_record.h"
#include "recorder/thread_buffer.h"

namespace profkit {

void add_step_event(ResultBuilder& builder, NameMap& names, const TickConverter& clock, uint32_t thread,
                    uint64_t start_ticks, uint64_t end_ticks, uint64_t number, uint64_t num_samples) {
  const uint64_t start = clock.to_ns(start_ticks);
  const uint64_t end = std::max(start, clock.to_ns(end_ticks));
  const uint32_t name = builder.add_string("ProfileStep#" + std::to_string(number));
  builder.add_event(thread, {start, end, name, PK_EVENT_PROFILE_STEP, 0, 0});
  if (num_samples > 0) {
    // An argument's value is a signed 64-bit integer: past INT64_MAX it read
    // as negative (pk_step takes a uint64_t).
    const auto samples = static_cast<int64_t>(std::min<uint64_t>(num_samples, INT64_MAX));
    builder.add_arg(thread, start, 0, names.num_samples_key(), PK_ARG_INT, samples);
  }
}

namespace {

// Turns one thread's raw records into builder entries. An argument goes to
// the builder with its event's record; until then it waits in `open_args`,
// across collects if its event is still open (see open_event_args.h).
class RecordConverter {
 public:
  RecordConverter(ResultBuilder& builder, NameMap& names, const TickConverter& clock, uint32_t thread,
                  OpenEventArgs& open_args)
      : builder_(builder), names_(names), clock_(clock), thread_(thread), open_args_(open_args) {}

  // Returns how many records of the thread's recorded_events count these were:
  // a group (a memory event, a step) counts once, like append_group does.
  uint32_t convert(const RawRecord* r, uint32_t n) {
    uint32_t counted = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (r[i].kind != RecordKind::kMemoryMore && r[i].kind != RecordKind::kStepMore) ++counted;
      const RawRecord& rec = r[i];
      if (PK_UNLIKELY(rec.name == kNameNotInterned) && drop_unnamed(rec)) continue;
      switch (rec.kind) {
        case RecordKind::kEvent:
        case RecordKind::kInstant: {
          const uint64_t start = clock_.to_ns(rec.a);
          const uint64_t end = rec.kind == RecordKind::kInstant ? start : std::max(start, clock_.to_ns(rec.b));
          const uint16_t flags = rec.kind == RecordKind::kInstant ? PK_HOST_EVENT_INSTANT : 0;
          builder_.add_event(thread_, {start, end, names_(rec.name), rec.type, rec.depth, flags});
          if (rec.kind == RecordKind::kEvent) open_args_.on_event_end(rec, [&](const RawRecord& arg) { add_arg(arg); });
          break;
        }
        case RecordKind::kWholeEvent:
          builder_.add_whole_event(thread_, {rec.a, std::max(rec.a, rec.b), names_(rec.name), rec.type, 0, 0});
          break;
        case RecordKind::kWholeEventTicks: {
          const uint64_t start = clock_.to_ns(rec.a);
          builder_.add_whole_event(thread_,
                                   {start, std::max(start, clock_.to_ns(rec.b)), names_(rec.name), rec.type, 0, 0});
          break;
        }
        case RecordKind::kArgInt:
        case RecordKind::kArgStr:
          open_args_.add(rec);
          break;
        case RecordKind::kStep:
          // A step is two records committed together.
          if (i + 1 < n && r[i + 1].kind == RecordKind::kStepMore) {
            add_step(rec, r[i + 1]);
            ++i;
          }
          break;
        case RecordKind::kStepMore:
          break;  // consumed with its kStep record
        case RecordKind::kMemory:
          // A memory event is three records committed together.
          if (i + 2 < n && r[i + 1].kind == RecordKind::kMemoryMore && r[i + 2].kind == RecordKind::kMemoryMore) {
            pk_memory_event m{};
            m.time_ns = clock_.to_ns(rec.a);
            m.address = rec.b;
            m.bytes = static_cast<int64_t>(r[i + 1].a);
            m.total_allocated = r[i + 1].b;
            m.total_reserved = r[i + 2].a;
            m.thread = thread_;
            m.device = static_cast<int32_t>(rec.name);
            builder_.add_memory_event(m);
            i += 2;
          }
          break;
        case RecordKind::kMemoryMore:
          break;  // consumed with its kMemory record
      }
    }
    return counted;
  }

  // Records written into a parked chunk (ThreadBuffer::drain says why they
  // cannot be kept), counted as what they would have been: events (a call
  // that began before its window closed and ended after, so in no window:
  // unfinished, like an event still open at the window's end), arguments
  // (lost) and memory events (dropped). Returns their recorded_events count.
  uint32_t discard(const RawRecord* r, uint32_t n) {
    ResultInfo& info = builder_.info();
    uint32_t counted = 0;
    for (uint32_t i = 0; i < n; ++i) {
      switch (r[i].kind) {
        case RecordKind::kArgInt:
        case RecordKind::kArgStr:
          ++info.lost_event_args;
          break;
        case RecordKind::kMemory:
          ++info.dropped_events;
          break;
        case RecordKind::kMemoryMore:
        case RecordKind::kStepMore:
          continue;  // counted with the group's first record
        default:
          ++info.unfinished_events;
          break;
      }
      ++counted;
    }
    return counted;
  }

  // Events dropped here (a name that could not be interned), for the
  // engine-wide counters.
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  // A record naming kNameNotInterned (name_table.h): an event whose name
  // could not be interned is dropped and counted rather than kept nameless,
  // with its arguments lost. True when `rec` was such an event; argument
  // keys, memory events and steps do not name their record (false).
  bool drop_unnamed(const RawRecord& rec) {
    switch (rec.kind) {
      case RecordKind::kEvent:
        open_args_.on_event_end(rec, [&](const RawRecord&) { ++builder_.info().lost_event_args; });
        [[fallthrough]];
      case RecordKind::kInstant:
      case RecordKind::kWholeEvent:
      case RecordKind::kWholeEventTicks:
        ++builder_.info().dropped_events;
        ++dropped_;
        return true;
      default:
        return false;
    }
  }

  void add_arg(const RawRecord& arg) {
    const bool text = arg.kind == RecordKind::kArgStr;
    if (text && PK_UNLIKELY(static_cast<uint32_t>(arg.b) == kNameNotInterned)) {
      ++builder_.info().lost_event_args;  // its value could not be interned: not kept as ""
      return;
    }
    builder_.add_arg(thread_, clock_.to_ns(arg.a), arg.depth, names_(arg.name), text ? PK_ARG_STRING : PK_ARG_INT,
                     text ? static_cast<int64_t>(names_(static_cast<uint32_t>(arg.b))) : static_cast<int64_t>(arg.b));
  }

  void add_step(const RawRecord& step, const RawRecord& more) {
    add_step_event(builder_, names_, clock_, thread_, step.a, step.b, more.a, more.b);
  }

  ResultBuilder& builder_;
  NameMap& names_;
  const TickConverter& clock_;
  uint32_t thread_;
  OpenEventArgs& open_args_;
  uint64_t dropped_ = 0;
};

// The buffer's counters are cumulative; a result reports what they grew by
// since the last collect.
void report_thread_counters(ThreadBuffer& tb, ResultInfo& totals) {
  totals.lost_event_args += tb.open_event_args.take_lost();
  const uint64_t dropped = tb.dropped_events.get();
  const uint64_t unmatched = tb.unmatched_ends.get();
  const uint64_t overflowed = tb.overflowed_events.get();
  const uint64_t lost_args = tb.lost_args.get();
  totals.dropped_events += dropped - tb.reported_dropped;
  totals.unmatched_ends += unmatched - tb.reported_unmatched;
  totals.overflowed_events += overflowed - tb.reported_overflowed;
  totals.lost_event_args += lost_args - tb.reported_lost_args;
  tb.reported_dropped = dropped;
  tb.reported_unmatched = unmatched;
  tb.reported_overflowed = overflowed;
  tb.reported_lost_args = lost_args;
}

// The thread's events still open at this collect: in the window that goes
// on, counted by every collect while they stay open; in a window that has
// closed, counted once, by the first collect since (the one that takes its
// end) -- however many windows passed before it, and whether the thread
// went on to record in a later one (it carries them then) or not. A thread
// that exited with events open counts too (its buffer goes away after this
// drain): whether the exit was seen before this collect is a race with the
// thread's TLS destructors.
uint64_t unfinished_events(ThreadBuffer& tb, const ThreadCollect& how) {
  uint64_t unfinished = tb.take_carried_unfinished();
  // The window before the depth, and the depth before the claim (see
  // ThreadBuffer::start_window).
  const uint32_t window = tb.window();
  const uint32_t open = std::min<uint32_t>(tb.open_depth(), ThreadBuffer::kMaxDepth);
  if (window == 0 || open == 0) return unfinished;
  if (how.recording && window == how.last_window) return unfinished + open;  // they may still end
  return tb.claim_window_end(window) ? unfinished + open : unfinished;
}

}  // namespace

bool collect_thread_records(ThreadBuffer& tb, const ThreadCollect& how, ResultBuilder& builder, NameMap& names,
                            const TickConverter& clock) {
  bool has_thread = false;
  uint32_t thread = 0;
  const bool finished = tb.drain(how.keep_spares, [&](const RawRecord* records, uint32_t n, bool parked) {
    if (!has_thread) {
      thread = builder.thread(tb.tid());
      builder.set_thread_name(thread, tb.name());
      // Every record written since the last collect is about to arrive.
      const uint64_t recorded = tb.recorded_events();
      builder.reserve_events(thread, recorded > tb.collected_records ? recorded - tb.collected_records : 0);
      has_thread = true;
    }
    RecordConverter converter(builder, names, clock, thread, tb.open_event_args);
    tb.collected_records += parked ? converter.discard(records, n) : converter.convert(records, n);
    tb.dropped_at_collect += converter.dropped();
  });
  // Arguments of events still open wait for them while the window goes
  // on; once it has closed (or the thread has exited) those events can no
  // longer end, and their arguments are counted as lost.
  if (!how.recording || finished) tb.open_event_args.abandon();
  // Profiling has closed (no spares are kept): an idle thread need not hold
  // a whole chunk until it records again, or exits.
  if (!how.keep_spares && !finished) tb.park_idle_chunk();
  ResultInfo& totals = builder.info();
  report_thread_counters(tb, totals);
  totals.unfinished_events += unfinished_events(tb, how);
  return finished;
}

}  // namespace profkit
