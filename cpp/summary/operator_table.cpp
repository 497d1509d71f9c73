#include "summary/operator_table.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "summary/call_table.h"
#include "summary/frame_labels.h"

namespace profkit {

namespace {

constexpr std::string_view kFlopsKey = "flops";
constexpr std::string_view kShapesKey = "input_shapes";
constexpr std::string_view kBuiltinPrefix = "<built-in";
constexpr std::string_view kFrameSeparator = " <- ";

bool is_operator_like(uint32_t type) noexcept { return type == PK_EVENT_OPERATOR || type == PK_EVENT_OPERATOR_INNER; }

// (row << 32 | name) for rows under a row, (group << 32 | name) for grouped
// operator rows, (shapes << 32 | stack) for a group.
uint64_t pair_key(uint32_t high, uint32_t low) noexcept { return (static_cast<uint64_t>(high) << 32) | low; }

// Whether Operator event `child`, its parent's only child, folds into Operator
// event `parent` as torch.profiler's tables fold it: the same name text (a
// loaded or merged Result may repeat a text under several ids).
bool folds_into(const Result& r, uint64_t child, uint64_t parent) noexcept {
  const pk_host_event& c = r.host_events[child];
  const pk_host_event& p = r.host_events[parent];
  // Depth saturates at 255: an event there may be a deeper one's parent read
  // as its sibling, so whose only child it is cannot be told.
  constexpr uint8_t kSaturatedDepth = 255;
  return c.type == PK_EVENT_OPERATOR && p.type == PK_EVENT_OPERATOR && c.depth < kSaturatedDepth &&
         (c.name == p.name || r.strings.view_or_empty(c.name) == r.strings.view_or_empty(p.name));
}

// The Operator events of thread `thread` that fold into their parent,
// ascending. Whether a child folds is known only once its parent has closed
// (a later sibling keeps it a call of its own), after the walk has opened it:
// hence a pass of its own before the walk. It nests events as the walk does
// (host_walk.cpp: close down to an event's depth; a full stack closes its
// top), so that its parents are the walk's.
std::vector<uint64_t> folded_operators(const Result& r, size_t thread) {
  struct Frame {
    uint64_t index;
    uint64_t first_child;
    uint64_t children;  // direct children of any type
  };
  std::array<Frame, OpenStack::kCapacity> stack;
  size_t size = 0;
  std::vector<uint64_t> folded;
  auto close_top = [&] {
    const Frame& f = stack[--size];
    if (f.children == 1 && folds_into(r, f.first_child, f.index)) folded.push_back(f.first_child);
  };
  const ThreadRecord& t = r.threads[thread];
  const uint64_t end = std::min<uint64_t>(t.first_event + t.event_count, r.host_events.size());
  for (uint64_t i = t.first_event; i < end; ++i) {
    while (size > r.host_events[i].depth) close_top();
    if (size == stack.size()) close_top();
    if (size > 0 && stack[size - 1].children++ == 0) stack[size - 1].first_child = i;
    stack[size++] = {i, 0, 0};
  }
  while (size > 0) close_top();
  // Parents close after their children: a chain's links come out innermost first.
  std::sort(folded.begin(), folded.end());
  return folded;
}

}  // namespace

OperatorTable::OperatorTable(const SummaryContext& context)
    : context_(context),
      device_names_(context.result->strings),
      operator_slots_(context.result->strings.size(), context.options.thread_sep) {
  const Result& result = *context.result;
  canonical_.assign(result.strings.size(), kNone);
  if (context.options.group_by_stack_n > 0) builtin_frame_.assign(result.strings.size(), 0);
  if (result.event_args.size() == 0) return;
  flops_keys_ = key_ids(kFlopsKey);
  if (context.options.group_by_input_shape) {
    shapes_keys_ = key_ids(kShapesKey);
  }
  if (flops_keys_.empty()) return;
  for (const pk_event_arg& arg : result.event_args) {
    if (is_flops(arg)) {
      has_flops_ = true;
      break;
    }
  }
}

std::vector<uint32_t> OperatorTable::key_ids(std::string_view key) const {
  const StringTable& strings = context_.result->strings;
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < strings.size(); ++id) {
    if (strings.view(id) == key) ids.push_back(id);
  }
  return ids;
}

