// Operator Summary: one row per operator name (events of type Operator, at
// any depth) with calls, CPU inclusive time, self CPU time (outside any event
// nested in the call, whatever its type) and the GPU time of the work
// launched inside it; ratios to total_time; ordered by sorted_by; one group
// of rows per thread with thread_sep.
//
// With op_detail, each operator row is followed by what happened inside it,
// one level down, with ratios to that operator row's own totals:
//   - its inner events: OperatorInner and nested Operator events whose
//     nearest enclosing Operator/OperatorInner is the operator, by name; each
//     followed (two levels down) by the GPU work launched inside it, by name;
//   - the GPU work it launched itself (not inside an inner event), by name.
// So the rows under an operator split its GPU time without counting any
// work twice. GPU work is named as in the Kernel table.
//
// With group_by_input_shape, operator rows are per name and input shapes --
// the string argument "input_shapes" (the PyTorch integration's
// record_shapes; any framework hook may attach one through pk_event_arg_str)
// -- and an "Input Shapes" column shows them; calls without one share a row
// per name, whose cell is missing. Rows under an operator are not split.
// With group_by_stack_n = N, operator rows are also per source location:
// the innermost N Python function frames around the call (PythonOp events,
// as with_stack records them; built-in calls, "<built-in ...>", left out),
// in a "Source Location" column, innermost first; frames' texts are compared,
// not their string ids.
//
// When some Operator event carries an integer "flops" argument (the PyTorch
// integration's with_flops; any framework hook may attach one through
// pk_event_arg_int), a FLOPs column follows: the sum over a row's calls of
// their "flops"; "-" for rows none of whose calls has one.
//
// Calls are counted as torch.profiler's tables count them: an Operator event
// that is the only direct child (of any type) of an Operator event with the
// same name is that call continued, not a call of its own (`aten::sum`
// inside `aten::sum`; torch's EventList._remove_dup_nodes; chains fold into
// the outermost). It adds no call, time or FLOPs to any row and is no row
// under the parent; its self CPU time is the parent's, and what happened
// inside it (inner events, GPU work) counts as happening directly in the
// parent. Other tables, the timeline and the trace keep it as recorded.
//
// Thread-safety: a walk visitor, then a table() call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "summary/call_stats.h"
#include "summary/flat_index.h"
#include "summary/host_walk.h"
#include "summary/kernel_name.h"
#include "summary/name_stats_map.h"
#include "summary/summary_context.h"
#include "summary/summary_table.h"

namespace profkit {

class OperatorTable : public HostEventVisitor {
 public:
  explicit OperatorTable(const SummaryContext& context);
  uint32_t type_mask() const override { return type_bit(PK_EVENT_OPERATOR) | type_bit(PK_EVENT_OPERATOR_INNER); }
  void begin_thread(size_t thread) override;
  void on_open(const OpenStack& stack) override;
  void on_close(const OpenStack& stack, const OpenEvent& closed) override;
  bool wants_launches() const override { return context_.options.op_detail; }
  void on_launch(const OpenStack& stack, const LaunchedWork& work) override;
  SummaryTable table();

 private:
  static constexpr uint32_t kNone = NameSlots::kNone;
  enum class RowKind : uint8_t { kOperator, kInner, kDevice };
  struct Row {
    uint32_t thread;
    uint32_t name;    // string id (kOperator, kInner) or DeviceNames id (kDevice)
    uint32_t parent;  // row index, kNone for operator rows
    RowKind kind;
    CallStats stats;
    uint32_t shapes = kNone;  // string id of the input shapes (grouped operator rows)
    uint32_t stack = kNone;   // index into stacks_ (grouped operator rows)
    uint64_t flops = 0;
    bool has_flops = false;
  };

