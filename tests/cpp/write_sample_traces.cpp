// Writes the sample Result (every record kind, GPU lanes, flows, hostile
// names) as Chrome traces, plain and with duration labels, for the format
// check in tests/tools/check_chrome_trace.py (run by ctest after this).
//
// Usage: write_sample_traces OUTPUT_DIR
#include <cstdio>
#include <string>

#include "export/chrome_trace.h"
#include "sample_result.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_traces OUTPUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  auto result = profkit_test::make_sample_result();
  profkit::export_chrome_trace(*result, dir + "/sample.trace.json", profkit::ChromeOptions{});
  profkit::ChromeOptions labelled;
  labelled.label_durations = true;
  profkit::export_chrome_trace(*result, dir + "/sample_labelled.trace.json", labelled);
  return 0;
}