bool OperatorTable::is_flops(const pk_event_arg& arg) const {
  return arg.kind == PK_ARG_INT && std::find(flops_keys_.begin(), flops_keys_.end(), arg.key) != flops_keys_.end();
}

bool OperatorTable::is_shapes(const pk_event_arg& arg) const {
  return arg.kind == PK_ARG_STRING && arg.value >= 0 && static_cast<uint64_t>(arg.value) < canonical_.size() &&
         std::find(shapes_keys_.begin(), shapes_keys_.end(), arg.key) != shapes_keys_.end();
}

const pk_event_arg* OperatorTable::args_begin(uint64_t event) const {
  const Column<pk_event_arg>& args = context_.result->event_args;
  return std::lower_bound(args.begin(), args.end(), event,
                          [](const pk_event_arg& a, uint64_t e) { return a.event < e; });
}

bool OperatorTable::flops_of(uint64_t event, int64_t* flops) const {
  const Column<pk_event_arg>& args = context_.result->event_args;
  for (const pk_event_arg* it = args_begin(event); it != args.end() && it->event == event; ++it) {
    if (is_flops(*it)) {
      *flops = it->value;
      return true;
    }
  }
  return false;
}

uint32_t OperatorTable::shapes_of(uint64_t event) {
  if (shapes_keys_.empty()) return kNone;
  const Column<pk_event_arg>& args = context_.result->event_args;
  for (const pk_event_arg* it = args_begin(event); it != args.end() && it->event == event; ++it) {
    if (is_shapes(*it)) return canonical(static_cast<uint32_t>(it->value));
  }
  return kNone;
}

uint32_t OperatorTable::canonical(uint32_t id) {
  uint32_t& known = canonical_[id];
  if (known == kNone) known = by_text_.try_emplace(context_.result->strings.view(id), id).first->second;
  return known;
}

uint32_t OperatorTable::stack_of(const OpenStack& stack) {
  const uint32_t wanted = context_.options.group_by_stack_n;
  frames_.clear();
  for (size_t p = stack.size() - 1; p-- > 0 && frames_.size() < wanted;) {
    const OpenEvent& e = stack[p];
    if (e.type != PK_EVENT_PYTHON_OP || e.name >= builtin_frame_.size()) continue;
    uint8_t& builtin = builtin_frame_[e.name];
    if (builtin == 0) {
      const std::string_view text = context_.result->strings.view(e.name);
      builtin = text.substr(0, kBuiltinPrefix.size()) == kBuiltinPrefix ? 2 : 1;
    }
    if (builtin == 1) frames_.push_back(canonical(e.name));
  }
  if (frames_.empty()) return kNone;
  const auto [it, inserted] = stack_index_.try_emplace(frames_, static_cast<uint32_t>(stacks_.size()));
  if (inserted) stacks_.push_back(frames_);
  return it->second;
}

std::string OperatorTable::stack_text(uint32_t stack,
                                      const std::unordered_map<uint32_t, std::string>& frame_labels) const {
  std::string text;
  for (const uint32_t frame : stacks_[stack]) {
    if (!text.empty()) text += kFrameSeparator;
    text += frame_labels.at(frame);
  }
  return text;
}

std::unordered_map<uint32_t, std::string> OperatorTable::frame_labels() const {
  std::vector<uint32_t> ids;
  for (const std::vector<uint32_t>& frames : stacks_) ids.insert(ids.end(), frames.begin(), frames.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string_view> names;
  names.reserve(ids.size());
  for (const uint32_t id : ids) names.push_back(context_.result->strings.view(id));
  std::vector<std::string> labels = short_frame_labels(names);
  std::unordered_map<uint32_t, std::string> by_id;
  by_id.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) by_id.emplace(ids[i], std::move(labels[i]));
  return by_id;
}

