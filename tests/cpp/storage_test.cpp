// .pktrace files: exact round trips, and a clear error (never a crash, never a
// partial result) for every kind of bad file.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "profkit/profkit.h"
#include "result_expectations.h"
#include "sample_result.h"
#include "storage/record_layouts.h"
#include "storage/trace_file.h"
#include "test_support.h"
#include "trace_generated.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;
using profkit_test::write_file;

template <class T>
void expect_same_bytes(const Column<T>& a, const Column<T>& b) {
  ASSERT_EQ(a.size(), b.size());
  if (!a.empty()) {
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)), 0);
  }
}

// Every string, thread and record of two results, read in full.
void expect_same_contents(const Result& original, const Result& loaded) {
  profkit_test::expect_same_info(original.info, loaded.info);
  ASSERT_EQ(original.strings.size(), loaded.strings.size());
  for (size_t i = 0; i < original.strings.size(); ++i) EXPECT_EQ(original.strings.view(i), loaded.strings.view(i));
  ASSERT_EQ(original.threads.size(), loaded.threads.size());
  for (size_t i = 0; i < original.threads.size(); ++i) {
    EXPECT_EQ(original.threads[i].tid, loaded.threads[i].tid);
    EXPECT_EQ(original.threads[i].name, loaded.threads[i].name);
    EXPECT_EQ(original.threads[i].first_event, loaded.threads[i].first_event);
    EXPECT_EQ(original.threads[i].event_count, loaded.threads[i].event_count);
  }
  expect_same_bytes(original.host_events, loaded.host_events);
  expect_same_bytes(original.event_args, loaded.event_args);
  expect_same_bytes(original.memory_events, loaded.memory_events);
  expect_same_bytes(original.device_events, loaded.device_events);
  expect_same_bytes(original.kernel_details, loaded.kernel_details);
  expect_same_bytes(original.memory_op_details, loaded.memory_op_details);
  EXPECT_EQ(original.metadata, loaded.metadata);
}

TEST(Storage, RoundTripKeepsEveryRecordAndFact) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string path = dir.file("sample.pktrace");
  save_result(*original, path);
  auto loaded = load_result(path);

  expect_same_contents(*original, *loaded);
  EXPECT_EQ(loaded->info.schema_version, kSchemaVersion);
  // Field order of the structs matches the schema, not just their sizes.
  EXPECT_EQ(loaded->kernel_details[0].occupancy, 0.75f);
  EXPECT_EQ(loaded->memory_op_details[0].dst_kind, 3);
  EXPECT_EQ(loaded->memory_events[0].device, 0);
  ASSERT_EQ(loaded->devices.size(), 1u);
  EXPECT_EQ(loaded->devices[0].name, "NVIDIA H200");
  EXPECT_EQ(loaded->devices[0].total_memory, 150ull << 30);
  EXPECT_EQ(loaded->devices[0].max_shared_memory_per_sm, 233472);

  // A loaded result saves to the same bytes: it is the same type downstream.
  const std::string again = dir.file("again.pktrace");
  save_result(*loaded, again);
  EXPECT_EQ(read_file(path), read_file(again));
}

// A loaded result owns its bytes: refreshing a trace on disk (cp over it,
// open(path, "wb") in a notebook) while an earlier load of it is still in use
// must neither change that result nor crash the process reading it. With the
// file mapped, the first read garbage and the second died of SIGBUS.
TEST(Storage, ALoadedResultIsUnchangedWhenItsFileIsRewrittenInPlace) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string path = dir.file("sample.pktrace");
  save_result(*original, path);
  auto loaded = load_result(path);
  const size_t size = read_file(path).size();
  write_file(path, std::string(size, '\x5a'));  // truncates, then writes other bytes over the same length
  ASSERT_EQ(read_file(path), std::string(size, '\x5a'));
  expect_same_contents(*original, *loaded);
}

TEST(Storage, ALoadedResultIsUnchangedWhenItsFileIsTruncated) {
  TempDir dir;
  auto original = profkit_test::make_sample_result();
  const std::string path = dir.file("sample.pktrace");
  save_result(*original, path);
  auto loaded = load_result(path);
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  expect_same_contents(*original, *loaded);
}

