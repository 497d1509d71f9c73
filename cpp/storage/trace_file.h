// Saving and loading Results as profkit trace files (schemas/trace.fbs).
//
// save_result writes one FlatBuffer through a temporary file renamed into
// place. load_result reads the file into memory the Result owns (so changing
// or truncating the file afterwards cannot affect it), runs the FlatBuffers
// verifier and then profkit's own consistency checks, and returns a Result
// whose columns borrow those bytes (no copy beyond the read). Any problem
// throws profkit::Error with a message naming the file and what is wrong; no
// partial Result is ever returned.
//
// Thread-safety: both are reentrant.
#pragma once

#include <memory>
#include <string>

#include "trace/result.h"

namespace profkit {

void save_result(const Result& result, const std::string& path);
std::unique_ptr<Result> load_result(const std::string& path);

}  // namespace profkit
