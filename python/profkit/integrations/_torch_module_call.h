// The Forward wrapper of profkit's native PyTorch hook: a callable that
// stands in for torch.nn.Module.__call__ while a window records and turns
// each top-level module call on a thread into a profkit Forward event
// ("<ModuleClass>.forward"), passing nested calls straight through.
//
// Thread-safety: called with the GIL held; the nesting depth is per thread.
// Ownership: a wrapper holds a strong reference to the callable it wraps.
#pragma once

#include <Python.h>

namespace profkit_torch {

// Adds the ModuleCall type to `module` (as "ModuleCall"); false with a
// Python exception set on failure.
bool add_module_call_type(PyObject* module);

}  // namespace profkit_torch
