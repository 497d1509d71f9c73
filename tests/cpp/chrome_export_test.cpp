// Chrome-trace export: escaping, lanes, categories, flows and metadata. The
// JSON itself is parsed by the Python tests (tests/python/test_export.py).
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "export/chrome_trace.h"
#include "export/json_escape.h"
#include "sample_result.h"
#include "test_support.h"

namespace profkit {
namespace {

using profkit_test::read_file;
using profkit_test::TempDir;

std::string escaped(const std::string& s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

TEST(JsonEscape, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(escaped("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(escaped("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
  EXPECT_EQ(escaped(std::string("\x01\x1f\x7f", 3)), "\\u0001\\u001f\\u007f");
  EXPECT_EQ(escaped(std::string("nul\0in", 6)), "nul\\u0000in");
}

TEST(JsonEscape, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(escaped("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(escaped("\xFF"), r);
  EXPECT_EQ(escaped("\xC0\xAF"), r + r);                  // overlong
  EXPECT_EQ(escaped("\xED\xA0\x80"), r + r + r);          // surrogate
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(escaped("ab\xE2\x82"), "ab" + r + r);         // cut short at the end
  EXPECT_EQ(json_quoted("x"), "\"x\"");
}

TEST(ChromeExport, LaysOutLanesCategoriesFlowsAndMetadata) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string path = dir.file("t.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  auto has = [&](const std::string& s) { return json.find(s) != std::string::npos; };
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_TRUE(has("\"name\":\"Process 4242 (CPU) rank 1\""));
  EXPECT_TRUE(has("\"name\":\"MainThread (Python) [11]\""));
  EXPECT_TRUE(has("\"name\":\"MainThread (C++) [11]\""));
  EXPECT_TRUE(has("\"name\":\"GPU 0 (NVIDIA H200)\""));
  EXPECT_TRUE(has("\"name\":\"Stream 7\""));
  // ProfileStep on the Python lane, the operator on the C++ lane.
  EXPECT_TRUE(
      has("\"cat\":\"ProfileStep\",\"name\":\"ProfileStep#3\",\"ts\":0.000,\"dur\":79.000,\"pid\":4242,\"tid\":11"));
  EXPECT_TRUE(
      has("\"cat\":\"Operator\",\"name\":\"aten::matmul\",\"ts\":2.000,\"dur\":5.000,\"pid\":4242,\"tid\":1000000011,"
          "\"args\":{\"input_shapes\":\"[[2, 3]]\"}"));
  EXPECT_TRUE(has("\"cat\":\"Dataloader\""));
  EXPECT_TRUE(has("\"ph\":\"i\",\"cat\":\"UserDefined\""));
  EXPECT_TRUE(has("\"cat\":\"Kernel\",\"name\":\"void gemm<float, 128>(float*, float const*)\""));
  EXPECT_TRUE(has("\"grid\":[4,2,1],\"block\":[128,1,1],\"registers per thread\":32,\"shared memory\":3072"));
  EXPECT_TRUE(has("\"kind\":\"HtoD\""));
  EXPECT_TRUE(has("\"bandwidth GB/s\":4.096"));
  EXPECT_TRUE(has("\"ph\":\"s\",\"cat\":\"ac2g\""));
  EXPECT_TRUE(has("\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\""));
  EXPECT_TRUE(has("\"pid\":10004242"));  // GPU 0 of process 4242
  EXPECT_TRUE(has("\"profkit\":{\"profkit_version\":\"9.9.9\""));
  EXPECT_TRUE(has("\"dropped_events\":5"));
  EXPECT_TRUE(has("\"unattached_device_records\":1"));
  EXPECT_TRUE(has("events were dropped"));  // visible in the timeline itself
  EXPECT_TRUE(has("\"metadata\":{\"model\":\"tiny \\\"cnn\\\"\"}"));
  // The hostile name comes out escaped, with invalid bytes replaced.
  EXPECT_TRUE(has("q\\\"uote\\\\back\\nnew\\ttab\\u0001\\u007f "));
  EXPECT_FALSE(has("\xFF"));
  EXPECT_FALSE(has(",\n]"));  // no trailing comma before the closing bracket
}

TEST(ChromeExport, OptionsLabelDurationsAndDropFlows) {
  TempDir dir;
  auto r = profkit_test::make_sample_result();
  const std::string path = dir.file("labels.trace.json");
  ChromeOptions o;
  o.label_durations = true;
  o.include_flows = false;
  export_chrome_trace(*r, path, o);
  const std::string json = read_file(path);
  EXPECT_NE(json.find("\"name\":\"aten::matmul[5.00 us]\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"ProfileStep#3[79.00 us]\""), std::string::npos);
  EXPECT_EQ(json.find("\"ph\":\"s\""), std::string::npos);
}

TEST(ChromeExport, EmptyResultIsValidAndErrorsNameThePath) {
  TempDir dir;
  auto r = ResultBuilder({}).finish();
  const std::string path = dir.file("empty.trace.json");
  export_chrome_trace(*r, path, ChromeOptions{});
  const std::string json = read_file(path);
  EXPECT_NE(json.find("\"traceEvents\":["), std::string::npos);
  try {
    export_chrome_trace(*r, dir.file("missing/x.json"), ChromeOptions{});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/x.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace profkit
