// .pktrace files: exact round trips, and a clear error (never a crash, never a
// partial result) for every kind of bad file.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "profkit/profkit.h"
#include "result_expectations.h"
#include "sample_result.h"
#include "storage/file_bytes.h"
#include "storage/record_layouts.h"
#include "storage/trace_checksum.h"
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

// A gzip-compressed trace handed to the engine as it is (a C caller, or a
// pipe) is named as such, with what to do.
TEST(Storage, AGzipCompressedFileIsNamedAsSuch) {
  TempDir dir;
  const std::string path = dir.file("t.pktrace.gz");
  write_file(path, std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + std::string(40, '\x5a'));
  expect_load_error(path, PK_ERR_CORRUPT, "it is gzip-compressed data, not a profkit trace; decompress it first");
}

// procfs (and sysfs, some FUSE file systems) report size 0 for files that
// hold bytes: they are read, not called empty unread.
TEST(Storage, AFileThatReportsSizeZeroIsReadAllTheSame) {
  struct stat st;
  ASSERT_EQ(stat("/proc/self/status", &st), 0);
  ASSERT_EQ(st.st_size, 0);
  const auto bytes = FileBytes::read("/proc/self/status", 1 << 20);
  ASSERT_GT(bytes->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes->data()), 5), "Name:");
  expect_load_error("/proc/self/status", PK_ERR_CORRUPT, "it is not a profkit trace (no 'PKTR' file identifier)");
  // A file that is empty is still empty.
  TempDir dir;
  write_file(dir.file("empty.pktrace"), "");
  EXPECT_EQ(FileBytes::read(dir.file("empty.pktrace"), 1 << 20)->size(), 0u);
  expect_load_error(dir.file("empty.pktrace"), PK_ERR_CORRUPT, "the file is empty (0 bytes)");
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
  // Schema 2 on carries a checksum, as profkit's writer stores it.
  b.ForceDefaults(schema_version >= 2);
  auto trace = schema::CreateTrace(b, schema_version, min_reader, meta, strings_vec, threads_vec, host, 0, 0, 0, 0, 0,
                                   0, /*checksum=*/0);
  b.ForceDefaults(false);
  schema::FinishSizePrefixedTraceBuffer(b, trace);
  if (schema_version >= 2) {
    EXPECT_TRUE(seal_trace_checksum(b.GetBufferPointer(), b.GetSize()));
  }
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// What a checksum catches that no other check can: a changed byte in a name.
TEST(Storage, ABytesChangeAfterSavingIsRefusedByTheChecksum) {
  TempDir dir;
  const std::string path = dir.file("sample.pktrace");
  save_result(*profkit_test::make_sample_result(), path);
  const std::string good = read_file(path);
  const auto* data = reinterpret_cast<const uint8_t*>(good.data());
  const uint8_t* field = checksum_field(data);
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(stored_checksum(field), trace_checksum(data, good.size(), field));
  EXPECT_NE(stored_checksum(field), 0u);

  std::string renamed = good;
  const size_t at = renamed.find("NVIDIA H200");
  ASSERT_NE(at, std::string::npos);
  renamed[at] = 'M';
  write_file(path, renamed);
  expect_load_error(path, PK_ERR_CORRUPT, "its bytes changed after profkit wrote it (its checksum is CRC-32C 0x");
  // The same bytes sealed again load, with the changed name: the checksum is
  // all that refused them.
  ASSERT_TRUE(seal_trace_checksum(reinterpret_cast<uint8_t*>(&renamed[0]), renamed.size()));
  write_file(path, renamed);
  EXPECT_EQ(load_result(path)->devices.at(0).name, "MVIDIA H200");
}

// Every byte of a saved trace changed in turn, two ways (all its bits, its
// lowest bit): every load is refused. Before the checksum about a fifth of
// them loaded, as plausible wrong traces (other names, flags, ids).
TEST(Storage, EveryChangedByteIsRefused) {
  TempDir dir;
  const std::string path = dir.file("sample.pktrace");
  save_result(*profkit_test::make_sample_result(), path);
  const std::string good = read_file(path);
  const std::string bad_path = dir.file("changed.pktrace");
  for (size_t at = 0; at < good.size(); ++at) {
    for (const uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
      std::string bad = good;
      bad[at] = static_cast<char>(static_cast<uint8_t>(bad[at]) ^ mask);
      write_file(bad_path, bad);
      pk_result* r = nullptr;
      const pk_status status = pk_result_load(bad_path.c_str(), &r);
      EXPECT_TRUE(status == PK_ERR_CORRUPT || status == PK_ERR_VERSION)
          << "byte " << at << " of " << good.size() << " ^ " << int{mask} << " loads";
      if (status == PK_OK) pk_result_release(r);
    }
  }
}

