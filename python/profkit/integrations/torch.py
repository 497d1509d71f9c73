"""profkit for PyTorch: operators, passes, optimizer steps and data loading in every window.

    import profkit
    import profkit.integrations.torch as pk_torch

    pk_torch.enable()                          # or: with pk_torch.enable(): ...
    with profkit.Profiler(scheduler=(3, 14)) as prof:
        for x, y in loader:                    # Dataloader events, reader_cost
            loss = loss_fn(model(x), y)        # Forward; aten operators
            loss.backward()                    # Backward; autograd's operators
            optimizer.step()                   # Optimization
            optimizer.zero_grad()
            prof.step()
    prof.summary()

Once enabled, every recording window gets:

- an ``Operator`` event for every aten operator (``aten::addmm``...),
  including those autograd runs during backward, each inside the autograd
  engine's range for its node (``autograd::engine::evaluate_function:
  AddmmBackward0``), nested as they ran; with ``record_shapes`` each
  carries an ``input_shapes`` argument (``"[[3], [64, 10], [10, 3], [], []]"``),
  and with ``with_flops`` a ``flops`` argument on matrix products,
  convolutions, ``mul`` and ``add`` (a FLOPs column in the Operator summary);
- with ``profile_memory``, a memory event for every allocation and free by
  torch's allocators on the thread driving the Profiler (and the autograd
  work it runs): the Memory summary, and memory counters in the Chrome trace;
- a ``Forward`` event for each top-level module call (``"Net.forward"``),
  ``Backward`` for ``loss.backward()`` and ``torch.autograd.grad()``,
  ``Optimization`` for ``optimizer.step()`` (``"SGD.step"``), ``Dataloader`` for each batch
  fetched from a DataLoader (also counted as reader_cost in the Perf
  Summary) -- the events the Model summary is made of;
- a ``PythonUserDefined`` event for each ``torch.profiler.record_function``
  range (and torch's own, such as ``Optimizer.zero_grad#SGD.zero_grad``).

Threads: operators are recorded on the thread that opens the window (the
one driving the Profiler) and on the threads torch runs its work on (the
autograd engine's device threads, ``at::launch`` tasks), as torch.profiler
records them; ``enable(all_threads=True)`` records every thread's, at some
cost in every backward pass. torch's record_function ranges (Optimization
among them) follow the operators; Forward, Backward and Dataloader events
are recorded on every thread.

Operators are recorded by a native hook (a RecordFunction callback calling
profkit's C ABI) that is compiled against the installed torch on first use
and cached (see _torch_native.py; ``python -m profkit.integrations.torch
--build`` builds it ahead of time). It is registered with torch only while a
window records, so outside windows torch runs exactly as without profkit.
Where it cannot be built (no C++ compiler or ninja), a pure-Python recorder
(a TorchDispatchMode: about 5 us per operator instead of a few tenths) takes its place
after a one-time warning that says why. ``PROFKIT_TORCH_BACKEND=native|python``
picks one explicitly.

This module imports without torch; enable() and build() raise a clear
ModuleNotFoundError where torch is not installed.

Forked children (``os.fork()``, multiprocessing's fork start method) run
torch unhooked (is_enabled() is False there) until they open a recording
window of their own: then the hooks go on again as the parent had them,
unless the child called enable() or disable() itself first. DataLoader
workers, which open none, stay unhooked. A child that goes on with a window
the parent had open at the fork records torch's events again from its next
window.

Thread-safety: enable/disable may be called from any thread (they are
serialized); profile from one thread as with any Profiler.
"""

import argparse
import os
import sys
import threading
from types import ModuleType
from typing import Any, List, NamedTuple, Optional, Set

from .. import _C, _window_listeners
from . import torch_distributed
from .._enums import ProfilerState
from .._warnings import warn_at_caller
from ._torch_version import require_supported_torch

__all__ = ["enable", "disable", "is_enabled", "backend", "build", "BACKENDS"]

#: The operator recorders: "auto" (native, else python with a warning),
#: "native" (the compiled RecordFunction hook; an error if it cannot be
#: built), "python" (the TorchDispatchMode fallback).
BACKENDS = ("auto", "native", "python")
_BACKEND_ENV = "PROFKIT_TORCH_BACKEND"