void OperatorTable::begin_thread(size_t thread) {
  folded_ =
      context_.host_calls[PK_EVENT_OPERATOR] > 0 ? folded_operators(*context_.result, thread) : std::vector<uint64_t>();
  next_folded_ = 0;
  operator_slots_.begin_thread();
  if (context_.options.thread_sep) {
    thread_ = static_cast<uint32_t>(thread);
    shaped_rows_ = FlatIndex();
  }
}

uint32_t OperatorTable::operator_row(uint32_t name, uint64_t event, const OpenStack& stack) {
  const uint32_t shapes = shapes_of(event);
  const uint32_t frames = context_.options.group_by_stack_n > 0 ? stack_of(stack) : kNone;
  if (shapes == kNone && frames == kNone) {
    uint32_t& slot = operator_slots_.slot(name);
    if (slot == kNone) {
      slot = static_cast<uint32_t>(rows_.size());
      rows_.push_back({thread_, name, kNone, RowKind::kOperator, {}});
    }
    return slot;
  }
  has_shapes_ = has_shapes_ || shapes != kNone;
  has_stacks_ = has_stacks_ || frames != kNone;
  const uint32_t group =
      groups_.try_emplace(pair_key(shapes, frames), static_cast<uint32_t>(groups_.size())).first->second;
  const auto next = static_cast<uint32_t>(rows_.size());
  const uint32_t row = shaped_rows_.find_or_insert(pair_key(group, name), next);
  if (row == next) rows_.push_back({thread_, name, kNone, RowKind::kOperator, {}, shapes, frames});
  return row;
}

uint32_t OperatorTable::child_row(uint32_t parent, uint32_t name, RowKind kind) {
  FlatIndex& index = kind == RowKind::kDevice ? device_rows_ : inner_rows_;
  const auto next = static_cast<uint32_t>(rows_.size());
  const uint32_t row = index.find_or_insert(pair_key(parent, name), next);
  if (row == next) rows_.push_back({rows_[parent].thread, name, parent, kind, {}});
  return row;
}

bool OperatorTable::next_is_folded(uint64_t event) {
  while (next_folded_ < folded_.size() && folded_[next_folded_] < event) ++next_folded_;
  return next_folded_ < folded_.size() && folded_[next_folded_] == event;
}

void OperatorTable::on_open(const OpenStack& stack) {
  const size_t position = stack.size() - 1;
  if (open_.size() <= position) open_.resize(position + 1);
  const OpenEvent& opened = stack[position];
  const pk_host_event& e = context_.result->host_events[opened.index];
  OpenCall& call = open_[position];
  call = {kNone, kNone, false, 0};
  if (is_instant(e)) return;  // no call, and no row of its own (host_walk.h)
  if (e.type == PK_EVENT_OPERATOR && position > 0 && next_is_folded(opened.index)) {
    // Its parent's call continued: what opens inside it finds the parent's
    // row here, and with no inner row of its own, on_launch adds the GPU
    // work launched in it to the parent's rows once.
    call.operator_row = open_[position - 1].operator_row;
    call.folded = true;
    return;
  }
  if (e.type == PK_EVENT_OPERATOR) call.operator_row = operator_row(e.name, opened.index, stack);
  const uint32_t enclosing = opened.nearest_op;
  if (context_.options.op_detail && enclosing != kNoPosition && open_[enclosing].operator_row != kNone) {
    call.inner_row = child_row(open_[enclosing].operator_row, e.name, RowKind::kInner);
  }
}

