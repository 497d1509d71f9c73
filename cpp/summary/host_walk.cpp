#include "summary/host_walk.h"

#include <algorithm>
#include <array>

#include "common/compiler.h"
#include "profkit/profkit.h"

namespace profkit {

namespace {

bool is_operator_like(uint32_t type) noexcept { return type == PK_EVENT_OPERATOR || type == PK_EVENT_OPERATOR_INNER; }

// GPU work in the order of its launching host event. Host events are grouped
// by thread, and a thread's GPU work usually starts in the order it was
// launched, so bucketing by thread leaves runs that are already sorted: no
// full sort of millions of records in the common case.
std::vector<LaunchedWork> launch_order(const Result& r) {
  const size_t threads = r.threads.size();
  std::vector<uint64_t> bucket_start(threads + 1, 0);
  std::vector<uint32_t> thread_of_launch(r.device_events.size(), UINT32_MAX);
  for (uint64_t d = 0; d < r.device_events.size(); ++d) {
    const uint64_t host = r.device_events[d].launch_event;
    if (host >= r.host_events.size() || threads == 0) continue;
    thread_of_launch[d] = static_cast<uint32_t>(r.thread_of(host));
    ++bucket_start[thread_of_launch[d] + 1];
  }
  for (size_t t = 0; t < threads; ++t) bucket_start[t + 1] += bucket_start[t];
  std::vector<LaunchedWork> order(bucket_start[threads]);
  std::vector<uint64_t> next(bucket_start.begin(), bucket_start.end() - 1);
  for (uint64_t d = 0; d < r.device_events.size(); ++d) {
    if (thread_of_launch[d] == UINT32_MAX) continue;
    const pk_device_event& e = r.device_events[d];
    order[next[thread_of_launch[d]]++] = {e.launch_event, d,      e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0,
                                          e.name,         e.type, (e.flags & PK_DEVICE_EVENT_NO_TIMING) != 0};
  }
  auto by_launch = [](const LaunchedWork& a, const LaunchedWork& b) {
    return a.host_event != b.host_event ? a.host_event < b.host_event : a.device_event < b.device_event;
  };
  for (size_t t = 0; t < threads; ++t) {
    auto first = order.begin() + static_cast<ptrdiff_t>(bucket_start[t]);
    auto last = order.begin() + static_cast<ptrdiff_t>(bucket_start[t + 1]);
    if (!std::is_sorted(first, last, by_launch)) std::sort(first, last, by_launch);
  }
  return order;
}

class Walk {
 public:
  Walk(const Result& r, const std::vector<HostEventVisitor*>& visitors) : r_(r), launches_(launch_order(r)) {
    for (HostEventVisitor* v : visitors) {
      const uint32_t mask = v->type_mask();
      for (uint32_t t = 0; t < PK_EVENT_TYPE_COUNT; ++t) {
        const bool any_name = (v->types_past_name_filter() & type_bit(t)) != 0;
        if (mask & type_bit(t)) by_type_[t].push_back({v, any_name ? nullptr : v->name_filter()});
      }
      if (v->wants_launches()) launch_visitors_.push_back(v);
    }
    all_ = visitors;
  }

  void run() {
    size_t next_launch = 0;
    for (size_t t = 0; t < r_.threads.size(); ++t) {
      for (HostEventVisitor* v : all_) v->begin_thread(t);
      const ThreadRecord& thread = r_.threads[t];
      const uint64_t end = std::min<uint64_t>(thread.first_event + thread.event_count, r_.host_events.size());
      // Launches of events before this thread (none in a well-formed Result)
      // are skipped, not misattributed.
      while (next_launch < launches_.size() && launches_[next_launch].host_event < thread.first_event) {
        ++next_launch;
      }
      for (uint64_t i = thread.first_event; i < end; ++i) {
        const pk_host_event& e = r_.host_events[i];
        // The outermost event it closes contains the others: if that one has
        // not ended by its start, it crosses them.
        if (stack_.size() > e.depth && PK_UNLIKELY(r_.host_events[stack_[e.depth].index].end_ns > e.start_ns)) {
          close_crossed(e.depth, e.start_ns);
        }
        while (stack_.size() > e.depth) close_top();
        open(i, e);
        while (next_launch < launches_.size() && launches_[next_launch].host_event == i) {
          launch(launches_[next_launch++]);
        }
      }
      while (!stack_.empty()) close_top();
      for (HostEventVisitor* v : all_) v->end_thread(t);
    }
  }