class _Options(NamedTuple):
    record_shapes: Optional[bool]
    with_flops: Optional[bool]
    profile_memory: Optional[bool]
    backend: str  # as asked: one of BACKENDS
    all_threads: bool


class _Integration:
    """What enable() set up; disable() takes it all down."""

    def __init__(self, torch: ModuleType, options: _Options) -> None:
        self.torch = torch
        self.options = options
        self.native: Any = None  # the loaded profkit_torch_hook module
        self.fallback: Any = None  # an OperatorRecorder
        self.backend = ""
        self._hooks: Any = None
        self.memory: Any = None  # a MemoryWindow, with the native hook
        # Whether enable() switched on torch_distributed (so disable() only
        # undoes what it did, not a user's own torch_distributed.enable()).
        self.distributed = False
        self._warned: Set[str] = set()

    def warn_once(self, message: str) -> None:
        """A ProfilerWarning, the first time this integration has this to say."""
        if message not in self._warned:
            self._warned.add(message)
            warn_at_caller(message)

    @property
    def hooks(self) -> Any:
        """The Python-level hooks (made once the operator recorder is chosen)."""
        if self._hooks is None:
            from ._torch_hooks import PythonHooks

            self._hooks = PythonHooks(self.torch, self.native)
        return self._hooks


_lock = threading.RLock()
_current: Optional[_Integration] = None
_fallback_warned = False
_native_failure: Optional[str] = None  # why the native hook could not be built in this process
_native_failure_root: Optional[str] = None  # the cache it could not be built in
_native_failure_is_tools = False  # ...because a C++ compiler or ninja is missing (installing them helps)
_fork_handler_registered = False


def _import_torch(what: str) -> ModuleType:
    try:
        import torch
    except ImportError as e:
        raise ModuleNotFoundError(
            f"profkit.integrations.torch.{what}(): PyTorch is not installed here ({e}). Install it "
            "(`pip install torch`, or `pip install 'profkit[torch]'` for torch and the native hook's "
            "build tool), then call it again.",
            name="torch",
        ) from e
    require_supported_torch(torch, f"profkit.integrations.torch.{what}()")
    return torch


def _resolve_backend(asked: str) -> str:
    if not isinstance(asked, str) or asked not in BACKENDS:
        raise ValueError(f"profkit.integrations.torch.enable(): backend must be one of {BACKENDS}, not {asked!r}")
    if asked != "auto":
        return asked
    configured = os.environ.get(_BACKEND_ENV, "auto").strip().lower() or "auto"
    if configured not in BACKENDS:
        raise ValueError(f"${_BACKEND_ENV} must be one of {BACKENDS}, not {configured!r}")
    return configured


class _Setting(NamedTuple):
    """What enable() left in effect: its options and the recorder it chose."""

    options: _Options
    backend: str  # in use: "native" or "python"


class _Inherited(NamedTuple):
    """In a forked child: the parent's setting, put in effect at the child's first window."""

    setting: _Setting
    distributed: bool  # the parent's enable() had switched on torch_distributed (still on here)


_inherited: Optional[_Inherited] = None


class _Enabled:
    """enable()'s return value: ``with enable(...):`` restores the previous setting on exit."""

    def __init__(self, previous: Optional[_Setting]) -> None:
        self._previous = previous

    def __enter__(self) -> "_Enabled":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is None:
            disable()
        else:
            # The recorder that was in use, not the one asked for: "auto"
            # would keep whatever the block switched to.
            options, in_use = self._previous
            _apply(_import_torch("enable"), options, in_use)

    def __repr__(self) -> str:
        return f"<profkit.integrations.torch enabled ({backend()})>"


