// The summary as JSON, for front ends that want the rows as data (Python's
// summary_data, a C++ framework through pk_result_summary_json):
//
//   {"format": "profkit-summary", "version": 1, "time_unit": "ms",
//    "total_time": 12.5, "total_time_source": "ProfileStep",
//    "tables": [{"view": "OverView", "title": "Overview Summary",
//                "columns": ["Event Type", "Calls", ...],
//                "kinds": ["label", "count", "time", "percent", "bytes", "id"],
//                "nested": true, "levels": [0, 1, ...],
//                "rows": [["ProfileStep", 8, 4945.15, 100.0, null, null], ...],
//                "notes": ["..."], "empty_reason": ""}]}
//
// Times are in time_unit, ratios in percent, counts, ids and bytes are
// integers, a missing value is null. Names are escaped for any input bytes.
//
// Thread-safety: pure function.
#pragma once

#include <string>

#include "summary/summary.h"

namespace profkit {

std::string render_summary_json(const Summary& summary);

}  // namespace profkit
