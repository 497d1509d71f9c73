// Mutation fuzzing of pk_result_load: takes real trace files (a collected run
// and a hand-built result with every record kind, each as a .pktrace and as
// profkit's Chrome JSON), applies random byte flips, truncations, insertions,
// splices and integer overwrites anywhere (every other mutant) or odd values
// inside the record arrays (.pktrace) or its numbers (JSON) only, and loads
// each mutant (most .pktrace mutants sealed with their new checksum, so that
// they get past it to the checks behind it). Any crash, sanitizer report or hang is the failure; a load that
// succeeds must give a result every accessor, exporter and summary table can
// walk.
//
// Usage: trace_fuzz WORK_DIR ITERATIONS [SEED]. After a crash,
// WORK_DIR/fuzz_mutant.pktrace (or .trace.json) is the file that caused it (the seed traces
// hold real timestamps, so a seed alone does not reproduce a run).
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "../cpp/sample_result.h"
#include "profkit/profkit.h"
#include "storage/trace_checksum.h"
#include "storage/trace_file.h"
#include "trace_generated.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string recorded_trace(const std::string& dir) {
  pk_set_state(PK_STATE_RECORD);
  pk_step_begin(0);
  for (int i = 0; i < 200; ++i) {
    pk_begin_event_str("outer", PK_EVENT_FORWARD);
    pk_begin_event_str("aten::add", PK_EVENT_OPERATOR);
    pk_event_arg_str(pk_intern("shape"), "[3]");
    pk_end_event();
    pk_end_event();
  }
  pk_step_end(8);
  pk_set_state(PK_STATE_CLOSED);
  pk_result* r = nullptr;
  pk_collect(&r);
  const std::string path = dir + "/fuzz_seed_recorded.pktrace";
  pk_result_save(r, path.c_str());
  pk_result_release(r);
  return read_all(path);
}

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string m = seed;
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < rounds && !m.empty(); ++k) {
    const size_t pos = rng() % m.size();
    switch (rng() % 6) {
      case 0:  // flip bits
        m[pos] = static_cast<char>(m[pos] ^ static_cast<char>(1u << (rng() % 8)));
        break;
      case 1:  // truncate
        m.resize(pos);
        break;
      case 2:  // random byte
        m[pos] = static_cast<char>(rng());
        break;
      case 3: {  // overwrite a 32-bit word with an interesting value
        static const uint32_t kValues[] = {0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 24, 4096};
        const uint32_t v = kValues[rng() % (sizeof kValues / sizeof kValues[0])];
        for (size_t b = 0; b < 4 && pos + b < m.size(); ++b) m[pos + b] = static_cast<char>(v >> (8 * b));
        break;
      }
      case 4:  // insert junk
        m.insert(pos, std::string(1 + rng() % 16, static_cast<char>(rng())));
        break;
      default: {  // splice a block from elsewhere in the file
        const size_t from = rng() % m.size();
        const size_t len = std::min<size_t>(1 + rng() % 64, m.size() - std::max(from, pos));
        m.replace(pos, len, m.substr(from, len));
        break;
      }
    }
  }
  return m;
}

// Where a trace file keeps its record arrays: byte ranges whose contents can
// change without breaking the FlatBuffer, so that mutants in them pass
// verification and reach the consistency checks, the summary and the export
// with odd values (times, depths, types, indices, sizes).
using ByteRange = std::pair<size_t, size_t>;
std::vector<ByteRange> record_ranges(const std::string& file) {
  const auto* base = reinterpret_cast<const uint8_t*>(file.data());
  const profkit::schema::Trace* trace = profkit::schema::GetSizePrefixedTrace(base);
  std::vector<ByteRange> ranges;
  auto add = [&](const auto* v, size_t record_bytes) {
    if (v != nullptr && v->size() > 0) {
      const size_t at = static_cast<size_t>(v->Data() - base);
      ranges.emplace_back(at, at + v->size() * record_bytes);
    }
  };
  add(trace->host_events(), sizeof(pk_host_event));
  add(trace->event_args(), sizeof(pk_event_arg));
  add(trace->memory_events(), sizeof(pk_memory_event));
  add(trace->device_events(), sizeof(pk_device_event));
  add(trace->kernel_details(), sizeof(pk_kernel_detail));
  add(trace->memory_op_details(), sizeof(pk_memory_op_detail));
  return ranges;
}

