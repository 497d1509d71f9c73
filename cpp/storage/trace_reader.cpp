#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "export/chrome_trace_reader.h"
#include "storage/file_bytes.h"
#include "storage/record_layouts.h"
#include "storage/trace_checksum.h"
#include "storage/trace_file.h"
#include "trace_generated.h"

namespace profkit {

namespace fb = profkit::schema;

namespace {

[[noreturn]] void corrupt(const std::string& path, const std::string& problem) {
  throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': " + problem);
}

// Explains why a buffer without our identifier is not a trace.
std::string foreign_file_problem(const uint8_t* data, size_t size) {
  // gzip's magic bytes: a compressed trace that reached the engine as it is
  // (the Python layer decompresses files and pipes; a C caller does not).
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    return "it is gzip-compressed data, not a profkit trace; decompress it first (gunzip -c FILE > FILE.pktrace), "
           "or load it with profkit's Python load_profiler_result, which decompresses it";
  }
  size_t i = 0;
  while (i < size && i < 64 && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t')) ++i;
  if (i < size && (data[i] == '{' || data[i] == '[')) {
    return "it looks like JSON (a Chrome trace?), not a profkit trace; load the .pktrace file written by "
           "export_protobuf / pk_result_save";
  }
  return "it is not a profkit trace (no 'PKTR' file identifier)";
}

// A record column read in place from the file's bytes, or copied when it is
// not aligned for its records. profkit's writer aligns every one, but the
// FlatBuffers verifier only checks a vector's 4-byte length, so a damaged or
// foreign file can place 8-byte records 4 bytes off: reading those in place
// is undefined behaviour (and a fault where alignment is enforced), and
// pk_result_host_events & co. would hand callers misaligned arrays.
template <class Record, class Schema>
Column<Record> borrow(const flatbuffers::Vector<const Schema*>* v) {
  if (v == nullptr) return {};
  static_assert(sizeof(Record) == sizeof(Schema), "a record and its schema struct share one layout");
  const uint8_t* bytes = v->Data();
  if (reinterpret_cast<uintptr_t>(bytes) % alignof(Record) != 0) {
    std::vector<Record> copy(v->size());
    if (!copy.empty()) std::memcpy(copy.data(), bytes, copy.size() * sizeof(Record));
    return Column<Record>(std::move(copy));
  }
  return Column<Record>::borrowed(reinterpret_cast<const Record*>(bytes), v->size());
}

std::string str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

// Every host event, thread by thread (the thread table is checked to cover
// them all, in order), in one pass over the largest column. Each is valid on
// its own (name id, type, times; an instant lasts no time: the recorder and
// the JSON reader give it its start as its end), and the thread's events are
// as ResultBuilder lays them out (trace/event_order.h) in every file profkit
// writes, whatever recorded them: begin/end pairs, runtime calls, events
// carried over from an earlier collect, and events recorded whole
// (pk_complete_event, with_stack's Python calls, torch's record_function
// ranges), which nest by time alone and may overlap a sibling. Start times
// never decrease, and of two with one start the longer comes first. Each
// event's depth is the one nest_by_containment gives it from the times: an
// event at depth d + 1 ends no later than the open event at depth d it is
// nested in (its parent), and one at depth d ends after the event it follows
// at depth d (else it would be nested in that one). Depth saturates at 255:
// there the parent is the open event at depth 254, and whether an event is
// nested in the depth-255 one before it cannot be told. Summaries, parent
// lookups and the exporters rely on all of this; a file that breaks it (one
// flipped byte in a time or a depth often does) would load and report
// children that outlast their parents and times years past the recording.
//
// Times are not held to the span [start_ns, end_ns]: valid results have
// host events outside it. An event still open at a collect comes with the
// next result and starts before that one's span (or a runtime call ends past
// it), and pk_complete_event takes any times: a result with an event from 0
// to UINT64_MAX saves and loads back (see pk_result_export_chrome).
void check_host_events(const std::string& path, const Result& r) {
  const size_t strings = r.strings.size();
  constexpr uint32_t kDeepest = 255;  // a stored depth saturates here
  // The end times of the open events: open_ends[d] is the latest event at
  // depth d, for d up to the last event's depth.
  std::vector<uint64_t> open_ends;
  for (size_t t = 0; t < r.threads.size(); ++t) {
    const ThreadRecord& th = r.threads[t];
    const auto where = [&](uint64_t k) {
      return "thread " + std::to_string(t) + " (tid " + std::to_string(th.tid) + "), event " + std::to_string(k) +
             " (host event " + std::to_string(th.first_event + k) + ")";
    };
    open_ends.clear();
    const pk_host_event* previous = nullptr;
    for (uint64_t k = 0; k < th.event_count; ++k) {
      const pk_host_event& e = r.host_events[th.first_event + k];
      if (e.name >= strings || e.type >= PK_EVENT_TYPE_COUNT || e.end_ns < e.start_ns) {
        corrupt(path, "host event " + std::to_string(th.first_event + k) +
                          " is invalid (name id, type or times out of range)");
      }
      if ((e.flags & PK_HOST_EVENT_INSTANT) != 0 && e.end_ns != e.start_ns) {
        corrupt(path, where(k) + " is an instant event that lasts " + std::to_string(e.end_ns - e.start_ns) +
                          " ns; an instant has no duration (the file is corrupt)");
      }
      if (previous != nullptr && e.start_ns < previous->start_ns) {
        corrupt(path, where(k) +
                          " starts before the event before it; a thread's events are in start order "
                          "(the file is corrupt)");
      }
      if (previous != nullptr && e.start_ns == previous->start_ns && e.end_ns > previous->end_ns) {
        corrupt(path, where(k) +
                          " starts with the event before it but ends after it; of events with one start the "
                          "longer one comes first (the file is corrupt)");
      }
      const uint32_t depth_limit = previous == nullptr ? 0 : uint32_t{previous->depth} + 1;
      if (e.depth > depth_limit) {
        corrupt(path, where(k) + " has nesting depth " + std::to_string(e.depth) + " where at most " +
                          std::to_string(depth_limit) + " can follow the event before it (the file is corrupt)");
      }
      const uint32_t depth = e.depth;
      if (depth > 0) {
        const uint32_t parent_depth = std::min(depth, kDeepest) - 1;
        if (open_ends[parent_depth] < e.end_ns) {
          corrupt(path, where(k) + " ends at " + std::to_string(e.end_ns) +
                            " ns, after the event it is nested in (at depth " + std::to_string(parent_depth) +
                            ", ending at " + std::to_string(open_ends[parent_depth]) +
                            " ns); a nested event ends within its parent (the file is corrupt)");
        }
      }
      if (depth < kDeepest && depth < open_ends.size() && open_ends[depth] >= e.end_ns) {
        corrupt(path, where(k) + " at nesting depth " + std::to_string(depth) + " ends at " + std::to_string(e.end_ns) +
                          " ns, within the event before it at that depth (ending at " +
                          std::to_string(open_ends[depth]) + " ns), which it would be nested in (the file is corrupt)");
      }
      open_ends.resize(depth + 1);
      open_ends[depth] = e.end_ns;
      previous = &e;
    }
  }
}

// The checks the FlatBuffers verifier cannot do: every index points inside
// its table, so nothing downstream can read out of bounds; and the order and
// nesting every file profkit writes has (ResultBuilder sorts and nests what
// it is given), so that damage that keeps indices in range is refused here
// rather than loading as impossible numbers.
void check_consistency(const std::string& path, const Result& r) {
  // The recorder's span starts where the previous collect's ended, or where
  // recording started, and ends at this collect or where recording stopped:
  // never before it starts, and within the engine clock's range (ns since
  // boot, up to INT64_MAX: the JSON reader holds the span to it too).
  if (r.info.start_ns > r.info.end_ns) {
    corrupt(path, "its recording span starts after it ends (start_ns " + std::to_string(r.info.start_ns) +
                      " > end_ns " + std::to_string(r.info.end_ns) + "; the file is corrupt)");
  }
  if (r.info.end_ns > static_cast<uint64_t>(INT64_MAX)) {
    corrupt(path, "its recording span ends at " + std::to_string(r.info.end_ns) +
                      " ns, past the engine clock's range (" + std::to_string(INT64_MAX) + " ns; the file is corrupt)");
  }
  const size_t strings = r.strings.size();
  const size_t events = r.host_events.size();
  uint64_t expected_first = 0;
  for (size_t t = 0; t < r.threads.size(); ++t) {
    const ThreadRecord& th = r.threads[t];
    if (th.first_event != expected_first || th.event_count > events - expected_first) {
      corrupt(path, "thread " + std::to_string(t) + " claims events [" + std::to_string(th.first_event) + ", +" +
                        std::to_string(th.event_count) + ") outside the " + std::to_string(events) +
                        " host events (the file is corrupt)");
    }
    expected_first += th.event_count;
  }
  if (expected_first != events) {
    corrupt(path, std::to_string(events - expected_first) + " host events belong to no thread (the file is corrupt)");
  }
  check_host_events(path, r);
  // Arguments are sorted by their event, memory events by time and GPU work
  // by start (ResultBuilder::finish), and GPU work is launched by a CUDA
  // runtime call (the only host events it attaches to).
  for (size_t i = 0; i < r.event_args.size(); ++i) {
    const pk_event_arg& a = r.event_args[i];
    const bool value_ok =
        a.kind == PK_ARG_INT || (a.kind == PK_ARG_STRING && a.value >= 0 && static_cast<uint64_t>(a.value) < strings);
    if (a.event >= events || a.key >= strings || !value_ok) {
      corrupt(path, "event argument " + std::to_string(i) + " is invalid");
    }
    if (i > 0 && a.event < r.event_args[i - 1].event) {
      corrupt(path, "event argument " + std::to_string(i) +
                        " is out of order (arguments are sorted by their event; the file is corrupt)");
    }
  }
  for (size_t i = 0; i < r.memory_events.size(); ++i) {
    if (r.memory_events[i].thread >= r.threads.size()) {
      corrupt(path, "memory event " + std::to_string(i) + " names a thread that does not exist");
    }
    if (i > 0 && r.memory_events[i].time_ns < r.memory_events[i - 1].time_ns) {
      corrupt(path, "memory event " + std::to_string(i) +
                        " is earlier than the one before it (memory events are in time order; the file is corrupt)");
    }
  }
  for (size_t i = 0; i < r.device_events.size(); ++i) {
    const pk_device_event& d = r.device_events[i];
    const bool kernel = d.type == PK_EVENT_KERNEL;
    const bool memop = d.type == PK_EVENT_MEMCPY || d.type == PK_EVENT_MEMSET;
    const size_t details = kernel ? r.kernel_details.size() : r.memory_op_details.size();
    if (d.name >= strings || !(kernel || memop) || d.end_ns < d.start_ns ||
        (d.launch_event != PK_NO_EVENT && d.launch_event >= events) ||
        (d.detail != PK_NO_DETAIL && d.detail >= details)) {
      corrupt(path, "device event " + std::to_string(i) + " is invalid");
    }
    if (d.launch_event != PK_NO_EVENT && r.host_events[d.launch_event].type != PK_EVENT_CUDA_RUNTIME) {
      corrupt(path, "device event " + std::to_string(i) + " names host event " + std::to_string(d.launch_event) +
                        " as its launch, which is not a CUDA runtime call (the file is corrupt)");
    }
    if (i > 0 && d.start_ns < r.device_events[i - 1].start_ns) {
      corrupt(path, "device event " + std::to_string(i) +
                        " starts before the one before it (GPU work is in start order; the file is corrupt)");
    }
  }
}

// The size prefix and identifier a .pktrace starts with, and a size that
// matches the prefix: a foreign, empty, cut or padded file is named as such
// before the FlatBuffers verifier reports it only as corrupt.
void check_framing(const std::string& path, const uint8_t* data, size_t size) {
  if (size == 0) corrupt(path, "the file is empty (0 bytes), not a profkit trace");
  if (size < 12) corrupt(path, "the file is too small (" + std::to_string(size) + " bytes) to be a profkit trace");
  if (!flatbuffers::BufferHasIdentifier(data, fb::TraceIdentifier(), /*size_prefixed=*/true)) {
    corrupt(path, foreign_file_problem(data, size));
  }
  const uint64_t expected = static_cast<uint64_t>(flatbuffers::GetPrefixedSize(data)) + sizeof(flatbuffers::uoffset_t);
  if (expected > size) {
    corrupt(path, "the file is truncated (" + std::to_string(size) + " of " + std::to_string(expected) +
                      " bytes); it was cut short while being copied or written");
  }
  if (expected < size) {
    corrupt(path, "the file is corrupt (" + std::to_string(size - expected) + " unexpected bytes after the trace)");
  }
}

// From schema 2 on, the bytes give the checksum stored with them. Schema 1
// files carry none, and load as they always have. Every schema from 2 on
// carries it (the field is never removed or redefined), so a file from a
// newer profkit is checked too.
void check_checksum(const std::string& path, const uint8_t* data, size_t size, const fb::Trace& trace) {
  constexpr uint32_t kFirstChecksummedSchema = 2;
  if (trace.schema_version() < kFirstChecksummedSchema) return;
  const uint8_t* field = checksum_field(data);
  if (field == nullptr) {
    corrupt(path, "the file is corrupt (it says it is schema " + std::to_string(trace.schema_version()) +
                      " but has no checksum, which every trace from schema 2 on carries)");
  }
  const uint32_t stored = stored_checksum(field);
  const uint32_t actual = trace_checksum(data, size, field);
  if (actual != stored) {
    char detail[96];
    std::snprintf(detail, sizeof detail, "its checksum is CRC-32C 0x%08x, its bytes now give 0x%08x", stored, actual);
    corrupt(path, std::string("the file is corrupt: its bytes changed after profkit wrote it (") + detail +
                      "), as a failing disk or an interrupted copy leaves a file; copy it again from where it was "
                      "recorded, or record it again");
  }
}

// The verified trace, of a schema this profkit reads, with its metadata table.
const fb::Trace* verified_trace(const std::string& path, const uint8_t* data, size_t size) {
  // Generous limits: a trace has few tables (threads, devices, metadata).
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/16, /*max_tables=*/16u << 20);
  if (!fb::VerifySizePrefixedTraceBuffer(verifier)) {
    corrupt(path, "the file is corrupt (" + std::to_string(size) +
                      " bytes failed FlatBuffers verification); it cannot be read");
  }
  const fb::Trace* trace = fb::GetSizePrefixedTrace(data);
  // Schema 0 (or none) was never written: a damaged version, which would
  // otherwise also skip the checksum.
  if (trace->schema_version() == 0) corrupt(path, "the file is corrupt (it states no schema version)");
  if (trace->min_reader_version() > trace->schema_version()) {
    // No writer asks for a newer reader than its own schema: damage, not age.
    corrupt(path, "the file is corrupt (it needs schema " + std::to_string(trace->min_reader_version()) +
                      " to read but says it is schema " + std::to_string(trace->schema_version()) + ")");
  }
  // Before the version check below: a damaged min_reader_version would
  // otherwise read as a file from a newer profkit.
  check_checksum(path, data, size, *trace);
  if (trace->min_reader_version() > kSchemaVersion) {
    throw Error(PK_ERR_VERSION, "cannot load '" + path + "': it was written by a newer profkit (schema " +
                                    std::to_string(trace->schema_version()) + ", readable from schema " +
                                    std::to_string(trace->min_reader_version()) + "; this profkit reads schema " +
                                    std::to_string(kSchemaVersion) + "); upgrade profkit");
  }
  if (trace->metadata() == nullptr) corrupt(path, "the file has no metadata table (it is corrupt)");
  return trace;
}

ResultInfo info_from(const fb::Trace& trace) {
  const fb::Metadata* m = trace.metadata();
  ResultInfo info;
  info.profkit_version = str(m->profkit_version());
  info.schema_version = trace.schema_version();
  info.pid = m->pid();
  info.hostname = str(m->hostname());
  info.rank = m->rank();
  info.world_size = m->world_size();
  info.span_index = m->span_index();
  info.start_ns = m->start_ns();
  info.end_ns = m->end_ns();
  info.clock_offset_ns = m->clock_offset_ns();
  info.dropped_events = m->dropped_events();
  info.unmatched_ends = m->unmatched_ends();
  info.overflowed_events = m->overflowed_events();
  info.unfinished_events = m->unfinished_events();
  info.dropped_device_records = m->dropped_device_records();
  info.unattached_device_records = m->unattached_device_records();
  info.process_cpu_ns = m->process_cpu_ns();
  info.system_busy_ns = m->system_busy_ns();
  info.system_idle_ns = m->system_idle_ns();
  info.cpu_count = m->cpu_count();
  info.lost_event_args = m->lost_event_args();
  return info;
}

// The small tables are copied; the record columns are borrowed from the
// file's bytes (which r.backing keeps alive) where they are aligned.
void read_tables(const fb::Trace& trace, Result& r) {
  if (trace.metadata()->extra() != nullptr) {
    for (const fb::KeyValue* kv : *trace.metadata()->extra()) r.metadata.emplace_back(str(kv->key()), str(kv->value()));
  }
  if (trace.strings() != nullptr) {
    for (const flatbuffers::String* s : *trace.strings()) r.strings.add_borrowed(s->c_str(), s->size());
  }
  if (trace.threads() != nullptr) {
    for (const fb::Thread* t : *trace.threads()) {
      r.threads.push_back({t->tid(), str(t->name()), t->first_event(), t->event_count()});
    }
  }
  if (trace.devices() != nullptr) {
    for (const fb::Device* d : *trace.devices()) {
      r.devices.push_back({d->id(), str(d->name()), d->sm_count(), d->compute_major(), d->compute_minor(),
                           d->total_memory(), d->max_threads_per_sm(), d->max_registers_per_sm(),
                           d->max_shared_memory_per_sm(), d->max_blocks_per_sm(), d->warp_size()});
    }
  }
  r.host_events = borrow<pk_host_event>(trace.host_events());
  r.event_args = borrow<pk_event_arg>(trace.event_args());
  r.memory_events = borrow<pk_memory_event>(trace.memory_events());
  r.device_events = borrow<pk_device_event>(trace.device_events());
  r.kernel_details = borrow<pk_kernel_detail>(trace.kernel_details());
  r.memory_op_details = borrow<pk_memory_op_detail>(trace.memory_op_details());
}

}  // namespace

std::unique_ptr<Result> load_result(const std::string& path) {
  // No trace is larger than one FlatBuffer can be (the verifier takes less
  // than 2 GiB), so a larger file is refused before it is read into memory.
  const std::shared_ptr<const FileBytes> file = FileBytes::read(path, FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  // A pipe or FIFO can be read only once, so pk_result_load's look at a
  // file's first bytes (looks_like_json_file) leaves it to us: profkit's
  // Chrome JSON is told apart here, from the bytes read.
  if (!file->regular_file() && starts_like_json(file->data(), file->size())) {
    return read_chrome_trace_bytes(path, file->data(), file->size());
  }
  check_framing(path, file->data(), file->size());
  const fb::Trace* trace = verified_trace(path, file->data(), file->size());

  auto r = std::make_unique<Result>();
  r->backing = file;
  r->info = info_from(*trace);
  read_tables(*trace, *r);
  check_consistency(path, *r);
  return r;
}

}  // namespace profkit
