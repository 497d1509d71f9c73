#include "summary/communication.h"

#include <cctype>
#include <utility>

namespace profkit {

bool contains_ignoring_case(std::string_view name, std::string_view needle) noexcept {
  if (needle.empty()) return true;
  if (name.size() < needle.size()) return false;
  for (size_t i = 0; i + needle.size() <= name.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && std::tolower(static_cast<unsigned char>(name[i + k])) ==
                                    std::tolower(static_cast<unsigned char>(needle[k]))) {
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}

CommunicationTimes compute_communication(const SummaryContext& context, const CommunicationLaunches* launches,
                                         bool host_computation_without_kernels) {
  const Result& r = *context.result;
  CommunicationTimes out;
  // Kernel names are few; decide "nccl" once per string id.
  std::vector<int8_t> nccl_name;  // -1 unknown, 0 no, 1 yes
  IntervalMerger gpu(&out.gpu);
  IntervalMerger computation(&out.computation);
  for (uint64_t d = 0; d < r.device_events.size(); ++d) {
    const pk_device_event& e = r.device_events[d];
    if (e.type != PK_EVENT_KERNEL && e.type != PK_EVENT_MEMCPY && e.type != PK_EVENT_MEMSET) continue;
    bool communication = launches != nullptr && launches->marked(d);
    if (!communication && e.type == PK_EVENT_KERNEL) {
      if (nccl_name.empty()) nccl_name.assign(r.strings.size() + 1, -1);
      int8_t& known = nccl_name[e.name < r.strings.size() ? e.name : r.strings.size()];
      if (known < 0) known = contains_ignoring_case(r.strings.view_or_empty(e.name), "nccl") ? 1 : 0;
      communication = known == 1;
    }
    if (communication) {
      ++out.gpu_calls;
      gpu.add(e.start_ns, e.end_ns);
    } else if (e.type == PK_EVENT_KERNEL) {
      computation.add(e.start_ns, e.end_ns);
    }
  }
  gpu.flush();
  computation.flush();
  out.all = union_of(context.communication_cpu, out.gpu);
  out.recorded = !out.all.empty() || out.gpu_calls > 0;
  if (host_computation_without_kernels && context.device_calls[PK_EVENT_KERNEL] == 0 && out.any()) {
    HostComputation host = compute_host_computation(context);
    out.computation = std::move(host.intervals);
    out.host_computation = host.source;
  }
  // Shown as shares of total time, like the Overview's unions: only the
  // part inside total_window counts (NCCL work still running after the last
  // step, a barrier before the first).
  out.gpu = intersection_of(out.gpu, context.total_window);
  out.all = intersection_of(out.all, context.total_window);
  out.computation = intersection_of(out.computation, context.total_window);
  out.overlap_ns = length_within(out.all, out.computation);
  return out;
}

}  // namespace profkit