void OperatorTable::on_close(const OpenStack& stack, const OpenEvent& closed) {
  const size_t position = stack.size();
  const pk_host_event& e = context_.result->host_events[closed.index];
  const OpenCall& call = open_[position];
  const uint64_t cpu = duration_ns(e.start_ns, e.end_ns);
  // Children can outlast their parent only in a malformed trace.
  const uint64_t self = (cpu > closed.children_ns ? cpu - closed.children_ns : 0) + call.folded_self;
  if (call.folded) {
    open_[position - 1].folded_self += self;
    return;
  }
  int64_t flops = 0;
  const bool counted = has_flops_ && flops_of(closed.index, &flops) && flops >= 0;
  for (uint32_t row : {call.operator_row, call.inner_row}) {
    if (row == kNone) continue;
    CallStats& s = rows_[row].stats;
    ++s.calls;
    s.cpu.add(cpu);
    s.self.add(self);
    s.gpu.add(closed.gpu_ns);
    if (counted) {
      rows_[row].flops += static_cast<uint64_t>(flops);
      rows_[row].has_flops = true;
    }
  }
}

void OperatorTable::on_launch(const OpenStack& stack, const LaunchedWork& work) {
  const OpenEvent& launcher = stack.back();
  uint32_t at = is_operator_like(launcher.type) ? static_cast<uint32_t>(stack.size() - 1) : launcher.nearest_op;
  if (at == kNoPosition) return;
  const uint32_t name = device_names_.id_of(work.name, work.type);
  const uint64_t ns = work.duration_ns;
  // As in the Kernel table: a call, but no 0 in the times to drag Avg and
  // Min down.
  if (work.untimed) ++untimed_;
  // Walk out through the enclosing operator-like events: the work belongs
  // under each Operator, directly or inside the inner event it went through.
  uint32_t inside = kNoPosition;
  while (at != kNoPosition) {
    if (open_[at].operator_row != kNone) {
      const uint32_t parent = inside == kNoPosition ? open_[at].operator_row : open_[inside].inner_row;
      if (parent != kNone) {
        CallStats& s = rows_[child_row(parent, name, RowKind::kDevice)].stats;
        ++s.calls;
        if (!work.untimed) s.gpu.add(ns);
      }
    }
    inside = at;
    at = stack[at].nearest_op;
  }
}

std::string_view OperatorTable::label(const Row& row) const {
  return row.kind == RowKind::kDevice ? std::string_view(device_names_.text(row.name))
                                      : context_.result->strings.view_or_empty(row.name);
}

