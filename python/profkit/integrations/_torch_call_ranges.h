// The call wrappers of profkit's native PyTorch hook: CallRange stands in for
// a Python callable of torch's and turns each call into a profkit range, in C:
//
//   FORWARD       torch.nn.Module.__call__ (only while a window records): each
//                 top-level module call on a thread is a Forward event
//                 "<ModuleClass>.forward"; nested calls pass straight through,
//                 and so do calls during a backward pass or inside any
//                 data-loading range on the same thread (pk_data_loading_depth:
//                 this DATA_LOADING, profkit.dataloader_range(), a
//                 framework's): they belong to those events. Its `home`
//                 attribute (set while a window records) makes it put itself
//                 back on that class when torch's FX tracing has restored
//                 torch's own __call__ over it.
//   BACKWARD      torch.autograd.backward: each call is a Backward event,
//                 but for one made during a backward pass (a hook's, a
//                 custom Function's, reentrant checkpointing's): part of it,
//                 and one torch.compile runs while compiling is none.
//   GRAD          torch.autograd._engine_run_backward: each call of
//                 torch.autograd.grad's (accumulate_grad=False) is a
//                 Backward event, as BACKWARD's; the others pass through.
//   DATA_LOADING  _BaseDataLoaderIter.__next__: each call is a data-loading
//                 range (pk_data_loading_begin/end): a Dataloader event while
//                 recording, and reader time for benchmark mode always.
//
// Thread-safety: called with the GIL held; the Forward nesting depth (and
// the engine's data-loading depth) are per thread. Ownership: a wrapper holds a strong
// reference to the callable it wraps; the module holds strong references
// to the range with a `home` and to that class until `home` is set to None.
#pragma once

#include <Python.h>

namespace profkit_torch {

// Adds the CallRange type and its kind constants (FORWARD, BACKWARD, GRAD,
// DATA_LOADING) to `module`; false with a Python exception set on failure.
bool add_call_range_type(PyObject* module);

}  // namespace profkit_torch