  // Per stack position of an open Operator/OperatorInner event.
  struct OpenCall {
    uint32_t operator_row;  // its operator row (Operator events; for a folded one, its parent's)
    uint32_t inner_row;     // its row under the enclosing operator
    bool folded;            // the continuation of its parent's call (see the header comment)
    uint64_t folded_self;   // self CPU time of a folded child, which is this call's own
  };

  uint32_t operator_row(uint32_t name, uint64_t event, const OpenStack& stack);
  // Whether host event `event` (opened in index order) folds into its parent.
  bool next_is_folded(uint64_t event);
  // The first string id with the same text as `id` (a loaded or merged
  // Result may repeat a text under several ids).
  uint32_t canonical(uint32_t id);
  // The index in stacks_ of the innermost group_by_stack_n Python function
  // frames around the top of `stack`; kNone when there are none.
  uint32_t stack_of(const OpenStack& stack);
  // The Source Location text of stacks_[stack], each frame by its label.
  std::string stack_text(uint32_t stack, const std::unordered_map<uint32_t, std::string>& frame_labels) const;
  // Frame string id -> short label, for every frame of stacks_ (told apart
  // among themselves: see frame_labels.h).
  std::unordered_map<uint32_t, std::string> frame_labels() const;
  // The string ids of the arguments named `key`.
  std::vector<uint32_t> key_ids(std::string_view key) const;
  // The arguments of host event `event` (args are sorted by event).
  const pk_event_arg* args_begin(uint64_t event) const;
  bool is_shapes(const pk_event_arg& arg) const;
  // The input shapes of `event` as the string id of the first entry with the
  // same text (a loaded or merged Result may repeat one); kNone if it has none.
  uint32_t shapes_of(uint64_t event);
  uint32_t child_row(uint32_t parent, uint32_t name, RowKind kind);
  std::string_view label(const Row& row) const;
  bool is_flops(const pk_event_arg& arg) const;
  // The "flops" argument of host event `event`, if it has one.
  bool flops_of(uint64_t event, int64_t* flops) const;

  const SummaryContext& context_;
  DeviceNames device_names_;
  NameSlots operator_slots_;
  std::vector<Row> rows_;
  FlatIndex inner_rows_;        // (parent << 32 | name) -> row
  FlatIndex device_rows_;       // (parent << 32 | device name) -> row
  std::vector<OpenCall> open_;  // by stack position
  // The current thread's folded Operator events, ascending, and the first
  // one not yet opened.
  std::vector<uint64_t> folded_;
  size_t next_folded_ = 0;
  uint32_t thread_ = 0;
  uint64_t untimed_ = 0;              // GPU records without timestamps under some operator
  std::vector<uint32_t> flops_keys_;  // string ids of "flops" (a merged Result may hold several)
  bool has_flops_ = false;            // some event carries an integer "flops"
  // group_by_input_shape: grouped operator rows by (shapes << 32 | name),
  // fresh for each thread group; the string ids of "input_shapes"; each
  // shapes string id's canonical id (kNone until seen) and the canonical ids
  // by text.
  FlatIndex shaped_rows_;
  std::vector<uint32_t> shapes_keys_;
  bool has_shapes_ = false;  // some operator row has input shapes
  // Per string id: its canonical id (kNone until asked); canonical ids by text.
  std::vector<uint32_t> canonical_;
  std::unordered_map<std::string_view, uint32_t> by_text_;
  // group_by_stack_n: the distinct stacks (canonical frame ids, innermost
  // first) and their indices; per string id, whether it names a built-in
  // call (0 unknown, 1 no, 2 yes); the groups of grouped rows by
  // (shapes << 32 | stack).
  std::vector<std::vector<uint32_t>> stacks_;
  std::map<std::vector<uint32_t>, uint32_t> stack_index_;
  std::vector<uint8_t> builtin_frame_;
  std::vector<uint32_t> frames_;  // scratch
  std::unordered_map<uint64_t, uint32_t> groups_;
  bool has_stacks_ = false;  // some operator row has a source location
};

}  // namespace profkit
