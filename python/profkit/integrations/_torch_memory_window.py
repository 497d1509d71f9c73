"""profile_memory for PyTorch: when torch's allocations are reported to profkit.

torch's allocators report each allocation and free to one profiler per
thread: the object in the thread's debug info (c10's PROFILER_STATE slot).
The native hook's reporter (``_torch_memory.cpp``) takes that slot while a
window records with ``profile_memory``, on the thread driving the Profiler.

torch's own profilers (``torch.profiler``, ``emit_nvtx``, ``emit_itt``)
refuse to start on a thread whose slot is taken ("Profiler is already enabled
on this thread"). So that they keep working, profkit steps aside: a wrapper
around ``torch.autograd.profiler._enable_profiler`` takes profkit's reporter
off the thread first (with a warning: profkit records no allocations there
while torch's profiler runs), and one around ``_disable_profiler`` puts it
back when the window still wants it. The other way round, a window that
opens while torch's profiler holds the thread records no memory events, and
says so. A window closed on another thread than its own leaves the reporter
(silent) on its thread; after ``disable()``, a smaller wrapper stays on
``_enable_profiler`` until no thread holds it.

Thread-safety: called with the GIL held, from the thread that drives the
Profiler (follow) and from whichever thread starts torch's profiler (the
wrappers); the native functions act on the calling thread.
"""

import functools
from types import ModuleType
from typing import Any, Callable, List

from ._torch_hooks import put_back

__all__ = ["MemoryWindow", "BLOCKED_WARNING", "STEPPED_ASIDE_WARNING"]

BLOCKED_WARNING = (
    "profkit: torch's own profiler is running on this thread and torch reports allocations to it alone, so this "
    "window records no memory events here; stop torch.profiler to record them with profkit"
)
STEPPED_ASIDE_WARNING = (
    "profkit: torch's own profiler started on a thread where a profkit window records memory; torch reports "
    "allocations to one profiler per thread, so profkit records none there until torch's profiler stops"
)


class MemoryWindow:
    """Turns the native hook's allocation reporter on and off with the windows that want it."""

    def __init__(self, torch: ModuleType, native: Any, warn_once: Callable[[str], None]) -> None:
        self._torch = torch
        self._native = native
        self._warn_once = warn_once
        self._wanted = False  # the current window records memory
        self._restore: List[Callable[[], None]] = []

    def install(self) -> None:
        """Wraps torch's profiler switches so that they start with profkit out of their way."""
        profiler = getattr(getattr(self._torch, "autograd", None), "profiler", None)
        enable = getattr(profiler, "_enable_profiler", None)
        disable = getattr(profiler, "_disable_profiler", None)
        if profiler is None or enable is None or disable is None:
            return  # another torch layout: nothing to wrap (its profiler cannot start inside a memory window)
        native = self._native

        def _enable_profiler(*args: Any, **kwargs: Any) -> Any:
            if native.memory_leave_thread():
                self._warn_once(STEPPED_ASIDE_WARNING)
            return enable(*args, **kwargs)

        def _disable_profiler(*args: Any, **kwargs: Any) -> Any:
            try:
                return disable(*args, **kwargs)
            finally:
                if self._wanted:
                    self.follow(True)

        for name, ours, original in (
            ("_enable_profiler", _enable_profiler, enable),
            ("_disable_profiler", _disable_profiler, disable),
        ):
            setattr(profiler, name, ours)
            self._restore.append(functools.partial(put_back, profiler, name, ours, original))

    def uninstall(self) -> None:
        self._wanted = False
        self._native.memory_window(False)
        while self._restore:
            self._restore.pop()()
        if self._native.memory_threads_holding() > 0:
            self._guard_strays()

    def _guard_strays(self) -> None:
        """Keeps torch's profiler startable where a window closed on another thread left the reporter.

        That reporter is silent, but it holds its thread's slot: torch's
        profiler would refuse to start there. Until no thread holds it, torch's
        ``_enable_profiler`` takes it off the calling thread first, then puts
        itself back.
        """
        profiler = getattr(getattr(self._torch, "autograd", None), "profiler", None)
        enable = getattr(profiler, "_enable_profiler", None)
        if enable is None:
            return  # another torch layout: install() wrapped nothing either
        native = self._native

        def _enable_profiler(*args: Any, **kwargs: Any) -> Any:
            native.memory_leave_thread()  # silent now: nothing to warn about
            if native.memory_threads_holding() <= 0:
                put_back(profiler, "_enable_profiler", _enable_profiler, enable)
            return enable(*args, **kwargs)

        profiler._enable_profiler = _enable_profiler

    def follow(self, wanted: bool) -> None:
        """Reports allocations on this thread while ``wanted`` (a window records memory)."""
        self._wanted = wanted
        if not self._native.memory_window(wanted):
            self._warn_once(BLOCKED_WARNING)

