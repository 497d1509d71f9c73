// profkit.RecordEvent: a user range (paddle.profiler.RecordEvent) as a small
// CPython extension type, because it sits on the user's hot path. With plain
// pybind11 or Python, `with RecordEvent(name):` costs several hundred ns even
// when nothing is recorded; here construction goes through vectorcall (no
// argument tuple), the idle path is one load of pk_recording_word, and while
// recording the name goes to pk_begin_event_str, whose per-thread cache turns
// the text into an id without a lock.
//
// The type's parts, one concern per file (this header is what they share):
//   record_event.cpp       the type: the begin()/end() contract, its
//                          attributes, decorator use, registration on _C
//   record_event_new.cpp   creating objects: argument checks, vectorcall,
//                          the free list that recycles them
//   record_event_with.cpp  __enter__/__exit__ without bound-method objects
//   open_ranges.h/.cpp     each thread's list of open ranges, so that ranges
//                          ending out of order stay properly nested
// The split costs nothing on the hot path: _C is built with link-time
// optimization (pybind11_add_module in Release), so calls between these
// files are inlined as calls within one file were.
//
// Thread-safety: everything here runs with the GIL held; an object keeps the
// state of one open range and is meant for one thread at a time (begin() and
// end() turn misuse into RuntimeError). Ownership: an object owns a reference
// to its name string; the UTF-8 text it passes to the engine is that string's
// cached UTF-8 buffer, valid while the object lives.
#pragma once

#include <Python.h>

#include <cstdint>

#include "binding.h"

namespace profkit_py {

struct RecordEventObject {
  PyObject_HEAD PyObject* name;  // the str the user gave (owned)
  const char* utf8;              // name's cached UTF-8 text (borrowed from `name`)
  unsigned long thread;          // thread that began the open range
  uint64_t serial;               // its entry in the thread's open ranges; 0 = none
  uint32_t window;               // recording window at begin(); 0 = nothing recorded
  uint8_t type;                  // pk_event_type
  uint32_t open;                 // begun and not yet ended; outside windows, how many times
};

// profkit.RecordEvent (a static type, readied by bind_record_event).
extern PyTypeObject RecordEventType;

inline bool is_record_event(PyObject* obj) { return PyObject_TypeCheck(obj, &RecordEventType); }

// begin() and end() (record_event.cpp), shared by the methods of those names
// and the with-statement's. The contract (documented in the class
// docstring): one object is one recorded range at a time. In a window,
// begin() twice without end() and end() on another thread than begin()
// raise (outside windows, where nothing is recorded, they are counted and
// allowed); end() without begin() always does. Those raise RuntimeError
// naming the event (false returned, exception set);
// nothing is recorded for them. A range whose begin and end fall into
// different recording windows is not recorded (it belongs to neither window
// whole). A range whose end comes while one begun after it on the same
// thread is open warns (false when the warning is an error) and is ended
// with that one (see open_ranges.h).
bool record_event_begin(RecordEventObject* self);
bool record_event_end(RecordEventObject* self);

// tp_vectorcall, tp_new and tp_dealloc of the type (record_event_new.cpp).
PyObject* record_event_vectorcall(PyObject* type, PyObject* const* args, size_t nargsf, PyObject* kwnames);
PyObject* record_event_new(PyTypeObject* type, PyObject* args, PyObject* kwargs);
void record_event_dealloc(PyObject* obj);

// Readies the descriptor types and puts __enter__ and __exit__ into the
// readied RecordEventType's dict; raises py::error_already_set on failure
// (record_event_with.cpp).
void add_with_methods();

}  // namespace profkit_py