TEST(Storage, SchemaOneFilesLoadWithoutAChecksumAndLaterOnesNeedIt) {
  TempDir dir;
  const std::string path = dir.file("old.pktrace");
  write_file(path, craft(1, 1, 1, /*schema_version=*/1));  // as profkit wrote before schema 2
  EXPECT_EQ(load_result(path)->host_events.size(), 1u);
  EXPECT_EQ(checksum_field(reinterpret_cast<const uint8_t*>(read_file(path).data())), nullptr);

  // The same file claiming schema 2 has lost its checksum: refused.
  flatbuffers::FlatBufferBuilder b;
  auto meta = schema::CreateMetadata(b, b.CreateString("0"), b.CreateString("h"));
  schema::FinishSizePrefixedTraceBuffer(b, schema::CreateTrace(b, 2, 1, meta));
  write_file(path, std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()));
  expect_load_error(path, PK_ERR_CORRUPT, "says it is schema 2 but has no checksum");
  // No profkit writes schema 0.
  write_file(path, craft(0, 1, 1, /*schema_version=*/0));
  expect_load_error(path, PK_ERR_CORRUPT, "it states no schema version");
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

// What ResultBuilder makes of events recorded whole (pk_complete_event,
// torch's ranges, with_stack's calls): siblings that overlap without
// nesting, ties, zero-length events at an end. These load back, hand-laid
// and built from random times.
TEST(Storage, EventsThatOverlapOrTieAsTheBuilderNestsThemLoad) {
  TempDir dir;
  const std::string ok = dir.file("ok.pktrace");
  write_file(ok, craft_threads({{op(10, 30, 0), op(20, 40, 0), op(25, 40, 1), op(25, 40, 2), op(40, 40, 3),
                                 op(50, 60, 0), op(55, 60, 1), op(60, 70, 0), op(60, 60, 1)}}));
  EXPECT_EQ(load_result(ok)->host_events.size(), 9u);

  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    ResultBuilder b({});
    b.add_string("");
    const uint32_t name = b.add_string("x");
    for (uint32_t t = 0; t < 3; ++t) {
      const uint32_t thread = b.thread(t + 1);
      for (int i = 0; i < 400; ++i) {
        // Few distinct times, so that starts and ends often tie.
        const uint64_t start = rng() % 64;
        const uint64_t end = start + (rng() % 4 == 0 ? 0 : rng() % 32);
        const pk_host_event e{start, end, name, PK_EVENT_PYTHON_OP, static_cast<uint8_t>(rng() % 3), 0};
        if (rng() % 2 == 0) {
          b.add_whole_event(thread, e);
        } else {
          b.add_event(thread, e);
        }
      }
    }
    auto built = b.finish();
    save_result(*built, ok);
    const auto loaded = load_result(ok);
    ASSERT_EQ(loaded->host_events.size(), built->host_events.size());
  }
}

TEST(Storage, TimesOrDepthsThatBreakTheNestingAreRefused) {
  TempDir dir;
  const std::string path = dir.file("bad.pktrace");
  // A child that ends after its parent (its end, or the parent's, damaged).
  write_file(path, craft_threads({{op(10, 100, 0), op(20, 150, 1)}}));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "thread 0 (tid 1), event 1 (host event 1) ends at 150 ns, after the event it is nested in (at "
                    "depth 0, ending at 100 ns)");
  write_file(path, craft_threads({{op(10, 100, 0), op(20, 90, 1), op(30, 95, 2)}}));
  expect_load_error(path, PK_ERR_CORRUPT, "event 2 (host event 2) ends at 95 ns, after the event it is nested in");
  // An event at the depth of the one before it that it lies within: an end
  // made later (one top-level event lasting "582 years") or a depth made
  // smaller.
  write_file(path, craft_threads({{op(10, 1ull << 62, 0), op(20, 30, 1), op(200, 300, 0)}}));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "event 2 (host event 2) at nesting depth 0 ends at 300 ns, within the event before it at that "
                    "depth (ending at 4611686018427387904 ns)");
  write_file(path, craft_threads({{op(10, 100, 0), op(20, 50, 1), op(30, 40, 1)}}));
  expect_load_error(path, PK_ERR_CORRUPT, "event 2 (host event 2) at nesting depth 1 ends at 40 ns, within the event");
  // Of two events with one start, the enclosing (longer) one comes first.
  write_file(path, craft_threads({{op(10, 50, 0), op(10, 100, 0)}}));
  expect_load_error(path, PK_ERR_CORRUPT, "event 1 (host event 1) starts with the event before it but ends after it");
  // An instant that lasts (its flag or its end damaged).
  write_file(path, craft_threads({{op(10, 100, 0), {20, 30, 1, PK_EVENT_USER_DEFINED, 1, PK_HOST_EVENT_INSTANT}}}));
  expect_load_error(path, PK_ERR_CORRUPT, "event 1 (host event 1) is an instant event that lasts 10 ns");
  // Each thread has its own tree.
  write_file(path, craft_threads({{op(0, 1000, 0)}, {op(10, 20, 0), op(15, 30, 1)}}));
  expect_load_error(path, PK_ERR_CORRUPT, "thread 1 (tid 2), event 1 (host event 2) ends at 30 ns");
  // Past depth 255 the parent is the open event at depth 254.
  std::vector<pk_host_event> deep;
  for (uint64_t i = 0; i < 256; ++i) deep.push_back(op(i, 1000 - i, static_cast<uint8_t>(i)));
  deep.push_back(op(300, 700, 255));  // nested 256 deep, saturated: loads
  write_file(path, craft_threads({deep}));
  EXPECT_EQ(load_result(path)->host_events.size(), 257u);
  deep.push_back(op(400, 747, 255));  // ends after the open depth-254 event, [254, 746]
  write_file(path, craft_threads({deep}));
  expect_load_error(path, PK_ERR_CORRUPT, "ends at 747 ns, after the event it is nested in (at depth 254");
}