def enable(
    *,
    record_shapes: Optional[bool] = None,
    with_flops: Optional[bool] = None,
    profile_memory: Optional[bool] = None,
    backend: str = "auto",
    all_threads: bool = False,
) -> _Enabled:
    """Records PyTorch's operators, passes, optimizer steps and data loading in every window.

    Args:
        record_shapes: attach input shapes to operators. None (default):
            follow each Profiler's ``record_shapes``.
        with_flops: attach the FLOPs of matrix products (mm, addmm, bmm,
            baddbmm), convolutions (conv1d/2d/3d), mul and add to those
            operators, as torch.profiler's with_flops counts them (the
            pure-Python fallback counts what torch.utils.flop_counter
            does). None (default): follow each Profiler's ``with_flops``.
        profile_memory: record torch's allocations and frees (native hook
            only). None (default): follow each Profiler's ``profile_memory``.
        backend: "auto" (default; ``$PROFKIT_TORCH_BACKEND`` may pick),
            "native" or "python" -- see BACKENDS.
        all_threads: record the operators of every thread. False
            (default): those of the thread that opens the window (the one
            calling ``prof.step()``/``start()``) and of the threads torch
            runs its work on (the autograd engine's, ``at::launch``'s), as
            torch.profiler does; cheaper, because a process-wide callback
            makes torch do more work at every backward node. Native hook
            only: the fallback always records the driving thread alone.

    Returns:
        A context manager: ``with enable(): ...`` disables again (or
        restores the earlier options and operator recorder) on exit. Calling enable() alone keeps
        it on until disable(). Calling it again changes the options.

    Raises:
        ModuleNotFoundError: torch is not installed.
        ValueError: an unknown backend.
        RuntimeError: torch is older than 2.3, or backend="native" and the
            hook cannot be built or loaded.
    """
    for name, value in (
        ("record_shapes", record_shapes),
        ("with_flops", with_flops),
        ("profile_memory", profile_memory),
    ):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"profkit.integrations.torch.enable(): {name} must be a bool or None, not {value!r}")
    if not isinstance(all_threads, bool):
        raise TypeError(f"profkit.integrations.torch.enable(): all_threads must be a bool, not {all_threads!r}")
    chosen = _resolve_backend(backend)
    torch = _import_torch("enable")
    return _apply(torch, _Options(record_shapes, with_flops, profile_memory, backend, all_threads), chosen)


def disable() -> None:
    """Removes every hook enable() installed; torch runs as without profkit. Idempotent."""
    global _current
    with _lock:
        _forget_inherited()
        if _current is not None:
            _teardown(_current)
            _current = None


def is_enabled() -> bool:
    """Whether enable() is in effect (in a forked child: from its first recording window on)."""
    return _current is not None


def backend() -> Optional[str]:
    """The operator recorder in use: "native", "python", or None when not enabled."""
    current = _current
    return current.backend if current is not None else None


def build(*, rebuild: bool = False, verbose: bool = False) -> str:
    """Builds the native hook into its cache now (if not cached yet) and returns its path.

    Raises:
        ModuleNotFoundError: torch is not installed.
        RuntimeError: torch is older than 2.3, or the hook cannot be built;
            the message says why.
    """
    from . import _torch_native

    global _native_failure, _native_failure_is_tools, _fallback_warned
    torch = _import_torch("build")
    path = str(_torch_native.load(torch, verbose=verbose, rebuild=rebuild).path)
    # Built: the next enable() tries the native hook again (an earlier
    # failure, remembered to spare each enable() a retry, is over).
    _native_failure, _native_failure_is_tools, _fallback_warned = None, False, False
    return path


# ---- internals --------------------------------------------------------------------
def _apply(torch: ModuleType, options: _Options, chosen: str) -> _Enabled:
    """Puts ``options`` in effect with the recorder ``chosen`` ("auto": the current one, else as asked)."""
    global _current
    with _lock:
        _forget_inherited()  # a child's own enable() replaces what it inherited
        previous = _Setting(_current.options, _current.backend) if _current is not None else None
        if _current is not None and chosen in ("auto", _current.backend):
            _current.options = options  # same recorder: new options only
            _follow_window(_current, _active_profiler())
            return _Enabled(previous)
        integration = _Integration(torch, options)
        _choose_operator_recorder(integration, chosen)  # may build; raises before anything changes
        if _current is not None:
            _teardown(_current)
            _current = None
        try:
            if integration.native is not None:
                integration.native.install()
                from ._torch_memory_window import MemoryWindow

                integration.memory = MemoryWindow(torch, integration.native, integration.warn_once)
                integration.memory.install()
            integration.hooks.install()
            if torch.distributed.is_available():  # collectives as Communication events
                integration.distributed = torch_distributed._enable_for_integration()
        except BaseException:
            _teardown(integration)
            raise
        _window_listeners.add(_on_window)
        _current = integration
        _register_fork_handler()
        _follow_window(integration, _active_profiler())
        return _Enabled(previous)


