"""The PyTorch hooks on torch's Python callables: Forward, Backward, Optimization and Dataloader events.

What each records, and where it hooks in:

- ``Forward`` -- each top-level ``nn.Module`` call on a thread (the model,
  the loss module), named ``"<ModuleClass>.forward"``. Submodule calls are
  inside it and are not events of their own, nor are module calls during a
  backward pass (activation checkpointing's recomputed forward is Backward). ``nn.Module.__call__`` is
  wrapped only while a Profiler records (``window()``). torch's global
  module hooks would cost several microseconds on every module call and
  turn off its fast path, even outside windows.
- ``Backward`` -- each ``torch.autograd.backward`` call, which is what
  ``loss.backward()`` runs, named ``"backward"``.
- ``Optimization`` -- each ``optimizer.step()``, named
  ``"<OptimizerClass>.step"``, through torch's global optimizer step hooks
  (with the native hook, from torch's own "Optimizer.step#SGD.step" range
  instead, which costs no Python call).
- ``Dataloader`` -- each batch fetched from a ``torch.utils.data.DataLoader``
  iterator, named ``"DataLoader.__next__"``, as a data-loading range of the
  engine (``pk_data_loading_begin``/``end``): it also adds the fetch time to
  the reader cost of the running Profilers (``step_info()``, the Perf
  Summary), inside windows or not.

With the native hook every wrapper is its CallRange (in C: tens of
nanoseconds per call); the fallback uses Python wrappers (half a microsecond
to a few per call). Backward and Dataloader stay installed while the
integration is enabled: each runs once per step or batch. A range that
begins and ends in different windows is left out rather than mismatched.
``uninstall()`` restores everything it replaced.

Thread-safety: install/uninstall/window run with the GIL held from the
thread that drives the integration; the hooks themselves run on any thread
and keep their per-thread state in a threading.local.
"""

import functools
import importlib
import inspect
import threading
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional

from .._C import RecordEvent
from .._enums import TracerEventType
from ..dataloader import DataloaderRange

__all__ = ["PythonHooks", "put_back"]

_FORWARD = int(TracerEventType.Forward)
_BACKWARD = int(TracerEventType.Backward)
_OPTIMIZATION = int(TracerEventType.Optimization)

DATALOADER_EVENT_NAME = "DataLoader.__next__"
BACKWARD_EVENT_NAME = "backward"


class _PerThread(threading.local):
    forward_depth = 0

    def __init__(self) -> None:
        # The optimizer steps in progress on this thread (a step that raised
        # leaves its range open; the next steps push and pop their own).
        self.optimizer_steps: List[RecordEvent] = []


class _Names:
    """``"<Class><suffix>"``, computed once per class."""

    def __init__(self, suffix: str) -> None:
        self._suffix = suffix
        self._names: Dict[type, str] = {}

    def __call__(self, cls: type) -> str:
        name = self._names.get(cls)
        if name is None:
            name = self._names[cls] = cls.__name__ + self._suffix
        return name


