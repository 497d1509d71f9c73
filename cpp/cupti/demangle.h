// Kernel names as people read them: CUPTI reports the mangled symbol
// ("_Z6vecAddPfS_i"); this turns it into "vecAdd(float*, float*, int)".
// Names that are not mangled C++ (extern "C" kernels, Triton's) pass through.
//
// Thread-safe (abi::__cxa_demangle is reentrant); allocates the result.
#pragma once

#include <string>

namespace profkit::cupti {

// The demangled form of `name`, or `name` itself when it does not demangle.
// nullptr gives "".
std::string demangle(const char* name);

}  // namespace profkit::cupti