SummaryTable OperatorTable::table() {
  SummaryTable t(SummaryView::kOperator, "Operator Summary", "Name");
  t.has_device_data = context_.has_device_data;
  t.nested = context_.options.op_detail;
  const CallColumns columns = add_call_columns(t, context_.options.thread_sep, /*with_cpu=*/true, /*with_self=*/true);
  const size_t flops_column = has_flops_ ? t.add_column("FLOPs", ColumnKind::kFlops) : 0;
  const bool grouped = context_.options.group_by_input_shape;
  const size_t shapes_column = grouped ? t.add_column("Input Shapes", ColumnKind::kText) : 0;
  const bool by_stack = context_.options.group_by_stack_n > 0;
  const size_t stack_column = by_stack ? t.add_column("Source Location", ColumnKind::kText) : 0;
  if (rows_.empty()) {
    t.empty_reason = "no Operator events recorded";
    return t;
  }
  const std::unordered_map<uint32_t, std::string> labels = by_stack ? frame_labels() : decltype(labels){};
  const SortKey key = context_.options.sorted_by;
  std::vector<uint32_t> top;
  std::vector<std::vector<uint32_t>> inner(rows_.size());
  std::vector<std::vector<uint32_t>> device(rows_.size());
  for (uint32_t i = 0; i < rows_.size(); ++i) {
    const Row& row = rows_[i];
    if (row.parent == kNone) {
      top.push_back(i);
    } else {
      (row.kind == RowKind::kDevice ? device : inner)[row.parent].push_back(i);
    }
  }
  auto stats_of = [&](uint32_t i) -> const CallStats& { return rows_[i].stats; };
  auto label_of = [&](uint32_t i) { return label(rows_[i]); };
  sort_by_key(top, key, stats_of, label_of);
  if (context_.options.thread_sep) {
    std::stable_sort(top.begin(), top.end(), [&](uint32_t a, uint32_t b) { return rows_[a].thread < rows_[b].thread; });
  }
  const double total = static_cast<double>(context_.total_time_ns);
  auto emit = [&](uint32_t i, uint32_t level, double cpu_denominator, double gpu_denominator) {
    SummaryRow& row = t.add_row(std::string(label(rows_[i])), level);
    fill_call_row(row, columns, rows_[i].stats, thread_id(*context_.result, rows_[i].thread), cpu_denominator,
                  gpu_denominator);
    if (rows_[i].has_flops) row.values[flops_column] = static_cast<double>(rows_[i].flops);  // implies has_flops_
    if (rows_[i].shapes != kNone) {                                                          // implies grouped
      row.set_text(shapes_column, std::string(context_.result->strings.view(rows_[i].shapes)));
    }
    if (rows_[i].stack != kNone) row.set_text(stack_column, stack_text(rows_[i].stack, labels));  // implies by_stack
  };
  auto emit_devices = [&](uint32_t parent, uint32_t level) {
    std::vector<uint32_t>& list = device[parent];
    sort_by_key(list, key, stats_of, label_of);
    for (uint32_t i : list) emit(i, level, 0, static_cast<double>(rows_[parent].stats.gpu.total));
  };

  const uint64_t limit = context_.options.row_limit;
  uint64_t left_out = 0;
  uint64_t in_group = 0;
  for (size_t k = 0; k < top.size(); ++k) {
    const uint32_t op = top[k];
    if (k > 0 && rows_[op].thread != rows_[top[k - 1]].thread) in_group = 0;
    if (limit != 0 && in_group >= limit) {
      ++left_out;
      continue;
    }
    ++in_group;
    emit(op, 0, total, total);
    const Row& parent = rows_[op];
    sort_by_key(inner[op], key, stats_of, label_of);
    for (uint32_t i : inner[op]) {
      emit(i, 1, static_cast<double>(parent.stats.cpu.total), static_cast<double>(parent.stats.gpu.total));
      emit_devices(i, 2);
    }
    emit_devices(op, 1);
  }
  if (left_out > 0) {
    t.notes.push_back(std::to_string(left_out) + " more operators not shown (row_limit=" + std::to_string(limit) +
                      (context_.options.thread_sep ? " per thread)" : ")"));
  }
  t.notes.push_back("Ratio = time / total time (" + context_.total_time_source() + ")" +
                    (context_.options.op_detail ? "; for nested rows, time / the enclosing row's time." : "."));
  t.notes.push_back("Self CPU = CPU time of the calls not spent in an event nested inside them.");
  if (has_flops_) {
    t.notes.push_back(
        "FLOPs = the sum of the calls' \"flops\" arguments, the floating-point operations a framework integration "
        "counted (with_flops); \"-\" where none was counted.");
  }
  if (grouped) {
    t.notes.push_back(has_shapes_ ? "One row per operator and input shapes (group_by_input_shape); \"-\": calls "
                                    "without recorded shapes, and the rows under an operator."
                                  : "group_by_input_shape: no operator has recorded input shapes; record them "
                                    "with record_shapes=True (or an \"input_shapes\" argument from the framework).");
  }
  if (by_stack) {
    const std::string n = std::to_string(context_.options.group_by_stack_n);
    t.notes.push_back(has_stacks_ ? "One row per operator and source location (group_by_stack_n=" + n +
                                        "): the innermost " + n +
                                        " Python function frames around its calls, innermost first; \"-\": calls with "
                                        "none, and the rows under an operator."
                                  : "group_by_stack_n: no operator has Python frames around it; record them with "
                                    "with_stack=True.");
  }
  if (untimed_ > 0) t.notes.push_back(untimed_note(untimed_));
  const uint64_t unattached = context_.result->info.unattached_device_records;
  if (unattached > 0) t.notes.push_back(unattached_note(unattached, "operator's"));
  return t;
}

}  // namespace profkit
