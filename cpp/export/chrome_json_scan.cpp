#include "export/chrome_json_scan.h"

#include <rapidjson/error/en.h>
#include <rapidjson/filereadstream.h>
#include <rapidjson/reader.h>

#include <cstring>
#include <exception>
#include <string_view>

#include "common/error.h"

namespace profkit {

const JsonTraceEvent::Arg* JsonTraceEvent::find_arg(const std::string& key) const noexcept {
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].key == key) return &args[i];
  }
  return nullptr;
}

namespace {

// What the container being read is, so that each value lands in its place.
enum class Role : uint8_t {
  kTop,         // the document's object
  kEvents,      // "traceEvents"
  kEvent,       // one of its elements
  kArgs,        // an event's "args"
  kArgArray,    // an array among the args (a kernel's grid, ...)
  kProfkit,     // the "profkit" object
  kDevices,     // its "devices"
  kDevice,      // one of them
  kMetadata,    // its "metadata"
  kMergedFrom,  // its "merged_from": only counted
  kSkip,        // anything else: read past
};

// RapidJSON SAX handler. Returning false stops the parse; `problem_` (or
// `failure_`, an exception from the callback) then says why.
class Scanner : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Scanner> {
 public:
  Scanner(const rapidjson::FileReadStream& stream, const std::function<void(const JsonTraceEvent&)>& on_event)
      : stream_(stream), on_event_(on_event) {}

  bool Null() { return scalar(JsonScalar::Kind::kNull, {}, false); }
  bool Bool(bool b) { return scalar(JsonScalar::Kind::kBool, {}, b); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    return scalar(JsonScalar::Kind::kNumber, {s, n}, false);
  }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(JsonScalar::Kind::kString, {s, n}, false); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }
  bool StartObject() { return open(true); }
  bool StartArray() { return open(false); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  JsonProfkitObject& profkit() noexcept { return profkit_; }
  const std::string& problem() const noexcept { return problem_; }
  std::exception_ptr failure() const noexcept { return failure_; }

 private:
  // The member name just read; a view compares with a literal by length first.
  std::string_view key() const noexcept { return key_; }

  bool fail(std::string problem) {
    problem_ = std::move(problem);
    return false;
  }

  Role child_role(bool is_object) {
    if (stack_.empty()) return Role::kTop;
    switch (stack_.back()) {
      case Role::kTop:
        if (key() == "traceEvents" && !is_object) return Role::kEvents;
        if (key() == "profkit" && is_object) return Role::kProfkit;
        return Role::kSkip;
      case Role::kEvents:
        return Role::kEvent;
      case Role::kEvent:
        return key() == "args" && is_object ? Role::kArgs : Role::kSkip;
      case Role::kArgs:
        return is_object ? Role::kSkip : Role::kArgArray;
      case Role::kProfkit:
        if (key() == "devices" && !is_object) return Role::kDevices;
        if (key() == "metadata" && is_object) return Role::kMetadata;
        if (key() == "merged_from") return Role::kMergedFrom;
        return Role::kSkip;
      case Role::kDevices:
        return is_object ? Role::kDevice : Role::kSkip;
      default:
        return Role::kSkip;
    }
  }

  bool open(bool is_object) {
    // profkit's own files nest 5 levels at most (the document, "traceEvents",
    // an event, its "args", a kernel's "grid"): a file far deeper is not one
    // of them, and refusing it early bounds what the nesting stack holds.
    if (stack_.size() >= kMaxDepth) {
      return fail("it nests arrays and objects more than " + std::to_string(kMaxDepth) + " levels deep (at byte " +
                  std::to_string(stream_.Tell()) + "); profkit's traces nest at most 5");
    }
    if (stack_.empty() && !is_object) return fail("it is a JSON array, not a Chrome trace object that profkit writes");
    if (!stack_.empty() && stack_.back() == Role::kEvents && !is_object) {
      return fail("\"traceEvents\" holds an array where an event object belongs");
    }
    // An element of "merged_from" names one merged trace.
    if (!stack_.empty() && stack_.back() == Role::kMergedFrom) ++profkit_.merged_sources;
    const Role role = child_role(is_object);
    switch (role) {
      case Role::kEvent:
        event_.ph.clear();
        event_.cat.clear();
        event_.name.clear();
        event_.scope.clear();
        event_.ts = event_.dur = event_.pid = event_.tid = JsonScalar{};
        event_.arg_count = 0;
        break;
      case Role::kArgArray:
        next_arg().is_array = true;
        break;
      case Role::kProfkit:
        profkit_.present = true;
        break;
      case Role::kDevices:
        profkit_.devices.clear();
        break;
      case Role::kDevice:
        profkit_.devices.emplace_back();
        break;
      case Role::kMergedFrom:
        profkit_.merged = true;
        break;
      default:
        break;
    }
    stack_.push_back(role);
    return true;
  }

  bool close() {
    const Role role = stack_.back();
    stack_.pop_back();
    if (role != Role::kEvent) return true;
    try {
      on_event_(event_);
    } catch (...) {
      failure_ = std::current_exception();
      return false;
    }
    return true;
  }

  // The next slot of event_.args, reset; reused storage keeps its capacity.
  JsonTraceEvent::Arg& next_arg() {
    if (event_.arg_count == event_.args.size()) event_.args.emplace_back();
    JsonTraceEvent::Arg& arg = event_.args[event_.arg_count++];
    arg.key = key_;
    arg.value = JsonScalar{};
    arg.numbers.clear();
    arg.is_array = false;
    return arg;
  }

  static void set(JsonScalar& out, JsonScalar::Kind kind, std::string_view text, bool boolean) {
    out.kind = kind;
    out.boolean = boolean;
    out.text.assign(text.data(), text.size());
  }

  bool scalar(JsonScalar::Kind kind, std::string_view text, bool boolean) {
    if (stack_.empty()) return fail("it is a single JSON value, not a Chrome trace object that profkit writes");
    switch (stack_.back()) {
      case Role::kEvents:
        return fail("\"traceEvents\" holds a plain value where an event object belongs");
      case Role::kEvent:
        if (key() == "ph") {
          event_.ph.assign(text.data(), text.size());
        } else if (key() == "cat") {
          event_.cat.assign(text.data(), text.size());
        } else if (key() == "name") {
          event_.name.assign(text.data(), text.size());
        } else if (key() == "s") {
          event_.scope.assign(text.data(), text.size());
        } else if (key() == "ts") {
          set(event_.ts, kind, text, boolean);
        } else if (key() == "dur") {
          set(event_.dur, kind, text, boolean);
        } else if (key() == "pid") {
          set(event_.pid, kind, text, boolean);
        } else if (key() == "tid") {
          set(event_.tid, kind, text, boolean);
        }
        return true;
      case Role::kArgs:
        set(next_arg().value, kind, text, boolean);
        return true;
      case Role::kArgArray:
        event_.args[event_.arg_count - 1].numbers.emplace_back(text);
        return true;
      case Role::kProfkit:
        set(profkit_.fields[key_], kind, text, boolean);
        return true;
      case Role::kDevice:
        set(profkit_.devices.back()[key_], kind, text, boolean);
        return true;
      case Role::kMetadata:
        profkit_.metadata.emplace_back(key_, std::string(text));
        return true;
      case Role::kMergedFrom:
        ++profkit_.merged_sources;
        return true;
      default:
        return true;
    }
  }

  static constexpr size_t kMaxDepth = 64;

  const rapidjson::FileReadStream& stream_;  // where the parse is, for messages
  const std::function<void(const JsonTraceEvent&)>& on_event_;
  std::vector<Role> stack_;
  std::string key_;
  JsonTraceEvent event_;
  JsonProfkitObject profkit_;
  std::string problem_;
  std::exception_ptr failure_;
};

}  // namespace

