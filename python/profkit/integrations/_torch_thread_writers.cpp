// See _torch_thread_writers.h.
#include "_torch_thread_writers.h"

#if PK_INLINE_WRITER

namespace profkit_torch {

pk_thread_writer* g_thread_writers[kThreadWriterSlots];

pk_thread_writer* learn_thread_writer(uint64_t torch_thread_id) noexcept {
  pk_thread_writer* const writer = pk_thread_writer_current;
  // Id 0 is no thread's (torch numbers threads from 1): never cached, so a
  // RecordFunction that carried it could not reach another thread's writer.
  if (writer != nullptr && torch_thread_id != 0 && torch_thread_id < kThreadWriterSlots) {
    g_thread_writers[torch_thread_id] = writer;
  }
  return writer;
}

size_t thread_writers_known() noexcept {
  size_t known = 0;
  for (const pk_thread_writer* writer : g_thread_writers) known += writer != nullptr;
  return known;
}

}  // namespace profkit_torch

#endif  // PK_INLINE_WRITER
