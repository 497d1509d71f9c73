#include "summary/overview_table.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/event_types.h"
#include "summary/host_walk.h"

namespace profkit {

namespace {

struct TypeRow {
  uint32_t type;
  uint64_t calls;
  double cpu_ns;  // NaN when the type has no host side
  double gpu_ns;  // NaN when it has no GPU side
};

double largest_time(const TypeRow& r) {
  const double cpu = is_missing(r.cpu_ns) ? -1 : r.cpu_ns;
  const double gpu = is_missing(r.gpu_ns) ? -1 : r.gpu_ns;
  return std::max(cpu, gpu);
}

// Communication events that are no call of their own, by name, as
// profkit.cross_rank counts calls too:
// - an asynchronous collective's second event, "<name> (in flight)" on the
//   thread "profkit: collectives in flight", spans the time its work was
//   under way: the same call again (IN_FLIGHT_SUFFIX in
//   python/profkit/integrations/_collectives_in_flight.py);
// - "DDP wait for all_reduce" is the end of a backward pass waiting for
//   DDP's bucket all-reduces, already calls (DDP_WAIT_NAME in
//   python/profkit/integrations/_collective_calls.py).
constexpr std::string_view kInFlightSuffix = " (in flight)";
constexpr std::string_view kDdpWaitName = "DDP wait for all_reduce";

bool is_no_call_name(std::string_view name) noexcept {
  const bool in_flight =
      name.size() >= kInFlightSuffix.size() && name.substr(name.size() - kInFlightSuffix.size()) == kInFlightSuffix;
  return in_flight || name == kDdpWaitName;
}

// The Communication events that are no calls. The names are checked first:
// the string table is far shorter than the events, and only runs of
// asynchronous CPU collectives or instrumented DDP have such a name.
uint64_t no_call_events(const Result& r) {
  std::vector<uint8_t> no_call(r.strings.size(), 0);
  bool any = false;
  for (size_t i = 0; i < r.strings.size(); ++i) {
    no_call[i] = is_no_call_name(r.strings.view(i));
    any |= no_call[i] != 0;
  }
  if (!any) return 0;
  uint64_t events = 0;
  for (const pk_host_event& e : r.host_events) {
    // As host_calls counts them: instants are no calls.
    events += e.type == PK_EVENT_COMMUNICATION && !is_instant(e) && e.name < no_call.size() && no_call[e.name];
  }
  return events;
}

// The Communication row's calls: the calls made on the CPU, or, when none
// was recorded (NCCL kernels launched by a library's own thread), the GPU
// communication records.
uint64_t communication_calls(const SummaryContext& c, const CommunicationTimes& communication) {
  const uint64_t host = c.host_calls[PK_EVENT_COMMUNICATION];
  const uint64_t calls = host == 0 ? 0 : host - std::min(host, no_call_events(*c.result));
  return calls > 0 ? calls : communication.gpu_calls;
}

}  // namespace

SummaryTable make_overview_table(const SummaryContext& c, const CommunicationTimes& communication) {
  SummaryTable t(SummaryView::kOverview, "Overview Summary", "Event Type");
  t.nested = true;
  t.has_device_data = c.has_device_data;
  const size_t calls = t.add_column("Calls", ColumnKind::kCount);
  const size_t cpu = t.add_column("CPU Time", ColumnKind::kTime);
  const size_t cpu_ratio = t.add_column("CPU Ratio(%)", ColumnKind::kPercent);
  const size_t gpu = t.add_column("GPU Time", ColumnKind::kTime, {}, /*device_only=*/true);
  const size_t gpu_ratio = t.add_column("GPU Ratio(%)", ColumnKind::kPercent, {}, /*device_only=*/true);
  const double total = static_cast<double>(c.total_time_ns);

  SummaryRow& first = t.add_row(c.has_steps ? "ProfileStep" : "Total Time");
  if (c.has_steps) first.values[calls] = static_cast<double>(c.host_calls[PK_EVENT_PROFILE_STEP]);
  first.values[cpu] = total;
  first.values[cpu_ratio] = percent(total, total);
  if (c.zero_length_steps()) {  // listed with their calls, under the span they do not measure
    SummaryRow& steps = t.add_row("ProfileStep", 1);
    steps.values[calls] = static_cast<double>(c.host_calls[PK_EVENT_PROFILE_STEP]);
    steps.values[cpu] = 0;
    steps.values[cpu_ratio] = 0;
  }

  std::vector<TypeRow> host;
  std::vector<TypeRow> device;
  for (uint32_t type = 0; type < PK_EVENT_TYPE_COUNT; ++type) {
    if (type == PK_EVENT_PROFILE_STEP) continue;
    if (is_device_type(type)) {
      // A host event may carry a GPU type too (a RecordEvent of type Memcpy
      // around a host-side copy): a CPU row of its own, apart from the GPU
      // records' row.
      if (c.host_calls[type] > 0) {
        host.push_back({type, c.host_calls[type], static_cast<double>(c.host_union_ns[type]), kMissing});
      }
      if (c.device_calls[type] > 0) {
        device.push_back({type, c.device_calls[type], kMissing, static_cast<double>(c.device_union_ns[type])});
      }
    } else if (type == PK_EVENT_COMMUNICATION) {
      if (c.host_calls[type] > 0 || communication.gpu_calls > 0) {
        TypeRow row{type, communication_calls(c, communication), kMissing, kMissing};
        if (c.host_calls[type] > 0) row.cpu_ns = static_cast<double>(c.host_union_ns[type]);
        if (communication.gpu_calls > 0) row.gpu_ns = static_cast<double>(total_length(communication.gpu));
        (c.host_calls[type] > 0 ? host : device).push_back(row);
      }
    } else if (c.host_calls[type] > 0) {
      host.push_back({type, c.host_calls[type], static_cast<double>(c.host_union_ns[type]), kMissing});
    }
  }
  // Largest first; equal times in type order.
  auto by_time = [](const TypeRow& a, const TypeRow& b) { return largest_time(a) > largest_time(b); };
  std::stable_sort(host.begin(), host.end(), by_time);
  std::stable_sort(device.begin(), device.end(), by_time);
  for (const std::vector<TypeRow>* group : {&host, &device}) {
    for (const TypeRow& r : *group) {
      SummaryRow& row = t.add_row(std::string(event_type_name(r.type)), 1);
      row.values[calls] = static_cast<double>(r.calls);
      if (!is_missing(r.cpu_ns)) {
        row.values[cpu] = r.cpu_ns;
        row.values[cpu_ratio] = percent(r.cpu_ns, total);
      }
      if (!is_missing(r.gpu_ns)) {
        row.values[gpu] = r.gpu_ns;
        row.values[gpu_ratio] = percent(r.gpu_ns, total);
      }
    }
  }
  t.notes.push_back(std::string("Time of one type counts once where its events overlap (across threads") +
                    (c.has_device_data ? " for CPU types, across streams for GPU types" : "") +
                    "); types nest and overlap each other, so ratios do not add up to 100%.");
  t.notes.push_back("Ratio = time / total time (" + c.total_time_source() + ").");
  if (c.zero_length_steps()) t.notes.push_back(c.zero_length_steps_note());
  if (c.time_outside_window()) t.notes.push_back(c.outside_window_note());
  return t;
}

}  // namespace profkit
