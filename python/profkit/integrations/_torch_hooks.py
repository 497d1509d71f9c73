"""The PyTorch hooks on torch's Python callables: Forward, Backward, Optimization and Dataloader events.

What each records, and where it hooks in:

- ``Forward`` -- each top-level ``nn.Module`` call on a thread (the model,
  the loss module), named ``"<ModuleClass>.forward"``. Submodule calls are
  inside it and are not events of their own, nor are module calls during a
  backward pass (activation checkpointing's recomputed forward is Backward)
  or inside a data-loading range on the thread (a transform module in
  ``Dataset.__getitem__`` while a DataLoader fetches a batch, or inside
  ``profkit.dataloader_range()``, is Dataloader): the Model summary would count
  their time twice. ``nn.Module.__call__`` is
  wrapped only while a Profiler records (``window()``). torch's global
  module hooks would cost several microseconds on every module call and
  turn off its fast path, even outside windows.
- ``Backward`` -- each ``torch.autograd.backward`` call, which is what
  ``loss.backward()`` runs, named ``"backward"``, and each
  ``torch.autograd.grad`` call (gradient penalties, higher-order gradients,
  ``torch.autograd.functional``, ``torch.func.grad``/``vjp``), named
  ``"grad"``. One started during a backward pass (in a backward hook, a
  custom Function's backward, reentrant checkpointing) is part of that pass,
  not an event of its own.
- ``Optimization`` -- each ``optimizer.step()``, named
  ``"<OptimizerClass>.step"`` (with the native hook, from torch's own
  "Optimizer.step#SGD.step" range, which costs no Python call). The
  fallback begins and ends it in torch's global optimizer step hooks, and
  wraps each optimizer class's step so that a step that raises, which skips
  the post hook, is ended (and recorded) as the exception leaves it.
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

from .. import _C
from .._C import RecordEvent
from .._enums import TracerEventType
from .._python_stacks import asked_by_profkit, calls_user_code
from ..dataloader import DataloaderRange

__all__ = ["PythonHooks", "put_back"]

_FORWARD = int(TracerEventType.Forward)
_BACKWARD = int(TracerEventType.Backward)
_OPTIMIZATION = int(TracerEventType.Optimization)

DATALOADER_EVENT_NAME = "DataLoader.__next__"
BACKWARD_EVENT_NAME = "backward"
GRAD_EVENT_NAME = "grad"


class _PerThread(threading.local):
    forward_depth = 0


class _OptimizerSteps(threading.local):
    """The optimizer steps in progress on a thread, as their pre hook began them."""

    wrapped = 0  # calls of our step wrappers in progress on the thread

    def __init__(self) -> None:
        self.open: List[RecordEvent] = []


# One for the process, not one per PythonHooks: a step wrapper may outlive the
# hooks that made it (an LR scheduler keeps the step it found), and it must
# still close what the current hooks opened.
_optimizer_steps = _OptimizerSteps()


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

    # ---- lifecycle --------------------------------------------------------------
    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        try:
            self._install_backward()
            self._install_grad()
            if self._native is not None:
                self._install_forward_repair()
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
            # torch's FX tracing (torch.compile compiling, symbolic_trace)
            # puts back `getattr(nn.Module, "__call__")`, which for the C
            # wrapper reads as torch's own: the wrapper reinstalls itself at
            # its next chance in the window (see _torch_call_ranges.cpp).
            wrapper.home = module_class
        else:
            wrapper = self._python_module_call(original)
        module_class.__call__ = wrapper
        self._module_call = wrapper
        self._module_call_original = original
        self._forward_on = True

    def _python_module_call(self, original: Callable[..., Any]) -> Callable[..., Any]:
        local = self._local
        forward_name = self._forward_names

        is_compiling = asked_by_profkit(self._torch.compiler.is_compiling)
        graph_task_id = self._torch._C._current_graph_task_id
        data_loading_depth = _C.data_loading_depth

        @functools.wraps(original)
        @calls_user_code
        def __call__(module: Any, *args: Any, **kwargs: Any) -> Any:
            # A submodule is inside the top-level Forward. While torch.compile
            # traces a module call it sees the plain call (a RecordEvent in
            # the trace would be a graph break). A module called during a
            # backward pass (checkpointing's recomputed forward) is part of
            # Backward, and one called while a batch is fetched (in any
            # data-loading range on the thread) is part of Dataloader, not a
            # Forward of its own. is_compiling() comes first: a model
            # compiled inside a window keeps this wrapper as the function
            # Dynamo traces (OptimizedModule binds `module.__call__` when
            # made), and Dynamo cannot trace the engine's C function after
            # it (a graph break; an error with fullgraph=True) once a call
            # reaches it outside the wrapper, after the window.
            if is_compiling() or local.forward_depth or data_loading_depth() or graph_task_id() != -1:
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
        if self._native is not None:
            self._module_call.home = None
        if module_class.__dict__.get("__call__") is self._module_call:
            module_class.__call__ = self._module_call_original
        # else: someone wrapped it after us; ours stays beneath theirs and keeps
        # working (it records only inside windows).
        self._module_call = None
        self._module_call_original = None
        self._forward_on = False

    def _install_forward_repair(self) -> None:
        """Puts the native Forward range back on nn.Module as soon as an FX trace ends.

        FX tracing (torch.fx.symbolic_trace; torch.compile's backends, through
        make_fx) saves ``getattr(nn.Module, "__call__")`` -- for the native
        range, torch's own __call__ (see _torch_call_ranges.cpp) -- and sets
        it back when the trace ends. The range puts itself back after the
        next top-level module call, backward or batch fetched, but a trace
        outside all of those (a compiled plain function, symbolic_trace
        called directly) left every module call until then without a
        Forward event. Every FX trace runs through Tracer.trace (subclasses
        call it through super()), once per trace, never per operator.
        """
        fx = getattr(self._torch, "fx", None)
        tracer_class = getattr(fx, "Tracer", None)
        original = inspect.getattr_static(tracer_class, "trace", None) if tracer_class is not None else None
        if not callable(original):  # a torch without FX: nothing puts __call__ back
            return
        reinstall = self._reinstall_module_call

        @functools.wraps(original)
        @calls_user_code
        def trace(*args: Any, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                reinstall()

        tracer_class.trace = trace
        self._restore.append(lambda: put_back(tracer_class, "trace", trace, original))

    def _reinstall_module_call(self) -> None:
        """Ours on nn.Module again where torch's own __call__ was put back over it (someone else's is left)."""
        if self._forward_on:
            module_class = self._torch.nn.Module
            if module_class.__dict__.get("__call__") is self._module_call_original:
                module_class.__call__ = self._module_call

    # ---- Backward -------------------------------------------------------------------
    def _install_backward(self) -> None:
        autograd = self._torch.autograd
        original = autograd.backward

        # Tensor.backward() calls torch.autograd.backward (looked up at call
        # time), so this one wrapper sees both spellings, once each.
        if self._native is not None:
            backward = self._native.CallRange(original, self._native.BACKWARD, BACKWARD_EVENT_NAME)
        else:
            backward = self._python_backward(original, lambda args, kwargs: True, BACKWARD_EVENT_NAME)

        autograd.backward = backward
        self._restore.append(lambda: put_back(autograd, "backward", backward, original))

    def _install_grad(self) -> None:
        """torch.autograd.grad's passes as Backward events.

        Hooked where torch.autograd.grad (and torch.autograd.backward) enter
        the engine, torch.autograd._engine_run_backward: torch.autograd.grad
        itself stays torch's own, which Dynamo recognizes by identity (a
        wrapper in its place would be a graph break where Dynamo traces it).
        Only the calls that say accumulate_grad=False, torch.autograd.grad's,
        are recorded; backward's are inside its own event. The torch module
        keeps the function in both torch.autograd and torch.autograd.graph
        (torch.compiler's non-strict tracing sets both back to the latter's):
        ours goes in both. A torch without it (before 2.3): grad is wrapped.
        """
        autograd = self._torch.autograd
        graph = getattr(autograd, "graph", None)
        original = getattr(autograd, "_engine_run_backward", None)
        if original is None:
            owners, name, original = [autograd], "grad", autograd.grad
            kind = None if self._native is None else self._native.BACKWARD

            def recorded(args: Any, kwargs: Any) -> bool:
                return True

        else:
            owners, name = [autograd], "_engine_run_backward"
            if graph is not None and getattr(graph, name, None) is original:
                owners.append(graph)
            kind = None if self._native is None else self._native.GRAD

            def recorded(args: Any, kwargs: Any) -> bool:
                return kwargs.get("accumulate_grad", True) is False

        if self._native is not None:
            wrapper = self._native.CallRange(original, kind, GRAD_EVENT_NAME)
        else:
            wrapper = self._python_backward(original, recorded, GRAD_EVENT_NAME)
        for owner in owners:
            setattr(owner, name, wrapper)
            self._restore.append(functools.partial(put_back, owner, name, wrapper, original))

    def _python_backward(
        self, original: Callable[..., Any], recorded: Callable[[Any, Any], bool], name: str
    ) -> Callable[..., Any]:
        """The fallback's Backward wrapper: a call ``recorded`` accepts is a
        Backward event, but for one during a backward pass (see
        _torch_call_ranges.h) or while torch.compile traces."""
        compiler_tracing = _compiler_tracing(self._torch)
        graph_task_id = self._torch._C._current_graph_task_id
        recording = _C.is_recording

        @functools.wraps(original)
        @calls_user_code
        def backward(*args: Any, **kwargs: Any) -> Any:
            if compiler_tracing() or not recording() or not recorded(args, kwargs) or graph_task_id() != -1:
                return original(*args, **kwargs)
            with RecordEvent(name, _BACKWARD):
                return original(*args, **kwargs)

        return backward

    # ---- Optimization -----------------------------------------------------------------
    def _install_optimizer(self) -> None:
        optim = importlib.import_module("torch.optim.optimizer")
        steps = _optimizer_steps
        step_name = self._step_names
        # As the step wrappers: while torch.compile traces a step, Dynamo
        # sees torch's hooks and none of ours (a RecordEvent there was a
        # graph break that sent the whole compiled step back to eager).
        compiler_tracing = _compiler_tracing(self._torch)

        # Every path to a step runs torch's hooked step and so these hooks,
        # the wrappers below too but for a step method kept from before
        # enable() (an LR scheduler made then keeps the optimizer's).
        def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            if compiler_tracing():
                return
            open_steps = steps.open
            if open_steps and not steps.wrapped:
                # A step outside all of our wrappers (through a step method
                # kept from before enable()), so inside no other step: what
                # is open was left by such a step that raised. Its end is
                # unknown: dropped, not recorded, rather than kept forever.
                open_steps.clear()
            event = RecordEvent(step_name(type(optimizer)), _OPTIMIZATION)
            event.begin()
            open_steps.append(event)

        def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            if compiler_tracing():
                return
            open_steps = steps.open
            if open_steps:
                open_steps.pop().end()

        pre = optim.register_optimizer_step_pre_hook(before_step)
        post = optim.register_optimizer_step_post_hook(after_step)
        self._restore.append(pre.remove)
        self._restore.append(post.remove)
        self._install_step_wrappers(optim.Optimizer)

    def _install_step_wrappers(self, optimizer_class: type) -> None:
        """Wraps torch's hooked step of every optimizer class, those hooked
        later too, so that a step that raises ends the range its pre hook
        began: torch skips the post hook then."""
        is_compiling = asked_by_profkit(self._torch.compiler.is_compiling)

        def ending_on_error(step: Callable[..., Any]) -> Callable[..., Any]:
            # calls_user_code: with_stack records the optimizer's step under
            # it, as with the native hook (left out as profkit's own, its
            # operators sat right under the Optimization range).
            @functools.wraps(step)
            @calls_user_code
            def step_wrapper(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
                if is_compiling():  # as the Forward wrapper: Dynamo sees torch's step
                    return step(optimizer, *args, **kwargs)
                steps = _optimizer_steps
                open_steps = steps.open
                depth = len(open_steps)
                steps.wrapped += 1
                try:
                    return step(optimizer, *args, **kwargs)
                finally:
                    steps.wrapped -= 1
                    # Ended by the post hook unless the step raised: then as
                    # the exception leaves it (the same time the native
                    # hook's range ends).
                    while len(open_steps) > depth:
                        open_steps.pop().end()

            step_wrapper._profkit_step_wrapper = True  # type: ignore[attr-defined]
            return step_wrapper

        # torch hooks a class's step the first time one of its optimizers is
        # made (Optimizer._patch_step_function), through profile_hook_step.
        original_hook_step = inspect.getattr_static(optimizer_class, "profile_hook_step")
        hook_step = original_hook_step.__func__

        def profile_hook_step(func: Callable[..., Any]) -> Callable[..., Any]:
            return ending_on_error(hook_step(func))

        ours = staticmethod(profile_hook_step)
        optimizer_class.profile_hook_step = ours  # type: ignore[attr-defined]
        self._restore.append(lambda: put_back(optimizer_class, "profile_hook_step", ours, original_hook_step))
        for cls in _subclasses(optimizer_class):  # the classes hooked already
            step = cls.__dict__.get("step")
            if getattr(step, "hooked", False) and not getattr(step, "_profkit_step_wrapper", False):
                cls.step = ending_on_error(step)  # type: ignore[attr-defined]

        def unwrap_steps() -> None:
            for cls in _subclasses(optimizer_class):
                step = cls.__dict__.get("step")
                if getattr(step, "_profkit_step_wrapper", False):
                    hooked_step = step.__wrapped__
                    hooked_step.hooked = True  # torch marked the wrapper; unmarked it would be hooked again
                    cls.step = hooked_step  # type: ignore[attr-defined]

        self._restore.append(unwrap_steps)

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
            @calls_user_code
            def __next__(iterator: Any) -> Any:
                with DataloaderRange(DATALOADER_EVENT_NAME):
                    return original(iterator)

        iterator_class.__next__ = __next__
        self._restore.append(lambda: put_back(iterator_class, "__next__", __next__, original))


def _compiler_tracing(torch: ModuleType) -> Callable[[], bool]:
    """A test for torch.compile's tracing: Dynamo's (is_compiling()), and
    the runs it and AOTAutograd make under a fake-tensor or proxy mode, where
    torch 2.11's is_compiling() says False (Dynamo runs torch.func.grad's node
    under its FakeTensorMode, which calls torch.autograd.grad). The same test
    as the native hook's (_torch_call_ranges.cpp)."""
    is_compiling = torch.compiler.is_compiling
    get_mode = getattr(torch._C, "_get_dispatch_mode", None)
    keys = getattr(torch._C, "_TorchDispatchModeKey", None)
    if get_mode is None or keys is None:  # an older torch
        return asked_by_profkit(is_compiling)
    fake, proxy = keys.FAKE, keys.PROXY

    def compiler_tracing() -> bool:
        return is_compiling() or get_mode(fake) is not None or get_mode(proxy) is not None

    return compiler_tracing


def _subclasses(cls: type) -> List[type]:
    """``cls`` and every class derived from it, each once."""
    found: List[type] = []
    seen = set()
    todo = [cls]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            found.append(current)
            todo.extend(current.__subclasses__())
    return found


def put_back(owner: Any, name: str, ours: Any, original: Any) -> None:
    """Restores ``owner.name`` unless something else replaced ours since.

    Looked up statically: a native CallRange on a class reads as the callable
    it wraps (see _torch_call_ranges.cpp)."""
    if inspect.getattr_static(owner, name, None) is ours:
        setattr(owner, name, original)
