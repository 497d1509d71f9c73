// A streaming scan of a Chrome-trace JSON file (RapidJSON's SAX reader): it
// hands each element of "traceEvents" to a callback as flat fields, one at a
// time, and collects the small top-level "profkit" object. Nothing else of
// the document is kept, so memory does not grow with the file.
//
// Numbers keep their text: times in µs with a ns fraction convert to ns
// exactly, and 64-bit ids never pass through a double.
//
// Thread-safety: reentrant; each call owns its state.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace profkit {

struct JsonScalar {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // a number's text or a string's (unescaped) value

  bool is_number() const noexcept { return kind == Kind::kNumber; }
  bool is_string() const noexcept { return kind == Kind::kString; }
};

// One trace event. Fields it lacks are left as JsonScalar{} (kNull) or "".
// Reused from event to event: copy what must outlive the callback.
struct JsonTraceEvent {
  struct Arg {
    std::string key;
    JsonScalar value;                  // kNull for an array
    std::vector<std::string> numbers;  // an array's elements (their text)
    bool is_array = false;
  };

  std::string ph, cat, name, scope;  // scope: an instant's "s"
  JsonScalar ts, dur, pid, tid;
  std::vector<Arg> args;  // only the first arg_count are this event's
  size_t arg_count = 0;

  const Arg* find_arg(const std::string& key) const noexcept;
};

// The top-level "profkit" object.
struct JsonProfkitObject {
  bool present = false;
  std::unordered_map<std::string, JsonScalar> fields;  // its scalar members
  std::vector<std::unordered_map<std::string, JsonScalar>> devices;
  std::vector<std::pair<std::string, std::string>> metadata;
  bool merged = false;  // has "merged_from" (a profkit merge timeline)
  size_t merged_sources = 0;
};

// Parses the whole of `file` (read from its current position; a leading UTF-8
// byte order mark is skipped), calling `on_event` for each trace event in file
// order. Throws Error(PK_ERR_CORRUPT) naming `path` and the byte offset when
// the text is not valid JSON, nests more than 64 levels deep, or is not a JSON
// object; an exception thrown by `on_event` passes through unchanged.
JsonProfkitObject scan_chrome_json(std::FILE* file, const std::string& path,
                                   const std::function<void(const JsonTraceEvent&)>& on_event);

}  // namespace profkit
