// Short labels for Python frame names (the Operator table's Source Location).
#include "summary/frame_labels.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using profkit::short_frame_labels;
using Labels = std::vector<std::string>;

TEST(FrameLabels, AFileOfItsOwnNameIsItsBaseName) {
  EXPECT_EQ(short_frame_labels({"/home/u/train.py(12): Model.forward", "/u.py(1): f", "rel/x.py(3): <module>"}),
            (Labels{"train.py(12): Model.forward", "u.py(1): f", "x.py(3): <module>"}));
}

TEST(FrameLabels, NamesThatAreNoFramesAreTheirOwnLabels) {
  EXPECT_EQ(short_frame_labels({"<built-in function len>", "aten::add", "(1): f", ""}),
            (Labels{"<built-in function len>", "aten::add", "(1): f", ""}));
}

TEST(FrameLabels, FilesOfOneBaseNameKeepTheDirectoriesThatTellThemApart) {
  EXPECT_EQ(short_frame_labels({"/x/a/u.py(1): f", "/y/a/u.py(1): f", "/x/b/u.py(9): g", "/x/a/u.py(4): h"}),
            (Labels{"x/a/u.py(1): f", "y/a/u.py(1): f", "b/u.py(9): g", "x/a/u.py(4): h"}));
  // One path the end of another: the shorter is whole, the longer one more.
  EXPECT_EQ(short_frame_labels({"a/u.py(1): f", "/b/a/u.py(1): f"}), (Labels{"a/u.py(1): f", "b/a/u.py(1): f"}));
}

TEST(FrameLabels, TheSameFileTwiceIsOneFile) {
  EXPECT_EQ(short_frame_labels({"/p/q/m.py(1): f", "/p/q/m.py(2): g"}), (Labels{"m.py(1): f", "m.py(2): g"}));
}

}  // namespace
