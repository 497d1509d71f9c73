#include "summary/frame_labels.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>

namespace profkit {

namespace {

// A frame name split where its file ends: "/a/b.py" and "(12): f".
struct FrameParts {
  std::string_view file;  // empty: not a Python frame's name
  std::string_view rest;
};

FrameParts split_frame(std::string_view frame) noexcept {
  const size_t line = frame.find("): ");
  if (line == std::string_view::npos) return {};
  const size_t paren = frame.rfind('(', line);
  if (paren == std::string_view::npos || paren == 0) return {};
  return {frame.substr(0, paren), frame.substr(paren)};
}

// The last `components` path components of `file` ("b.py" for 1, "a/b.py"
// for 2); the whole path when it has no more.
std::string_view path_suffix(std::string_view file, size_t components) noexcept {
  size_t start = file.size();
  for (size_t i = 0; i < components; ++i) {
    const size_t slash = start == 0 ? std::string_view::npos : file.rfind('/', start - 1);
    if (slash == std::string_view::npos) return file;
    start = slash;
  }
  return file.substr(start + 1);
}

}  // namespace

std::vector<std::string> short_frame_labels(const std::vector<std::string_view>& frames) {
  std::vector<FrameParts> parts;
  parts.reserve(frames.size());
  // The distinct files of each base name.
  std::unordered_map<std::string_view, std::vector<std::string_view>> files_by_base;
  for (std::string_view frame : frames) {
    parts.push_back(split_frame(frame));
    const std::string_view file = parts.back().file;
    if (file.empty()) continue;
    std::vector<std::string_view>& files = files_by_base[path_suffix(file, 1)];
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  // For each file, the fewest trailing components no other file of its base
  // name shares.
  std::unordered_map<std::string_view, std::string_view> label_of_file;
  for (const auto& [base, files] : files_by_base) {
    for (std::string_view file : files) {
      std::string_view label = base;
      for (size_t components = 2; label != file; ++components) {
        const bool shared = std::any_of(files.begin(), files.end(), [&](std::string_view other) {
          return other != file && path_suffix(other, components - 1) == label;
        });
        if (!shared) break;
        label = path_suffix(file, components);
      }
      label_of_file[file] = label;
    }
  }
  std::vector<std::string> labels;
  labels.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    if (parts[i].file.empty()) {
      labels.emplace_back(frames[i]);
    } else {
      labels.push_back(std::string(label_of_file[parts[i].file]) + std::string(parts[i].rest));
    }
  }
  return labels;
}

}  // namespace profkit
