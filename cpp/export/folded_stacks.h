// Folded-stack export: the "collapsed" text that Brendan Gregg's
// flamegraph.pl and https://www.speedscope.app read, as torch.profiler's
// export_stacks writes it. One line per distinct stack: its frames root-first
// joined by ';', a space, and its value in whole microseconds.
//
// - kSelfCpu: every host event that is not an instant contributes its self
//   time under its stack: its thread's enclosing events (as the summary's
//   walk nests them, summary/host_walk.h) and then itself. Self time is its
//   duration less its direct children's, except where events cross (one
//   starts inside another and ends after it, as a range held open across a
//   generator's yield and the Python calls around it): each moment of a
//   thread goes to the event started last among those running then, so a
//   thread's lines add up to the time its events cover, each moment once.
//   No frame names the thread, so the same code on two threads is one flame.
// - kSelfDevice: every GPU record (kernel, memcpy, memset) contributes its
//   duration under the stack of its launching runtime call, with the
//   record's own name as the leaf frame. Records whose launch was not
//   captured go under the root frame "[GPU work with no launching call]".
//
// A stack's value is its summed time rounded to the nearest µs (halves up);
// stacks that round to 0 are left out, as flamegraph.pl draws nothing for
// them. "ProfileStep#<n>" (ProfileStep events) is the frame "ProfileStep",
// so the steps of a window make one flame. Frame names have ';' replaced by
// ':' and line breaks by spaces (the format's separators); an empty name is
// "[unnamed]". Lines are sorted by their stack text, so equal results give
// equal files. A result with nothing to show gives an empty file.
//
// The file is written through a temporary renamed into place
// (AtomicFileWriter): a failure leaves no half file. Errors are
// profkit::Error naming the path and the OS error.
// Thread-safety: reentrant; the Result is only read.
#pragma once

#include <string>

#include "trace/result.h"

namespace profkit {

enum class StacksMetric { kSelfCpu, kSelfDevice };

void export_folded_stacks(const Result& result, const std::string& path, StacksMetric metric);

}  // namespace profkit