JsonProfkitObject scan_chrome_json(std::FILE* file, const std::string& path,
                                   const std::function<void(const JsonTraceEvent&)>& on_event) {
  char buffer[1 << 16];
  rapidjson::FileReadStream stream(file, buffer, sizeof buffer);
  // A UTF-8 byte order mark (editors on Windows add one) is no JSON value;
  // skipping it here keeps byte offsets counted from the file's start.
  const char* head = stream.Peek4();
  if (head != nullptr && std::memcmp(head, "\xEF\xBB\xBF", 3) == 0) {
    for (int i = 0; i < 3; ++i) stream.Take();
  }
  Scanner scanner(stream, on_event);
  rapidjson::Reader reader;
  // Strings are not checked as UTF-8 here: names from C callers may hold any
  // bytes anyway, and everything that prints them validates (common/utf8.h).
  // The iterative parser keeps its nesting on the heap, not the call stack:
  // the recursive one overflows the stack on a file of 200k '['.
  constexpr unsigned kFlags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseIterativeFlag;
  const rapidjson::ParseResult ok = reader.Parse<kFlags>(stream, scanner);
  if (scanner.failure()) std::rethrow_exception(scanner.failure());
  if (!ok) {
    std::string problem = scanner.problem();
    if (problem.empty()) {
      problem = std::string("it is not valid JSON at byte ") + std::to_string(ok.Offset()) + " (" +
                rapidjson::GetParseError_En(ok.Code()) + "): the file is truncated or damaged";
    }
    throw Error(PK_ERR_CORRUPT, "cannot load '" + path + "': " + problem);
  }
  return std::move(scanner.profkit());
}

}  // namespace profkit