class PythonHooks:
    """Installs and removes the Python-level hooks of one torch module."""

    def __init__(self, torch: ModuleType, native: Optional[ModuleType] = None) -> None:
        """``native``: the loaded native hook, whose CallRange wraps torch's
        callables in C and whose RecordFunction callback records Optimization
        from torch's "Optimizer.step#..." ranges; None: Python wrappers and
        optimizer hooks."""
        self._torch = torch
        self._native = native
        self._local = _PerThread()
        self._forward_names = _Names(".forward")
        self._step_names = _Names(".step")
        self._installed = False
        self._forward_on = False
        self._restore: List[Callable[[], None]] = []
        self._module_call: Any = None  # ours, while installed on nn.Module
        self._module_call_original: Any = None

    @property
    def installed(self) -> bool:
        return self._installed

    @property
    def forward_on(self) -> bool:
        """Whether nn.Module calls are being wrapped now (only inside windows)."""
        return self._forward_on

    # ---- lifecycle --------------------------------------------------------------
    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        try:
            self._install_backward()
            if self._native is None:
                self._install_optimizer()
            self._install_dataloader()
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        self.window(False)
        while self._restore:
            self._restore.pop()()
        self._installed = False

    def window(self, recording: bool) -> None:
        """Wraps nn.Module calls while recording, unwraps them otherwise."""
        if recording and self._installed:
            self._wrap_module_call()
        else:
            self._unwrap_module_call()

    # ---- Forward ----------------------------------------------------------------
    def _wrap_module_call(self) -> None:
        if self._forward_on:
            return
        module_class = self._torch.nn.Module
        original = inspect.getattr_static(module_class, "__call__")
        if self._native is not None:
            wrapper = self._native.CallRange(original, self._native.FORWARD)
        else:
            wrapper = self._python_module_call(original)
        module_class.__call__ = wrapper
        self._module_call = wrapper
        self._module_call_original = original
        self._forward_on = True

    def _python_module_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        local = self._local
        forward_name = self._forward_names

        is_compiling = self._torch.compiler.is_compiling
        graph_task_id = self._torch._C._current_graph_task_id

        @functools.wraps(original)
        def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:
            # A submodule is inside the top-level Forward. While torch.compile
            # traces a module call it sees the plain call (a RecordEvent in
            # the trace would be a graph break). A module called during a
            # backward pass (checkpointing's recomputed forward) is part of
            # Backward, not a Forward of its own.
            if local.forward_depth or is_compiling() or graph_task_id() != -1:
                return original(module, *args, **kwargs)
            local.forward_depth = 1
            try:
                with RecordEvent(forward_name(type(module)), _FORWARD):
                    return original(module, *args, **kwargs)
            finally:
                local.forward_depth = 0

        return __call__

    def _unwrap_module_call(self) -> None:
        if not self._forward_on:
            return
        module_class = self._torch.nn.Module
        if module_class.__dict__.get("__call__") is self._module_call:
            module_class.__call__ = self._module_call_original
        # else: someone wrapped it after us; ours stays beneath theirs and keeps
        # working (it records only inside windows).
        self._module_call = None
        self._module_call_original = None
        self._forward_on = False

    # ---- Backward -------------------------------------------------------------------
    def _install_backward(self) -> None:
        autograd = self._torch.autograd
        original = autograd.backward

        # Tensor.backward() calls torch.autograd.backward (looked up at call
        # time), so this one wrapper sees both spellings, once each.
        if self._native is not None:
            backward = self._native.CallRange(original, self._native.BACKWARD, BACKWARD_EVENT_NAME)
        else:

            @functools.wraps(original)
            def backward(*args: Any, **kwargs: Any) -> Any:
                with RecordEvent(BACKWARD_EVENT_NAME, _BACKWARD):
                    return original(*args, **kwargs)

        autograd.backward = backward
        self._restore.append(lambda: put_back(autograd, "backward", backward, original))

    # ---- Optimization -----------------------------------------------------------------
    def _install_optimizer(self) -> None:
        optim = importlib.import_module("torch.optim.optimizer")
        local = self._local
        step_name = self._step_names

        def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            event = RecordEvent(step_name(type(optimizer)), _OPTIMIZATION)
            event.begin()
            local.optimizer_steps.append(event)

        def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            steps = local.optimizer_steps
            if steps:
                steps.pop().end()

        pre = optim.register_optimizer_step_pre_hook(before_step)
        post = optim.register_optimizer_step_post_hook(after_step)
        self._restore.append(pre.remove)
        self._restore.append(post.remove)

    # ---- Dataloader -------------------------------------------------------------------
    def _install_dataloader(self) -> None:
        iterator_class = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
        original = inspect.getattr_static(iterator_class, "__next__")

        # The iterators of every DataLoader (single- and multi-process) inherit
        # __next__ from this class; the loop waits in it for each batch.
        if self._native is not None:
            __next__ = self._native.CallRange(original, self._native.DATA_LOADING, DATALOADER_EVENT_NAME)
        else:

            @functools.wraps(original)
            def __next__(iterator: Any) -> Any:
                with DataloaderRange(DATALOADER_EVENT_NAME):
                    return original(iterator)

        iterator_class.__next__ = __next__
        self._restore.append(lambda: put_back(iterator_class, "__next__", __next__, original))


def put_back(owner: Any, name: str, ours: Any, original: Any) -> None:
    """Restores ``owner.name`` unless something else replaced ours since.

    Looked up statically: a native CallRange on a class reads as the callable
    it wraps (see _torch_call_ranges.cpp)."""
    if inspect.getattr_static(owner, name, None) is ours:
        setattr(owner, name, original)
