// Where profkit looks for libcupti, in the order CUPTI.md gives.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cupti/library_search.h"

namespace {

using profkit::cupti::cupti_candidates;
using profkit::cupti::SearchEnvironment;

std::vector<std::string> paths(const SearchEnvironment& env, int major) {
  std::vector<std::string> out;
  for (const auto& c : cupti_candidates(env, major)) out.push_back(c.path);
  return out;
}

size_t position(const std::vector<std::string>& list, const std::string& path) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == path) return i;
  }
  ADD_FAILURE() << path << " is not a candidate";
  return SIZE_MAX;
}

TEST(CuptiSearch, OrderIsOverrideWheelCudaHomeUsrLocalThenLoader) {
  SearchEnvironment env;
  env.profkit_cupti_path = "/opt/my/cupti";
  env.cuda_home = "/opt/cuda-13.0";
  env.package_dir = "/venv/lib/python3.11/site-packages/profkit";
  const auto list = paths(env, 13);
  const size_t override_dir = position(list, "/opt/my/cupti/libcupti.so.13");
  const size_t wheel13 = position(list, "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcupti.so.13");
  const size_t wheel = position(list, "/venv/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13");
  const size_t home = position(list, "/opt/cuda-13.0/lib64/libcupti.so.13");
  const size_t extras = position(list, "/opt/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13");
  const size_t usr_local = position(list, "/usr/local/cuda/lib64/libcupti.so.13");
  const size_t loader = position(list, "libcupti.so.13");
  EXPECT_LT(override_dir, wheel13);
  EXPECT_LT(wheel13, wheel);
  EXPECT_LT(wheel, home);
  EXPECT_LT(home, extras);
  EXPECT_LT(extras, usr_local);
  EXPECT_LT(usr_local, loader);
  EXPECT_EQ(list.back(), "libcupti.so");  // the unversioned name last
}

TEST(CuptiSearch, TheBuildsSonameComesBeforeTheUnversionedOneInEachPlace) {
  SearchEnvironment env;
  env.cuda_home = "/c";
  const auto list = paths(env, 12);
  EXPECT_LT(position(list, "/c/lib64/libcupti.so.12"), position(list, "/c/lib64/libcupti.so"));
  EXPECT_EQ(position(list, "libcupti.so.12") + 1, position(list, "libcupti.so"));
}

TEST(CuptiSearch, AnOverrideFileIsTriedAsIsAndNothingRepeats) {
  SearchEnvironment env;
  env.profkit_cupti_path = "/x/libcupti.so.13.0.85";
  env.cuda_home = "/usr/local/cuda";  // the same as the built-in place
  const auto list = paths(env, 13);
  EXPECT_EQ(list.front(), "/x/libcupti.so.13.0.85");
  for (size_t i = 0; i < list.size(); ++i) {
    for (size_t j = i + 1; j < list.size(); ++j) EXPECT_NE(list[i], list[j]);
  }
}

TEST(CuptiSearch, EveryCandidateSaysWhereItCameFrom) {
  SearchEnvironment env;
  env.cuda_path = "/cp";
  for (const auto& c : cupti_candidates(env, 13)) EXPECT_FALSE(c.origin.empty()) << c.path;
  EXPECT_EQ(cupti_candidates(env, 13).front().origin, "CUDA_PATH");
}

TEST(CuptiSearch, NotFoundNamesThePlacesSearchedAndWhatToDo) {
  SearchEnvironment env;
  env.profkit_cupti_path = "/x";
  env.cuda_home = "/h";
  const std::string message = profkit::cupti::cupti_not_found_message(cupti_candidates(env, 13), 13, "");
  EXPECT_NE(message.find("libcupti.so.13"), std::string::npos) << message;
  EXPECT_NE(message.find("searched PROFKIT_CUPTI_PATH, CUDA_HOME, /usr/local/cuda, system loader"), std::string::npos)
      << message;
  EXPECT_NE(message.find("pip install nvidia-cuda-cupti"), std::string::npos) << message;
  const std::string broken =
      profkit::cupti::cupti_not_found_message(cupti_candidates(env, 13), 13, "wrong ELF class: ELFCLASS32");
  EXPECT_NE(broken.find("failed to load: wrong ELF class"), std::string::npos) << broken;
}

}  // namespace
