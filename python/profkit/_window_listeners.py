"""Python code that follows the recording windows a Profiler opens and closes.

Native hooks learn about every engine state change from the engine itself
(``pk_add_state_listener``). Python hooks that must be *absent* outside
recording windows -- a framework integration that wraps a hot path, such as
every ``torch.nn.Module`` call -- cannot run inside that listener (it holds
the engine's lock and may run on a thread without the GIL). So the Profiler
calls these listeners itself, on its own thread with the GIL held, just
before each engine state change it makes::

    listener(profiler, state)   # the engine is about to enter `state`

Collect hooks are the other moment integrations need: just before a Profiler
collects a window, while the engine still records, so that events of work
still in flight (an asynchronous collective) can be closed and land in the
window. A delivery does not always change the state (RECORD_AND_RETURN ->
RECORD collects while recording on), hence a separate notification::

    hook(profiler)              # `profiler` is about to collect a window

Listeners and hooks must be quick and must not drive the Profiler. An
exception in one does not stop the Profiler: it is reported as a
ProfilerWarning.
States set by calling ``profkit._C.set_state`` directly (or from C/C++) are
not seen here.

Thread-safety: add/remove/notify are called with the GIL held; the tuple of
listeners is replaced, never mutated, so a notification in progress is not
disturbed by an add or remove.
"""

import warnings
from typing import TYPE_CHECKING, Callable, Tuple

from ._enums import ProfilerState
from ._warnings import ProfilerWarning

if TYPE_CHECKING:  # pragma: no cover
    from .profiler import Profiler

__all__ = ["WindowListener", "CollectHook", "add", "remove", "notify", "add_collect_hook",
           "remove_collect_hook", "notify_collect"]

WindowListener = Callable[["Profiler", ProfilerState], None]
CollectHook = Callable[["Profiler"], None]

class _Callbacks:
    """An ordered set of callables, replaced (never mutated) on add and remove."""

    def __init__(self) -> None:
        self.all: Tuple[Callable[..., None], ...] = ()

    def add(self, function: Callable[..., None]) -> None:
        if function not in self.all:
            self.all = self.all + (function,)

    def remove(self, function: Callable[..., None]) -> None:
        self.all = tuple(known for known in self.all if known != function)


_listeners = _Callbacks()
_collect_hooks = _Callbacks()


def add(listener: WindowListener) -> None:
    """Calls ``listener(profiler, state)`` before every engine state change a Profiler makes."""
    _listeners.add(listener)


def remove(listener: WindowListener) -> None:
    """Stops calling ``listener``; removing one that is not added does nothing."""
    _listeners.remove(listener)


def notify(profiler: "Profiler", state: ProfilerState) -> None:
    """Tells every listener that ``profiler`` is about to put the engine in ``state``."""
    for listener in _listeners.all:
        _call_safely(listener, f"entering {state.name}", profiler, state)


def add_collect_hook(hook: CollectHook) -> None:
    """Calls ``hook(profiler)`` just before every window a Profiler collects (still recording)."""
    _collect_hooks.add(hook)


def remove_collect_hook(hook: CollectHook) -> None:
    """Stops calling ``hook``; removing one that is not added does nothing."""
    _collect_hooks.remove(hook)


def notify_collect(profiler: "Profiler") -> None:
    """Tells every collect hook that ``profiler`` is about to collect a window."""
    for hook in _collect_hooks.all:
        _call_safely(hook, "before a collect", profiler)


def _call_safely(function: Callable[..., None], moment: str, *args: object) -> None:
    try:
        function(*args)
    except Exception as e:  # a broken integration must not break the training loop
        warnings.warn(
            f"profkit: a recording-window listener ({getattr(function, '__qualname__', function)!r}) failed "
            f"{moment}: {type(e).__name__}: {e}",
            ProfilerWarning,
            stacklevel=4,
        )