TEST(Storage, HostEventsTakeTwentyFourBytesOnDisk) {
  TempDir dir;
  // Two results with the same strings and thread table: 1 and 10000 events.
  auto make = [](uint64_t events) {
    ResultBuilder b({});
    b.add_string("");
    const uint32_t t = b.thread(1);
    for (uint64_t i = 0; i < events; ++i) b.add_event(t, {i * 10, i * 10 + 5, 0, PK_EVENT_OPERATOR, 0, 0});
    return b.finish();
  };
  const std::string f1 = dir.file("one.pktrace");
  const std::string f2 = dir.file("many.pktrace");
  save_result(*make(1), f1);
  save_result(*make(10000), f2);
  struct stat s1, s2;
  ASSERT_EQ(stat(f1.c_str(), &s1), 0);
  ASSERT_EQ(stat(f2.c_str(), &s2), 0);
  EXPECT_EQ(static_cast<size_t>(s2.st_size - s1.st_size), 9999u * sizeof(pk_host_event));
  EXPECT_EQ(sizeof(pk_host_event), 24u);
}

// Every bad file is an Error with the right status, naming the file.
void expect_load_error(const std::string& path, pk_status status, const std::string& words) {
  try {
    load_result(path);
    ADD_FAILURE() << "loading " << path << " should fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Storage, BadFilesGiveClearErrors) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string good = dir.file("good.pktrace");
  save_result(*r, good);
  const std::string bytes = read_file(good);

  expect_load_error(dir.file("missing.pktrace"), PK_ERR_NOT_FOUND, "No such file");
  expect_load_error(dir.path(), PK_ERR_IO, "directory");

  write_file(dir.file("empty.pktrace"), "");
  expect_load_error(dir.file("empty.pktrace"), PK_ERR_CORRUPT, "empty");
  write_file(dir.file("tiny.pktrace"), "PK");
  expect_load_error(dir.file("tiny.pktrace"), PK_ERR_CORRUPT, "too small");
  write_file(dir.file("chrome.json"), "{\"traceEvents\": []}");
  expect_load_error(dir.file("chrome.json"), PK_ERR_CORRUPT, "looks like JSON");
  write_file(dir.file("random.bin"), std::string(4096, '\x5a'));
  expect_load_error(dir.file("random.bin"), PK_ERR_CORRUPT, "not a profkit trace");

  for (size_t cut : {bytes.size() / 2, bytes.size() - 1, size_t{64}}) {
    write_file(dir.file("cut.pktrace"), bytes.substr(0, cut));
    expect_load_error(dir.file("cut.pktrace"), PK_ERR_CORRUPT, "truncated (" + std::to_string(cut) + " of");
  }
  write_file(dir.file("long.pktrace"), bytes + "junk");
  expect_load_error(dir.file("long.pktrace"), PK_ERR_CORRUPT, "4 unexpected bytes");
  std::string flipped = bytes;
  flipped[4] = static_cast<char>(0x7f);  // the root offset now points past the end
  flipped[5] = static_cast<char>(0x7f);
  write_file(dir.file("flipped.pktrace"), flipped);
  expect_load_error(dir.file("flipped.pktrace"), PK_ERR_CORRUPT, "failed FlatBuffers verification");
}

TEST(Storage, AFileLargerThanAnyTraceIsRefusedBeforeItIsRead) {
  TempDir dir;
  // Sparse: 3 GiB of size and no disk blocks. Reading it whole would take
  // 3 GiB of memory; no FlatBuffer is over 2 GiB.
  const std::string path = dir.file("huge.pktrace");
  write_file(path, "");
  ASSERT_EQ(truncate(path.c_str(), off_t{3} << 30), 0);
  expect_load_error(path, PK_ERR_CORRUPT, "more than a profkit trace can be");
}

// Builds a structurally valid FlatBuffer whose content is inconsistent.
std::string craft(uint32_t min_reader, uint64_t thread_events, uint32_t event_name, uint32_t schema_version = 99) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<flatbuffers::String>> strings = {b.CreateString(""), b.CreateString("x")};
  auto strings_vec = b.CreateVector(strings);
  std::vector<flatbuffers::Offset<schema::Thread>> threads = {
      schema::CreateThread(b, 1, b.CreateString("t"), 0, thread_events)};
  auto threads_vec = b.CreateVector(threads);
  auto meta = schema::CreateMetadata(b, b.CreateString("0"), b.CreateString("h"));
  pk_host_event e{1, 2, event_name, PK_EVENT_OPERATOR, 0, 0};
  auto host = b.CreateVectorOfStructs(reinterpret_cast<const schema::HostEvent*>(&e), 1);
  auto trace = schema::CreateTrace(b, schema_version, min_reader, meta, strings_vec, threads_vec, host);
  schema::FinishSizePrefixedTraceBuffer(b, trace);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TEST(Storage, InconsistentOrFutureFilesAreRefused) {
  TempDir dir;
  const std::string ok = dir.file("ok.pktrace");
  write_file(ok, craft(1, 1, 1));
  EXPECT_EQ(load_result(ok)->host_events.size(), 1u);  // the crafted baseline is fine

  write_file(dir.file("future.pktrace"), craft(99, 1, 1));
  expect_load_error(dir.file("future.pktrace"), PK_ERR_VERSION, "newer profkit");
  // A file that needs a newer reader than its own schema is damaged, not new.
  write_file(dir.file("contradiction.pktrace"), craft(99, 1, 1, 2));
  expect_load_error(dir.file("contradiction.pktrace"), PK_ERR_CORRUPT,
                    "needs schema 99 to read but says it is schema 2");
  write_file(dir.file("range.pktrace"), craft(1, 5, 1));
  expect_load_error(dir.file("range.pktrace"), PK_ERR_CORRUPT, "thread 0");
  write_file(dir.file("name.pktrace"), craft(1, 1, 77));
  expect_load_error(dir.file("name.pktrace"), PK_ERR_CORRUPT, "host event 0");
}

// A valid FlatBuffer with one thread (tids 1, 2, ...) per list of events.
std::string craft_threads(const std::vector<std::vector<pk_host_event>>& threads) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<flatbuffers::String>> strings = {b.CreateString(""), b.CreateString("x")};
  auto strings_vec = b.CreateVector(strings);
  std::vector<flatbuffers::Offset<schema::Thread>> thread_table;
  std::vector<pk_host_event> events;
  for (size_t t = 0; t < threads.size(); ++t) {
    thread_table.push_back(schema::CreateThread(b, t + 1, b.CreateString("t"), events.size(), threads[t].size()));
    events.insert(events.end(), threads[t].begin(), threads[t].end());
  }
  auto threads_vec = b.CreateVector(thread_table);
  auto meta = schema::CreateMetadata(b, b.CreateString("0"), b.CreateString("h"));
  auto host = b.CreateVectorOfStructs(reinterpret_cast<const schema::HostEvent*>(events.data()), events.size());
  auto trace = schema::CreateTrace(b, 1, 1, meta, strings_vec, threads_vec, host);
  schema::FinishSizePrefixedTraceBuffer(b, trace);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

pk_host_event op(uint64_t start, uint64_t end, uint8_t depth) { return {start, end, 1, PK_EVENT_OPERATOR, depth, 0}; }

TEST(Storage, EventsOutOfOrderOrWithDepthsThatJumpAreRefused) {
  TempDir dir;
  // The baseline: a tree per thread, and the second thread starts earlier
  // and shallower than where the first one ends (order is per thread).
  const std::string ok = dir.file("ok.pktrace");
  write_file(ok, craft_threads({{op(10, 100, 0), op(20, 60, 1), op(30, 40, 2), op(30, 40, 3), op(70, 90, 1),
                                 op(200, 300, 0), op(200, 300, 1)},
                                {op(5, 50, 0), op(6, 7, 1)}}));
  EXPECT_EQ(load_result(ok)->host_events.size(), 9u);

  const std::string path = dir.file("bad.pktrace");
  write_file(path, craft_threads({{op(10, 20, 0)}, {op(5, 50, 0), op(40, 45, 1), op(30, 35, 1)}}));
  expect_load_error(path, PK_ERR_CORRUPT, "thread 1 (tid 2), event 2 (host event 3) starts before the event before it");
  write_file(path, craft_threads({{op(10, 20, 200), op(30, 40, 200)}}));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "thread 0 (tid 1), event 0 (host event 0) has nesting depth 200 where at most 0");
  write_file(path, craft_threads({{op(10, 20, 0)}, {op(0, 100, 0), op(10, 90, 1), op(20, 30, 3)}}));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "thread 1 (tid 2), event 2 (host event 3) has nesting depth 3 where at most 2");
  // A thread starts over at depth 0, whatever the thread before ended at.
  write_file(path, craft_threads({{op(0, 100, 0), op(10, 90, 1)}, {op(0, 100, 1)}}));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "thread 1 (tid 2), event 0 (host event 2) has nesting depth 1 where at most 0");
}

