#include "cupti/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace profkit::cupti {

std::string demangle(const char* name) {
  if (name == nullptr) return std::string();
  // Only Itanium-mangled symbols start with "_Z"; anything else would be read
  // as a type name ("i" -> "int"), which is wrong for a kernel.
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  if (status != 0 || out == nullptr) return name;
  return out.get();
}

}  // namespace profkit::cupti