// Overwrites 1-8 bytes inside the record arrays with an interesting value.
std::string mutate_records(const std::string& seed, const std::vector<ByteRange>& ranges, std::mt19937_64& rng) {
  std::string m = seed;
  if (ranges.empty()) return m;
  static const uint64_t kValues[] = {0, 1, 2, 0xff, 0x100, 0x7fffffff, 0xffffffff, 0x8000000000000000ull, ~0ull};
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < rounds; ++k) {
    const ByteRange& range = ranges[rng() % ranges.size()];
    const size_t width = size_t{1} << (rng() % 4);  // 1, 2, 4 or 8 bytes
    if (range.second - range.first < width) continue;
    const size_t at = range.first + rng() % (range.second - range.first - width + 1);
    const uint64_t v = rng() % 3 == 0 ? rng() : kValues[rng() % (sizeof kValues / sizeof kValues[0])];
    for (size_t b = 0; b < width; ++b) m[at + b] = static_cast<char>(v >> (8 * b));
  }
  return m;
}

// Gives a .pktrace mutant the checksum of its new bytes, when it still passes
// the FlatBuffers verifier (only then can the field be found safely), so that
// it reaches the consistency checks and every consumer instead of stopping at
// the checksum. Each caller seals some mutants and leaves the rest, which the
// checksum must refuse.
std::string sealed(std::string m) {
  auto* data = reinterpret_cast<uint8_t*>(&m[0]);
  flatbuffers::Verifier verifier(data, m.size(), /*max_depth=*/16, /*max_tables=*/16u << 20);
  if (m.size() >= 8 && profkit::schema::VerifySizePrefixedTraceBuffer(verifier) &&
      flatbuffers::GetPrefixedSize(data) + sizeof(flatbuffers::uoffset_t) == m.size()) {
    profkit::seal_trace_checksum(data, m.size());
  }
  return m;
}

// Rewrites 1-3 numbers of a JSON trace (times, ids, sizes, counts) with odd
// values, so that mutants still parse and reach the loader's checks.
std::string mutate_json_numbers(const std::string& seed, std::mt19937_64& rng) {
  static const char* const kValues[] = {
      "0",   "-1", "1e30", "0.0001", "18446744073709551616", "4294967296", "65536", "-0", "9223372036854775807",
      "1.5", "255"};
  std::string m = seed;
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < rounds && !m.empty(); ++k) {
    size_t at = m.find_first_of("0123456789", rng() % m.size());
    if (at == std::string::npos) continue;
    while (at > 0 && (std::isdigit(static_cast<unsigned char>(m[at - 1])) || m[at - 1] == '.')) --at;
    size_t end = at;
    while (end < m.size() && (std::isdigit(static_cast<unsigned char>(m[end])) || m[end] == '.')) ++end;
    m.replace(at, end - at, kValues[rng() % (sizeof kValues / sizeof kValues[0])]);
  }
  return m;
}

