// Loading a Chrome-trace JSON file that profkit wrote back into a Result, so
// that the .trace.json files export_chrome_tracing leaves behind (its default
// on_trace_ready) can be summarized in a notebook like a .pktrace.
//
// What comes back is what the file holds: host events with their nesting,
// arguments and thread names; GPU work with its launch call, kernel and
// memcpy/memset details; memory events; devices; the run's metadata and
// loss counters. Names keep their text, not their ids. Two things are
// approximate by the format: kernels' blocks/warps per SM and occupancy are
// written with 6 significant digits, and a copy or memory kind this build has
// no name for comes back as 0 ("Unknown"). Files from layout 1 (before
// trace_json_version 2) have no memory events to read and no CPU usage; the
// Result says so in its metadata ("loaded_from_json_layout_1").
//
// The file is parsed as a stream (memory ~ the events it holds, not the text).
// Anything that is not such a file throws Error: PK_ERR_NOT_FOUND for a
// missing file, PK_ERR_CORRUPT for invalid or truncated JSON (with the byte
// offset), a Chrome trace another tool wrote, a merged timeline of several
// processes, a newer layout, or counts that disagree with the metadata. No
// partial Result is ever returned.
//
// Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trace/result.h"

namespace profkit {

// Whether the file's first non-blank byte (after a UTF-8 byte order mark,
// within its first 4 KiB) opens a JSON value ('{' or '['): the cue to read it
// with read_chrome_trace rather than as a .pktrace. False when it cannot be
// read (load_result then reports why), and for a pipe, FIFO or device, which
// is not opened here: it can be read only once, and load_result reads it
// whole and tells JSON apart itself (starts_like_json).
bool looks_like_json_file(const std::string& path);

// The same test on bytes already read.
bool starts_like_json(const uint8_t* data, size_t size);

std::unique_ptr<Result> read_chrome_trace(const std::string& path);

// read_chrome_trace of a file already read into memory (`path` names it in
// messages).
std::unique_ptr<Result> read_chrome_trace_bytes(const std::string& path, const uint8_t* data, size_t size);

}  // namespace profkit
