// The summary tables of a Result (SPEC §6), computed in the engine so every
// front end — the C ABI, Python, a C++ framework — gets the same numbers and
// the same text. compute_summary() makes the rows; text_renderer.h and
// json_writer.h turn them into text and JSON.
//
// Cost: one pass over the host events (plus one over the GPU records) for
// all tables together; extra memory at most about the size of the events
// (see BENCHMARKS.md, "Summary").
//
// Thread-safety: reentrant; the Result is only read, so several summaries of
// one Result may run at once.
#pragma once

#include <string>
#include <vector>

#include "summary/summary_options.h"
#include "summary/summary_table.h"
#include "trace/result.h"

namespace profkit {

struct Summary {
  SummaryOptions options;
  std::vector<SummaryTable> tables;  // the selected views, in view order
  uint64_t total_time_ns = 0;        // the ratio denominator
  bool total_time_is_steps = false;  // ProfileStep union (else the recorded span)
  // What the recording lost (memory cap, nesting limit, GPU buffers), one
  // line each: the tables lack those events, and they say so first.
  std::vector<std::string> warnings;
};

Summary compute_summary(const Result& result, const SummaryOptions& options);

// The table of `view` in `summary`, or nullptr when it was not selected.
const SummaryTable* find_table(const Summary& summary, SummaryView view) noexcept;

}  // namespace profkit
