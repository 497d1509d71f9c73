// Turning the recorder's raw per-thread records into ResultBuilder entries:
// the part of a collect that reads thread buffers, apart from the recorder's
// state machine (recorder.cpp), which decides what span a collect covers.
//
// Thread-safety: none of its own. A collect uses these under the recorder's
// lock, one thread buffer at a time, inside ThreadRegistry::drain_each.
// Ownership: NameMap borrows the builder and the process's NameTable; both
// must outlive it. collect_thread_records borrows everything it is given.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "common/compiler.h"
#include "recorder/name_table.h"
#include "trace/result_builder.h"

namespace profkit {

class ThreadBuffer;

// Maps the process's interned name ids to the result's string ids, adding a
// name to the result the first time a record uses it: a result holds only the
// names it refers to, and a collect never walks the whole name table.
// Inline: it runs once per record converted.
class NameMap {
 public:
  explicit NameMap(ResultBuilder& builder) : builder_(builder), names_(NameTable::instance()) {
    ids_.assign(std::max<uint32_t>(names_.size(), 1), kUnmapped);
    ids_[0] = builder_.add_string("");  // "" is string 0 of every result
  }

  uint32_t operator()(uint32_t name) {
    if (PK_UNLIKELY(name >= ids_.size())) {
      // A name interned since the map was made grows it; an id never
      // interned (a caller's bad one, which must not size the map) is "".
      const uint32_t known = names_.size();
      if (name >= known) return 0;
      ids_.resize(known, kUnmapped);
    }
    uint32_t& id = ids_[name];
    if (PK_UNLIKELY(id == kUnmapped)) {
      const char* text = names_.lookup(name);
      // Producers are not trusted with ids: one never interned is "".
      id = text == nullptr ? 0 : builder_.strings().add_borrowed(text, names_.length(name));
    }
    return id;
  }

  // The result's string "num_samples" (a step's argument key), added on
  // first use. Not interned: interning at collect time failed the whole
  // collect once the name table was full.
  uint32_t num_samples_key() {
    if (num_samples_key_ == kUnmapped) num_samples_key_ = builder_.add_string("num_samples");
    return num_samples_key_;
  }

 private:
  static constexpr uint32_t kUnmapped = UINT32_MAX;
  ResultBuilder& builder_;
  const NameTable& names_;
  std::vector<uint32_t> ids_;
  uint32_t num_samples_key_ = kUnmapped;
};

// "ProfileStep#<number>" on `thread`, with its num_samples argument (at
// most INT64_MAX: larger counts are recorded as INT64_MAX).
void add_step_event(ResultBuilder& builder, NameMap& names, const TickConverter& clock, uint32_t thread,
                    uint64_t start_ticks, uint64_t end_ticks, uint64_t number, uint64_t num_samples);

// How a collect treats the thread buffers it drains.
struct ThreadCollect {
  bool recording = false;    // the recording window goes on after this collect
  bool keep_spares = false;  // keep the buffers' spare chunks (profiling goes on)
  uint32_t last_window = 0;  // the recorder's latest recording window
};

// Drains `tb` into `builder` and adds its counters (dropped, unmatched,
// overflowed events, lost arguments, unfinished events) to builder.info().
// Once profiling has closed (!how.keep_spares) it parks the chunk of a
// thread that lives on (ThreadBuffer::park_idle_chunk). Returns whether the
// thread has finished, so that its buffer can go.
bool collect_thread_records(ThreadBuffer& tb, const ThreadCollect& how, ResultBuilder& builder, NameMap& names,
                            const TickConverter& clock);

}  // namespace profkit