// A valid file with metadata start_ns and end_ns and no events.
std::string craft_span(uint64_t start_ns, uint64_t end_ns) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<flatbuffers::String>> strings = {b.CreateString("")};
  auto strings_vec = b.CreateVector(strings);
  auto meta = schema::CreateMetadata(b, b.CreateString("0"), b.CreateString("h"), 1, -1, -1, 0, start_ns, end_ns);
  auto trace = schema::CreateTrace(b, 1, 1, meta, strings_vec);
  schema::FinishSizePrefixedTraceBuffer(b, trace);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TEST(Storage, ASpanThatEndsBeforeItStartsOrPastTheClockIsRefused) {
  TempDir dir;
  const std::string path = dir.file("span.pktrace");
  write_file(path, craft_span(5000, 5000));  // an empty span, as a collect with nothing recorded has
  EXPECT_EQ(load_result(path)->info.end_ns, 5000u);
  write_file(path, craft_span(5001, 5000));
  expect_load_error(path, PK_ERR_CORRUPT, "its recording span starts after it ends (start_ns 5001 > end_ns 5000");
  // The engine clock's times reach INT64_MAX ns (the JSON reader's limit too).
  write_file(path, craft_span(5000, static_cast<uint64_t>(INT64_MAX)));
  EXPECT_EQ(load_result(path)->info.end_ns, static_cast<uint64_t>(INT64_MAX));
  write_file(path, craft_span(5000, static_cast<uint64_t>(INT64_MAX) + 1));
  expect_load_error(path, PK_ERR_CORRUPT, "its recording span ends at 9223372036854775808 ns, past the engine clock");
}

// `file` (a saved trace) with the records of one column changed in place.
template <class Record, class Schema>
std::string with_records(std::string file, const flatbuffers::Vector<const Schema*>* (schema::Trace::*column)() const,
                         const std::function<void(std::vector<Record>&)>& edit) {
  static_assert(sizeof(Record) == sizeof(Schema), "one layout");
  const auto* base = reinterpret_cast<const uint8_t*>(file.data());
  const auto* v = (schema::GetSizePrefixedTrace(base)->*column)();
  const size_t at = static_cast<size_t>(v->Data() - base);
  std::vector<Record> records(v->size());
  std::memcpy(records.data(), file.data() + at, records.size() * sizeof(Record));
  edit(records);
  std::memcpy(&file[at], records.data(), records.size() * sizeof(Record));
  // Sealed again, so that what is tested is the check on the records (which
  // guards schema 1 files and whatever a writer gets wrong), not the checksum.
  EXPECT_TRUE(seal_trace_checksum(reinterpret_cast<uint8_t*>(&file[0]), file.size()));
  return file;
}