def _cache_root() -> Optional[str]:
    from . import _torch_native

    try:
        return str(_torch_native.cache_root())
    except _torch_native.NativeBuildError:  # no home directory: loading says so
        return None


def _choose_operator_recorder(integration: _Integration, chosen: str) -> None:
    global _fallback_warned, _native_failure, _native_failure_is_tools, _native_failure_root
    from . import _torch_native

    # "auto" tries to build once per process and cache (the advice on a
    # failure may be another PROFKIT_CACHE_DIR); "native" tries every time.
    if chosen == "native" or (chosen == "auto" and (_native_failure is None or _native_failure_root != _cache_root())):
        try:
            native = _torch_native.load(integration.torch)
        except _torch_native.NativeBuildError as e:
            _native_failure_root = _cache_root()
            _native_failure = str(e)
            _native_failure_is_tools = isinstance(e, _torch_native.MissingBuildTool)
            if chosen == "native":
                raise
        else:
            integration.native = native.module
            integration.backend = "native"
            return
    if chosen == "auto" and not _fallback_warned:
        _fallback_warned = True
        # The install advice only where it helps: a cache or compile error says its own remedy.
        advice = ""
        if _native_failure_is_tools:
            advice = " Install a C++ compiler and ninja (`pip install ninja`) to get the native hook."
        warn_at_caller(  # at the user's enable() (or Profiler start), not inside profkit
            f"profkit: the native PyTorch hook is not available ({_native_failure}); recording operators with "
            "the pure-Python fallback, which adds about 5 us per operator instead of a few tenths." + advice
        )
    from ._torch_fallback import OperatorRecorder

    integration.fallback = OperatorRecorder(integration.torch)
    integration.backend = "python"


def _teardown(integration: _Integration) -> None:
    _window_listeners.remove(_on_window)
    if integration.distributed:
        torch_distributed._disable_for_integration()  # unless the user (or instrument_ddp) asked for it since
        integration.distributed = False
    if integration.memory is not None:
        integration.memory.uninstall()
    if integration.native is not None:
        integration.native.uninstall()
    if integration.fallback is not None:
        integration.fallback.window(False)
    integration.hooks.uninstall()


def _active_profiler() -> Any:
    from .. import profiler as profiler_module

    return profiler_module._active_profiler()


def _option(integration: _Integration, profiler: Any, name: str) -> bool:
    """An option of enable() when given, else the Profiler's attribute of the same name."""
    asked = getattr(integration.options, name)
    if asked is not None:
        return bool(asked)
    return bool(getattr(profiler, name, False))


def _follow_window(integration: _Integration, profiler: Any, state: Optional[ProfilerState] = None) -> None:
    """Puts the window-only hooks in the shape ``state`` needs (default: the engine's state now)."""
    recording = _C.is_recording() if state is None else state.is_recording
    shapes = _option(integration, profiler, "record_shapes")
    flops = _option(integration, profiler, "with_flops")
    memory = recording and _option(integration, profiler, "profile_memory")
    if integration.native is not None:
        integration.native.set_record_shapes(shapes)  # read when the callback is armed
        integration.native.set_with_flops(flops)
        integration.native.set_all_threads(integration.options.all_threads)
    elif integration.options.all_threads:
        integration.warn_once(
            "profkit: all_threads needs the native PyTorch hook; the pure-Python fallback in use records the "
            f"operators of the thread driving the Profiler only ({_native_failure or 'backend=python was asked for'})"
        )
    if integration.memory is not None:
        integration.memory.follow(memory)
    elif memory:
        integration.warn_once(
            "profkit: profile_memory needs the native PyTorch hook; the pure-Python fallback in use records no "
            f"memory events ({_native_failure or 'backend=python was asked for'})"
        )
    if integration.fallback is not None:
        integration.fallback.window(recording, shapes, flops)
    integration.hooks.window(recording)


