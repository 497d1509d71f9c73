// Short labels for Python frame names, for the Operator table's Source
// Location column.
//
// A frame is named "/path/to/train.py(12): Model.forward". Its label leaves
// the directories out ("train.py(12): Model.forward") so that a few frames
// fit a cell, except as many as it takes to tell apart different files of
// the same base name among the frames labelled together ("a/utils.py(2): f"
// and "b/utils.py(2): f"). Other names are their own labels.
//
// Thread-safety: a pure function. Ownership: the labels are copies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace profkit {

// One label per frame, in order.
std::vector<std::string> short_frame_labels(const std::vector<std::string_view>& frames);

}  // namespace profkit