TEST(Storage, RecordColumnsOutOfTheirOrderAreRefused) {
  TempDir dir;
  ResultInfo info;
  info.end_ns = 100000;
  ResultBuilder b(info);
  b.add_string("");
  const uint32_t name = b.add_string("x");
  const uint32_t t = b.thread(1);
  b.add_event(t, {1000, 9000, name, PK_EVENT_OPERATOR, 0, 0});
  b.add_arg(t, 1000, 0, name, PK_ARG_INT, 1);
  b.add_runtime_call(t, {2000, 3000, name, PK_EVENT_CUDA_RUNTIME, 0, 0}, 7);
  b.add_arg(t, 2000, 255, name, PK_ARG_INT, 2);
  b.add_memory_event({1500, 0x10, 64, 64, 64, t, 0});
  b.add_memory_event({2500, 0x10, -64, 0, 64, t, 0});
  const pk_memory_op_detail m{64, 0, 0, 0, 0, 0};
  b.add_device_event({4000, 5000, 0, name, 7, 1, 1, 0, PK_EVENT_MEMSET, 0, b.add_memory_op_detail(m)});
  b.add_device_event({6000, 7000, 0, name, 8, 1, 1, 0, PK_EVENT_MEMSET, 0, PK_NO_DETAIL});
  const std::string good_path = dir.file("good.pktrace");
  save_result(*b.finish(), good_path);
  const auto good_result = load_result(good_path);
  ASSERT_EQ(good_result->event_args.size(), 2u);
  ASSERT_EQ(good_result->device_events[0].launch_event, 1u);  // the runtime call
  const std::string good = read_file(good_path);
  const std::string path = dir.file("bad.pktrace");

  write_file(path, with_records<pk_event_arg>(good, &schema::Trace::event_args,
                                              [](std::vector<pk_event_arg>& a) { std::swap(a[0], a[1]); }));
  expect_load_error(path, PK_ERR_CORRUPT, "event argument 1 is out of order");
  write_file(path,
             with_records<pk_memory_event>(good, &schema::Trace::memory_events,
                                           [](std::vector<pk_memory_event>& events) { events[1].time_ns = 1000; }));
  expect_load_error(path, PK_ERR_CORRUPT, "memory event 1 is earlier than the one before it");
  write_file(path, with_records<pk_device_event>(good, &schema::Trace::device_events,
                                                 [](std::vector<pk_device_event>& d) { d[1].start_ns = 3999; }));
  expect_load_error(path, PK_ERR_CORRUPT, "device event 1 starts before the one before it");
  write_file(path, with_records<pk_device_event>(good, &schema::Trace::device_events,
                                                 [](std::vector<pk_device_event>& d) { d[0].launch_event = 0; }));
  expect_load_error(path, PK_ERR_CORRUPT,
                    "device event 0 names host event 0 as its launch, which is not a CUDA runtime call");
}

// Whatever the recorder puts in a result loads back from its file, the same:
// events still open at a collect (they end in the next result, starting
// before its span), events recorded whole that overlap their siblings or
// nest past the depth limit, instants, steps, and an event with any times.
TEST(Storage, EveryResultTheRecorderMakesLoadsBack) {
  profkit_test::reset_engine();
  TempDir dir;
  const pk_name_id name = pk_intern("storage_test event");
  ASSERT_EQ(pk_set_state(PK_STATE_RECORD), PK_OK);
  ASSERT_EQ(pk_step(0), PK_OK);
  pk_begin_event(name, PK_EVENT_FORWARD);  // open across the first collect
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  const uint64_t t0 = pk_now_ns();
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0, t0 + 100);
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 50, t0 + 200);  // overlaps the one before
  pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 50, t0 + 200);  // ties with it
  for (uint64_t i = 0; i < 300; ++i) pk_complete_event(name, PK_EVENT_PYTHON_OP, t0 + 300 + i, t0 + 1000 - i);
  pk_instant_event(name, PK_EVENT_USER_DEFINED);
  std::vector<profkit_test::ResultPtr> results;
  results.push_back(profkit_test::collect());  // recording goes on
  pk_begin_event(name, PK_EVENT_OPERATOR);
  pk_end_event();
  pk_end_event();  // the event begun before the collect
  ASSERT_EQ(pk_step(0), PK_OK);
  pk_complete_event(name, PK_EVENT_OPERATOR, 0, UINT64_MAX);  // times not from pk_now_ns
  ASSERT_EQ(pk_set_state(PK_STATE_CLOSED), PK_OK);
  results.push_back(profkit_test::collect());
  const pk_result_info second = profkit_test::info_of(results[1].get());
  bool carried = false;
  for (const pk_host_event& e : profkit_test::events_of(results[1].get())) {
    carried |= e.type == PK_EVENT_FORWARD && e.start_ns < second.start_ns;
  }
  EXPECT_TRUE(carried) << "the second result holds the event begun before the first collect";
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string path = dir.file("r" + std::to_string(i) + ".pktrace");
    ASSERT_EQ(pk_result_save(results[i].get(), path.c_str()), PK_OK) << pk_last_error();
    profkit_test::ResultPtr loaded = profkit_test::load(path);
    ASSERT_NE(loaded, nullptr);
    const std::vector<pk_host_event> a = profkit_test::events_of(results[i].get());
    const std::vector<pk_host_event> b = profkit_test::events_of(loaded.get());
    ASSERT_EQ(a.size(), b.size());
    EXPECT_GT(a.size(), 2u);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(pk_host_event)), 0);
  }
  profkit_test::reset_engine();
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