 private:
  static uint32_t type_of(const pk_host_event& e) noexcept {
    return e.type < PK_EVENT_TYPE_COUNT ? e.type : static_cast<uint32_t>(PK_EVENT_USER_DEFINED);
  }

  // Closes the open events from stack position `first` up, as the event
  // starting at `start_ns` opens and crosses those not ended by then: it is
  // not nested in them and outlasts them, so from there on their time is
  // its own (host_walk.h). Each gives up the rest of its time, which its
  // parent does not get back as its child's either. Rare: out of the way of
  // the walk's loop.
  PK_NOINLINE PK_COLD void close_crossed(size_t first, uint64_t start_ns) {
    uint64_t first_lost = 0;
    for (size_t p = first; p < stack_.size(); ++p) {
      const pk_host_event& e = r_.host_events[stack_[p].index];
      const bool takes_time = e.end_ns > e.start_ns && !is_instant(e);
      const uint64_t lost = takes_time && e.end_ns > start_ns ? e.end_ns - std::max(start_ns, e.start_ns) : 0;
      // Outermost first: a child gives up no more than its parent, which
      // contains it, so the parent's sum does not dip below 0 on the way.
      stack_.frame(p).children_ns += lost;
      if (p > first) {
        stack_.frame(p - 1).children_ns -= lost;
      } else {
        first_lost = lost;
      }
    }
    while (stack_.size() > first) close_top();
    if (!stack_.empty()) stack_.top().children_ns -= first_lost;  // it got all of that child's time
  }

  void open(uint64_t i, const pk_host_event& e) {
    if (stack_.full()) close_top();  // only with inconsistent depths
    OpenEvent o;
    o.index = i;
    o.name = e.name;
    const uint32_t type = type_of(e);
    o.type = static_cast<uint8_t>(type);
    if (!stack_.empty()) {
      const OpenEvent& parent = stack_.back();
      const uint32_t parent_position = static_cast<uint32_t>(stack_.size() - 1);
      o.nearest_op = is_operator_like(parent.type) ? parent_position : parent.nearest_op;
      o.in_communication = parent.in_communication;
    }
    if (type == PK_EVENT_COMMUNICATION) o.in_communication = true;
    stack_.push(o);
    for (const Subscriber& s : by_type_[type]) {
      if (s.wants(o.name)) s.visitor->on_open(stack_);
    }
  }

  void close_top() {
    const OpenEvent& closed = stack_.pop();  // no copy: read in place
    for (const Subscriber& s : by_type_[closed.type]) {
      if (s.wants(closed.name)) s.visitor->on_close(stack_, closed);
    }
    if (!stack_.empty()) {
      OpenEvent& parent = stack_.top();
      parent.gpu_ns += closed.gpu_ns;
      // Read here rather than kept in OpenEvent: frames of 56 bytes instead
      // of 40 made bench_summary's walk of 10 M events ~25 % slower.
      // Instants take no time, also where a damaged file gives one an end.
      const pk_host_event& e = r_.host_events[closed.index];
      if (e.end_ns > e.start_ns && (e.flags & PK_HOST_EVENT_INSTANT) == 0) parent.children_ns += e.end_ns - e.start_ns;
    }
  }

  void launch(const LaunchedWork& work) {
    stack_.top().gpu_ns += work.duration_ns;
    for (HostEventVisitor* v : launch_visitors_) v->on_launch(stack_, work);
  }

  const Result& r_;
  std::vector<LaunchedWork> launches_;
  struct Subscriber {
    HostEventVisitor* visitor;
    const std::vector<uint8_t>* names;
    bool wants(uint32_t name) const noexcept {
      return names == nullptr || (name < names->size() && (*names)[name] != 0);
    }
  };

  std::array<std::vector<Subscriber>, PK_EVENT_TYPE_COUNT> by_type_;
  std::vector<HostEventVisitor*> launch_visitors_;
  std::vector<HostEventVisitor*> all_;
  OpenStack stack_;
};

}  // namespace

void walk_host_events(const Result& result, const std::vector<HostEventVisitor*>& visitors) {
  Walk(result, visitors).run();
}

}  // namespace profkit
