"""Python code that follows the recording windows a Profiler opens and closes.

Native hooks learn about every engine state change from the engine itself
(``pk_add_state_listener``). Python hooks that must be *absent* outside
recording windows -- a framework integration that wraps a hot path, such as
every ``torch.nn.Module`` call -- cannot run inside that listener (it holds
the engine's lock and may run on a thread without the GIL). So the Profiler
calls these listeners itself, on its own thread with the GIL held, just
before each engine state change it makes::

    listener(profiler, state)   # the engine is about to enter `state`

A listener must be quick and must not drive the Profiler. An exception in a
listener does not stop the Profiler: it is reported as a ProfilerWarning.
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

__all__ = ["WindowListener", "add", "remove", "notify"]

WindowListener = Callable[["Profiler", ProfilerState], None]

_listeners: Tuple[WindowListener, ...] = ()


def add(listener: WindowListener) -> None:
    """Calls ``listener(profiler, state)`` before every engine state change a Profiler makes."""
    global _listeners
    if listener not in _listeners:
        _listeners = _listeners + (listener,)


def remove(listener: WindowListener) -> None:
    """Stops calling ``listener``; removing one that is not added does nothing."""
    global _listeners
    _listeners = tuple(known for known in _listeners if known != listener)


def notify(profiler: "Profiler", state: ProfilerState) -> None:
    """Tells every listener that ``profiler`` is about to put the engine in ``state``."""
    for listener in _listeners:
        try:
            listener(profiler, state)
        except Exception as e:  # a broken integration must not break the training loop
            warnings.warn(
                f"profkit: a recording-window listener ({getattr(listener, '__qualname__', listener)!r}) failed "
                f"entering {state.name}: {type(e).__name__}: {e}",
                ProfilerWarning,
                stacklevel=3,
            )
