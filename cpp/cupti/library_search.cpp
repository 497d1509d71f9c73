#include "cupti/library_search.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>

namespace profkit::cupti {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

bool looks_like_file(const std::string& path) { return path.find(".so") != std::string::npos; }

// Where this library itself was loaded from.
std::string own_directory() {
  Dl_info info{};
  static const int anchor = 0;
  if (dladdr(&anchor, &info) == 0 || info.dli_fname == nullptr) return std::string();
  return parent_dir(info.dli_fname);
}

std::string dl_error() {
  const char* e = dlerror();
  return e == nullptr ? std::string("unknown error") : std::string(e);
}

}  // namespace

SearchEnvironment SearchEnvironment::from_process() {
  SearchEnvironment env;
  env.profkit_cupti_path = env_or_empty("PROFKIT_CUPTI_PATH");
  env.cuda_home = env_or_empty("CUDA_HOME");
  env.cuda_path = env_or_empty("CUDA_PATH");
  env.package_dir = own_directory();
  return env;
}

std::vector<LibraryCandidate> cupti_candidates(const SearchEnvironment& env, int cuda_major) {
  const std::string soname = "libcupti.so." + std::to_string(cuda_major);
  std::vector<LibraryCandidate> out;
  auto add = [&](const std::string& path, const std::string& origin) {
    if (path.empty()) return;
    for (const LibraryCandidate& c : out) {
      if (c.path == path) return;
    }
    out.push_back({path, origin});
  };
  auto add_dir = [&](const std::string& dir, const std::string& origin) {
    if (dir.empty()) return;
    add(dir + "/" + soname, origin);
    add(dir + "/libcupti.so", origin);
  };

  if (!env.profkit_cupti_path.empty()) {
    if (looks_like_file(env.profkit_cupti_path)) {
      add(env.profkit_cupti_path, "PROFKIT_CUPTI_PATH");
    } else {
      add_dir(env.profkit_cupti_path, "PROFKIT_CUPTI_PATH");
    }
  }
  if (!env.package_dir.empty()) {
    // <site-packages>/profkit/libprofkit.so -> <site-packages>/nvidia/...
    const std::string site = parent_dir(env.package_dir);
    if (!site.empty()) {
      const std::string cu = "cu" + std::to_string(cuda_major);
      add_dir(site + "/nvidia/" + cu + "/lib", "pip wheel nvidia-" + cu);
      add_dir(site + "/nvidia/cuda_cupti/lib", "pip wheel nvidia-cuda-cupti");
    }
  }
  const std::pair<std::string, std::string> roots[] = {
      {env.cuda_home, "CUDA_HOME"}, {env.cuda_path, "CUDA_PATH"}, {"/usr/local/cuda", "/usr/local/cuda"}};
  for (const auto& [root, origin] : roots) {
    if (root.empty()) continue;
    add_dir(root + "/lib64", origin);
    add_dir(root + "/lib", origin);
    add_dir(root + "/extras/CUPTI/lib64", origin);
  }
  add(soname, "system loader");
  add("libcupti.so", "system loader");
  return out;
}

std::string cupti_not_found_message(const std::vector<LibraryCandidate>& candidates, int cuda_major,
                                    const std::string& first_failure) {
  std::string origins;
  for (const LibraryCandidate& c : candidates) {
    if (origins.find(c.origin) == std::string::npos) origins += (origins.empty() ? "" : ", ") + c.origin;
  }
  const std::string major = std::to_string(cuda_major);
  std::string message = "no libcupti found (libcupti.so." + major + "; searched " + origins +
                        "): install the CUPTI of CUDA " + major +
                        " (pip install nvidia-cuda-cupti, or the CUDA toolkit) or set PROFKIT_CUPTI_PATH";
  if (!first_failure.empty()) message += " (a candidate failed to load: " + first_failure + ")";
  return message;
}

std::string library_path(void* handle) {
  if (handle == nullptr) return std::string();
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return std::string();
  return map->l_name;
}

OpenedLibrary open_cupti(const SearchEnvironment& env, int cuda_major, std::string* error) {
  OpenedLibrary lib;
  // Already in the process (loaded by PyTorch, another profiler, the app)?
  // Then that copy is the one to use; a second copy would conflict.
  for (int major : {cuda_major, 12, 13, 14}) {
    const std::string soname = "libcupti.so." + std::to_string(major);
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) continue;
    if (major != cuda_major) {
      if (error != nullptr) {
        *error = soname + " is already loaded in this process (" + library_path(h) +
                 "), but this profkit was built for CUDA " + std::to_string(cuda_major) + " (libcupti.so." +
                 std::to_string(cuda_major) +
                 "); a second CUPTI in one process conflicts. Use a profkit built for CUDA " + std::to_string(major);
      }
      return lib;
    }
    lib.handle = h;
    lib.path = library_path(h);
    lib.origin = "already loaded";
    return lib;
  }

  const std::vector<LibraryCandidate> candidates = cupti_candidates(env, cuda_major);
  std::string first_failure;
  for (const LibraryCandidate& c : candidates) {
    void* h = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      lib.handle = h;
      lib.path = library_path(h);
      lib.origin = c.origin;
      return lib;
    }
    // A file that exists but fails to load says more than "not found".
    const std::string why = dl_error();
    if (first_failure.empty() && why.find("No such file") == std::string::npos &&
        why.find("cannot open shared object file") == std::string::npos) {
      first_failure = why;
    }
  }
  if (error != nullptr) *error = cupti_not_found_message(candidates, cuda_major, first_failure);
  return lib;
}

OpenedLibrary open_cuda_driver(std::string* error) {
  OpenedLibrary lib;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    if (error != nullptr) {
      *error = "no CUDA driver (libcuda.so.1 could not be loaded: " + dl_error() +
               "); GPU tracing needs an NVIDIA GPU with its driver installed";
    }
    return lib;
  }
  lib.handle = h;
  lib.path = library_path(h);
  lib.origin = "system loader";
  return lib;
}

}  // namespace profkit::cupti