def _on_window(profiler: Any, state: ProfilerState) -> None:
    with _lock:
        if _current is not None:
            _follow_window(_current, profiler, state)


def _after_fork_in_child() -> None:
    # A forked child's copy of the hooks goes, so it runs torch unhooked (a
    # DataLoader worker records nothing of its own). Only the native hook's
    # fork-safe exit is used, which takes no lock another thread of the parent
    # might have held at the fork; the Python hooks are plain attribute
    # restores. The setting stays: a child that opens a recording window of
    # its own (a forked trainer, a plain os.fork() that profiles) gets the
    # hooks back then, as the parent had them -- installing them here, in
    # every DataLoader worker, would cost each worker's start and take locks
    # of torch's that a thread of the parent may have held at the fork.
    global _current, _lock, _inherited
    _lock = threading.RLock()
    integration, _current = _current, None
    if integration is None:
        return
    _window_listeners.remove(_on_window)
    _inherited = _Inherited(_Setting(integration.options, integration.backend), integration.distributed)
    _window_listeners.add(_on_window_in_forked_child)
    if integration.native is not None:
        integration.native.forget_after_fork()
    if integration.memory is not None:
        integration.memory.uninstall()
    if integration.fallback is not None:
        integration.fallback.window(False)
    integration.hooks.uninstall()


def _on_window_in_forked_child(profiler: Any, state: ProfilerState) -> None:
    """In a forked child: the inherited setting goes into effect as its first window opens."""
    if not state.is_recording:
        return
    with _lock:
        inherited = _inherited
        if inherited is None or _current is not None:
            _forget_inherited()
            return
        options, in_use = inherited.setting
        _apply(_import_torch("enable"), options, in_use)  # forgets the inheritance
        integration = _current
        if integration is not None:
            # Still the parent's to take down at disable() (see _Integration.distributed).
            integration.distributed = integration.distributed or inherited.distributed
            # _apply followed the engine's state, not yet `state`: this window's hooks go on now.
            _follow_window(integration, profiler, state)


def _forget_inherited() -> None:
    global _inherited
    if _inherited is not None:
        _inherited = None
        _window_listeners.remove(_on_window_in_forked_child)


def _register_fork_handler() -> None:
    global _fork_handler_registered
    if not _fork_handler_registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _fork_handler_registered = True


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m profkit.integrations.torch --build``: build the native hook ahead of time."""
    parser = argparse.ArgumentParser(
        prog="python -m profkit.integrations.torch",
        description="Build profkit's native PyTorch hook into its cache (it is otherwise built on first use).",
    )
    parser.add_argument("--build", action="store_true", help="build the hook (or find it in the cache)")
    parser.add_argument("--rebuild", action="store_true", help="build it again even if cached")
    parser.add_argument("--verbose", action="store_true", help="show the compiler's commands and output")
    parser.add_argument("--where", action="store_true", help="print where the hook is cached, build nothing")
    args = parser.parse_args(argv)
    if not (args.build or args.rebuild or args.where):
        parser.print_help()
        return 2
    from . import _torch_native

    try:
        import torch
    except ImportError as e:
        print(
            f"{parser.prog}: PyTorch is not installed here ({e}); the hook is built against it. Install it "
            "(`pip install torch`, or `pip install 'profkit[torch]'`), then run this again.",
            file=sys.stderr,
        )
        return 1
    try:
        if args.where:
            print(_torch_native.build_dir(torch))
            return 0
        hook = _torch_native.load(torch, verbose=args.verbose, rebuild=args.rebuild)
    except RuntimeError as e:
        print(f"profkit: {e}", file=sys.stderr)
        return 1
    if hook.built:
        print(f"profkit: native PyTorch hook built in {hook.build_seconds:.1f} s: {hook.path}")
    else:
        print(f"profkit: native PyTorch hook already built: {hook.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
