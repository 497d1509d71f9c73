// AtomicFileWriter: writes a file through a buffered temporary in the same
// directory and renames it into place on commit(), so the final path never
// holds half a file — not after an error, not after a crash.
//
// What is at the path decides how it is written (checked when the writer is
// made, before anything is written):
// - nothing, or a regular file: temporary + rename, as above;
// - a symbolic link (or a chain of them): the file it points to is replaced
//   the same way (temporary in that file's directory), and the link stays;
// - a FIFO, a character or block device (/dev/null): opened and written in
//   place. A rename would put a regular file where the device was, and a
//   FIFO's reader would never see the data; these have no half-written state
//   to protect anyway. Opening a FIFO waits for its reader, as a shell's
//   redirection does;
// - a directory: refused with PK_ERR_IO (errno EISDIR).
// Before all that, a name of one of this process's open descriptors
// ("/dev/stdout", "/dev/stderr", "/dev/fd/N", "/proc/self/fd/N",
// "/proc/thread-self/fd/N", "/proc/<our pid>/fd/N", as written) is written
// through a duplicate of that descriptor, whatever it is open on: with
// `-o /dev/stdout >> log.txt` it is a regular file, which the link resolves
// to and a rename would replace (the log's text lost). The duplicate shares
// the descriptor's offset and O_APPEND, so the output lands where the shell
// put it. (python/profkit/_output_files.py keeps the same rule.)
//
// Thread-safety: one writer per object. Errors are thrown as profkit::Error
// naming the path and the OS error, with its errno in Error::os_errno().
// Writing to a FIFO whose reader went away fails with EPIPE; SIGPIPE is
// blocked around those writes, so the process is not killed by it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace profkit {

class AtomicFileWriter {
 public:
  // Creates the temporary file in the target's directory, named
  // ".profkit-tmp.<pid>.<random>" (hidden, and short whatever `path` is), or
  // opens a FIFO or device in place (see above).
  explicit AtomicFileWriter(std::string path, size_t buffer_bytes = 4 << 20);
  ~AtomicFileWriter();  // removes the temporary unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }

  // The buffer's free space, for writers that format in place; call
  // commit_reserved(n) after filling n bytes of it.
  char* reserve(size_t size);
  void commit_reserved(size_t size) noexcept { used_ += size; }

  // Flushes, closes and renames into place (in-place targets: flushes and
  // closes).
  void commit();

  // The path as given (a link's own path, not its target's).
  const std::string& path() const noexcept { return path_; }

 private:
  void flush();
  void write_all(const char* data, size_t size);

  std::string path_;
  std::string target_;     // where the data lands: path_ with its links followed
  std::string temp_path_;  // empty when writing in place
  int fd_ = -1;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_;
  size_t used_ = 0;
  bool committed_ = false;
};

}  // namespace profkit
