// Where profkit looks for libcupti and libcuda, and opening them with dlopen.
// profkit never links either library: the package must import and profile
// the CPU on machines without CUDA.
//
// libcupti search order (CUPTI.md): a libcupti already loaded in the process
// (a second copy conflicts with the first), $PROFKIT_CUPTI_PATH (a file or a
// directory), the nvidia-cuda-cupti / nvidia-cu13 pip wheels next to the
// installed profkit package, $CUDA_HOME and $CUDA_PATH (lib64, lib,
// extras/CUPTI/lib64), /usr/local/cuda, then the system loader. The SONAME
// of the CUDA major profkit was built against comes first in each place.
//
// Thread-safety: the functions are thread-safe (dlopen is). Ownership:
// libraries are never closed (unloading CUPTI or the driver is unsafe).
#pragma once

#include <string>
#include <vector>

namespace profkit::cupti {

// The process facts the search depends on; from_process() reads them, tests
// build their own.
struct SearchEnvironment {
  std::string profkit_cupti_path;  // $PROFKIT_CUPTI_PATH
  std::string cuda_home;           // $CUDA_HOME
  std::string cuda_path;           // $CUDA_PATH
  std::string package_dir;         // directory holding libprofkit.so

  static SearchEnvironment from_process();
};

struct LibraryCandidate {
  std::string path;    // absolute path, or a bare SONAME for the system loader
  std::string origin;  // where it came from, for messages ("CUDA_HOME", ...)
};

// Every place to try, in order, without duplicates, for CUPTI of `cuda_major`.
std::vector<LibraryCandidate> cupti_candidates(const SearchEnvironment& env, int cuda_major);

// What to tell the user when no candidate loaded: the places searched and
// what to install or set. `first_failure` is a loader error worth quoting (a
// file that exists but does not load), or "".
std::string cupti_not_found_message(const std::vector<LibraryCandidate>& candidates, int cuda_major,
                                    const std::string& first_failure);

struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;    // the file actually loaded
  std::string origin;  // which candidate found it
  explicit operator bool() const noexcept { return handle != nullptr; }
};

// libcupti of `cuda_major`. On failure the handle is null and `error` says
// what was tried and what to do. A libcupti of another major already loaded
// in the process is an error too (two CUPTIs in one process conflict).
OpenedLibrary open_cupti(const SearchEnvironment& env, int cuda_major, std::string* error);

// The CUDA driver, libcuda.so.1. On failure `error` names the reason.
OpenedLibrary open_cuda_driver(std::string* error);

// The file a dlopen handle refers to ("" if unknown).
std::string library_path(void* handle);

}  // namespace profkit::cupti