TEST(Storage, NestingDeeperThanADepthByteHoldsLoadsBack) {
  // The builder saturates depth at 255: events nested 300 deep are 0..255,
  // then 255 again, each at most one deeper than the one before.
  ResultBuilder b({});
  b.add_string("");
  const uint32_t name = b.add_string("x");
  const uint32_t t = b.thread(1);
  for (uint64_t i = 0; i < 300; ++i) b.add_event(t, {i, 1000 - i, name, PK_EVENT_OPERATOR, 0, 0});
  b.add_event(t, {2000, 2001, name, PK_EVENT_OPERATOR, 0, 0});
  TempDir dir;
  const std::string path = dir.file("deep.pktrace");
  save_result(*b.finish(), path);
  const auto r = load_result(path);
  ASSERT_EQ(r->host_events.size(), 301u);
  EXPECT_EQ(r->host_events[255].depth, 255u);
  EXPECT_EQ(r->host_events[299].depth, 255u);
  EXPECT_EQ(r->host_events[300].depth, 0u);
}

// A valid FlatBuffer whose host events sit 4 bytes off their 8-byte
// alignment, as a damaged file can have them: the verifier checks only the
// vector's 4-byte length. Built both ways, 0 or 4 bytes of padding before
// the vector, and returns the one that is misaligned (the loader reads a file
// into a buffer aligned for 8-byte records, so an offset's alignment is the
// address's).
std::string craft_misaligned_host_events(const std::vector<pk_host_event>& events) {
  for (const uint32_t pad : {0u, 4u}) {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<flatbuffers::String>> strings = {b.CreateString(""), b.CreateString("x")};
    auto strings_vec = b.CreateVector(strings);
    std::vector<flatbuffers::Offset<schema::Thread>> threads = {
        schema::CreateThread(b, 1, b.CreateString("t"), 0, events.size())};
    auto threads_vec = b.CreateVector(threads);
    auto meta = schema::CreateMetadata(b, b.CreateString("0"), b.CreateString("h"));
    if (pad != 0) b.PushElement<uint32_t>(0);
    const size_t bytes = events.size() * sizeof(pk_host_event);
    b.StartVector(bytes / 4, 4);  // 4-byte aligned only, unlike CreateVectorOfStructs
    b.PushBytes(reinterpret_cast<const uint8_t*>(events.data()), bytes);
    const flatbuffers::Offset<flatbuffers::Vector<const schema::HostEvent*>> host(b.EndVector(events.size()));
    auto trace = schema::CreateTrace(b, 1, 1, meta, strings_vec, threads_vec, host);
    schema::FinishSizePrefixedTraceBuffer(b, trace);
    const uint8_t* start = b.GetBufferPointer();
    const uint8_t* data = schema::GetSizePrefixedTrace(start)->host_events()->Data();
    if ((data - start) % 8 != 0) return std::string(reinterpret_cast<const char*>(start), b.GetSize());
  }
  ADD_FAILURE() << "could not place the host events off their alignment";
  return {};
}

