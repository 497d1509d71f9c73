// Ranges ending out of order. The engine keeps one stack of open events per
// thread: pk_end_event() ends the innermost. RecordEvents whose ends come out
// of order on one thread (asyncio tasks interleaving, or begin()/end()
// written crosswise) would end each other's events, swapping their end times
// without a word. So each thread lists the ranges its RecordEvents have open
// in the engine, innermost last. A range that ends while one begun after it
// is still open is marked ended, and the engine ends it once every range
// above it has ended. The later range keeps its exact times, the earlier one
// is recorded as ending with it, and the trace stays properly nested.
//
// A range whose RecordEvent goes away while open (never ended) is abandoned:
// its end is unknown, so it stays open in the engine (counted unfinished when
// the window closes) unless a range begun before it ends, which must end it
// first.
//
// Thread-safety: every function works on the calling thread's own list and
// must run with the GIL held (it changes reference counts). Ownership: the
// list holds a reference to each listed range's name until the engine has
// ended that range.
#pragma once

#include <Python.h>

#include <cstdint>

namespace profkit_py {

// Lists a range just begun in the engine in recording window `window`
// (nonzero); returns its serial, unique on this thread. 0: not listed (the
// list is as deep as the engine's own depth limit); such a range is ended
// the engine's way, innermost first.
uint64_t open_range_push(PyObject* name, uint32_t window);

// Ends the range `serial` (0: not listed) that this thread began in the
// current recording window. Returns nullptr when the engine ended it (with
// any ranges below that were waiting for it). Otherwise a range begun after
// it is still open: it is marked ended, to be ended with that range, whose
// name is returned (borrowed, valid until the next call here) for the
// caller's warning.
PyObject* open_range_end(uint64_t serial);

// Marks the range `serial`, begun on this thread, abandoned: its RecordEvent
// went away without end(). Nothing for a serial no longer listed.
void open_range_abandon(uint64_t serial);

}  // namespace profkit_py