// Touches everything a consumer would, so out-of-bounds data shows up here.
void walk(pk_result* r, const std::string& dir) {
  pk_result_info info{};
  info.struct_size = sizeof info;
  pk_result_get_info(r, &info);
  size_t n = 0;
  const pk_host_event* ev = pk_result_host_events(r, &n);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += ev[i].end_ns - ev[i].start_ns;
    const char* s = pk_result_string(r, ev[i].name);
    if (s != nullptr) sum += static_cast<unsigned char>(s[0]);
    sum += pk_result_parent(r, i) == PK_NO_EVENT ? 0 : 1;
  }
  const pk_device_event* dev = pk_result_device_events(r, &n);
  for (size_t i = 0; i < n; ++i) sum += dev[i].end_ns - dev[i].start_ns;
  for (size_t i = 0; i < pk_result_metadata_count(r); ++i) {
    const char* key = nullptr;
    const char* value = nullptr;
    if (pk_result_metadata(r, i, &key, &value) == PK_OK) sum += static_cast<unsigned char>(key[0]);
  }
  (void)sum;
  const std::string out = dir + "/fuzz_out.trace.json";
  pk_result_export_chrome(r, out.c_str());
  // The summary walks event trees, unions intervals and joins GPU work to
  // its launches: every table, both layouts, as text and as JSON.
  pk_summary_options options;
  options.struct_size = sizeof options;
  pk_summary_options_init(&options);
  for (const int32_t thread_sep : {0, 1}) {
    options.thread_sep = thread_sep;
    char* text = nullptr;
    if (pk_result_summary_text(r, &options, &text, nullptr) == PK_OK) pk_string_free(text);
    if (pk_result_summary_json(r, &options, &text, nullptr) == PK_OK) pk_string_free(text);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: trace_fuzz WORK_DIR ITERATIONS [SEED]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long iterations = std::atol(argv[2]);
  std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20261121);

  const std::string sample_path = dir + "/fuzz_seed_sample.pktrace";
  profkit::save_result(*profkit_test::make_sample_result(), sample_path);
  std::vector<std::string> seeds = {recorded_trace(dir), read_all(sample_path)};
  std::vector<std::vector<ByteRange>> seed_ranges;
  for (const std::string& seed : seeds) seed_ranges.push_back(record_ranges(seed));
  // The same two results as profkit's Chrome JSON (pk_result_load reads both).
  for (size_t k = 0, n = seeds.size(); k < n; ++k) {
    const std::string pktrace = dir + "/fuzz_seed_" + std::to_string(k) + ".pktrace";
    const std::string json = dir + "/fuzz_seed_" + std::to_string(k) + ".trace.json";
    write_all(pktrace, seeds[k]);
    pk_result* r = nullptr;
    if (pk_result_load(pktrace.c_str(), &r) != PK_OK || pk_result_export_chrome(r, json.c_str()) != PK_OK) {
      std::fprintf(stderr, "cannot make the JSON seed %zu: %s\n", k, pk_last_error());
      return 1;
    }
    pk_result_release(r);
    seeds.push_back(read_all(json));
    seed_ranges.emplace_back();
  }
  const size_t first_json_seed = seeds.size() / 2;
  long loaded = 0;
  long refused = 0;
  for (long i = 0; i < iterations; ++i) {
    // Alternately anywhere in the file (mostly refused by the verifier) and
    // inside the record arrays (mostly loaded: the checks and every consumer
    // meet odd values).
    const size_t s = static_cast<size_t>(i / 2) % seeds.size();
    const bool json = s >= first_json_seed;
    const std::string mutant_path = dir + (json ? "/fuzz_mutant.trace.json" : "/fuzz_mutant.pktrace");
    if (i % 2 == 0) {
      const std::string m = mutate(seeds[s], rng);
      write_all(mutant_path, !json && i % 4 == 0 ? sealed(m) : m);
    } else if (json) {
      write_all(mutant_path, mutate_json_numbers(seeds[s], rng));
    } else {
      // Sealed but one in eight: the checks behind the checksum see odd values.
      const std::string m = mutate_records(seeds[s], seed_ranges[s], rng);
      write_all(mutant_path, i % 16 == 1 ? m : sealed(m));
    }
    pk_result* r = nullptr;
    const pk_status status = pk_result_load(mutant_path.c_str(), &r);
    if (status == PK_OK) {
      walk(r, dir);
      pk_result_release(r);
      ++loaded;
    } else {
      if (r != nullptr || pk_last_error()[0] == '\0') {
        std::fprintf(stderr, "iteration %ld: failed load left a result or no message\n", i);
        return 1;
      }
      ++refused;
    }
  }
  std::printf("trace_fuzz: %ld mutants, %ld loaded and walked, %ld refused with a message\n", iterations, loaded,
              refused);
  return 0;
}