TEST(Storage, MisalignedRecordColumnsAreCopiedNotReadInPlace) {
  TempDir dir;
  const std::vector<pk_host_event> events = {{100, 900, 1, PK_EVENT_OPERATOR, 0, 0},
                                             {200, 300, 1, PK_EVENT_OPERATOR, 1, 0}};
  const std::string path = dir.file("misaligned.pktrace");
  write_file(path, craft_misaligned_host_events(events));
  // Under UBSan (CI's sanitizer build) reading them in place would abort here.
  const auto r = load_result(path);
  ASSERT_EQ(r->host_events.size(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r->host_events.data()) % alignof(pk_host_event), 0u);
  EXPECT_EQ(r->host_events[0].start_ns, 100u);
  EXPECT_EQ(r->host_events[0].end_ns, 900u);
  EXPECT_EQ(r->host_events[1].start_ns, 200u);
  EXPECT_EQ(r->host_events[1].depth, 1u);
}

TEST(Storage, TheCApiReportsErrorsAndLeavesNoPartialResult) {
  TempDir dir;
  pk_result* r = reinterpret_cast<pk_result*>(0x1);
  EXPECT_EQ(pk_result_load(dir.file("nope.pktrace").c_str(), &r), PK_ERR_NOT_FOUND);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(std::string(pk_last_error()).find("nope.pktrace"), std::string::npos);
  EXPECT_EQ(pk_result_load(nullptr, &r), PK_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pk_result_load("x", nullptr), PK_ERR_INVALID_ARGUMENT);
}

TEST(Storage, FailedSavesLeaveNothingBehind) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  try {
    save_result(*r, dir.file("no/such/dir/out.pktrace"));
    ADD_FAILURE() << "saving into a missing directory should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir/out.pktrace"), std::string::npos);
  }
  // The final file appears only complete; no temporaries remain.
  const std::string path = dir.file("out.pktrace");
  save_result(*r, path);
  EXPECT_EQ(std::system(("test $(ls '" + dir.path() + "' | wc -l) -eq 1").c_str()), 0);
}

}  // namespace
}  // namespace profkit
