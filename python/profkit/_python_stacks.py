"""``Profiler(with_stack=True)``: the Python calls, as PythonOp events.

The tracer itself is C (``python/bindings/python_tracer.cpp``): a profile
function that records each Python and built-in function call when it
returns. This module switches it on when a with_stack Profiler's recording
window opens and off when the window closes (a window listener: it runs on
the Profiler's thread before the window's last step ends and before the
engine changes state, so calls still open at the close are recorded up to
it, inside that step, while the engine still records).

Every thread is traced: those running when a window opens from then on (as
torch.profiler's with_stack traces them), and those started during it from
their first call, through threading's profile hook (``threading.setprofile``,
which a new thread calls first; it hands the thread to the C tracer), unless
the program set a hook of its own. Where another profile function is set on
a thread (cProfile, a debugger's profiler), profkit leaves it in place,
records no Python calls of that thread, and says so with a ProfilerWarning.

Thread-safety: called with the GIL held, on the Profiler's thread.
"""

import os
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Set, TypeVar

from . import _C, _window_listeners
from ._enums import ProfilerState
from ._warnings import warn_at_caller

if TYPE_CHECKING:  # pragma: no cover
    from .profiler import Profiler

__all__ = ["install", "asked_by_profkit", "calls_user_code", "runs_for_profkit"]

# The calls of profkit's own code (and all they call) are left out...
_OWN_PREFIX = os.path.dirname(os.path.abspath(__file__)) + os.sep
# ...but for these functions', which call the user's code: it is recorded.
_PASS_THROUGH: Set[Any] = set()  # code objects
# Other libraries' functions that run only for profkit: left out as its own.
# By identity: a copy of a code object (code.replace()) equals it.
_HIDDEN: Dict[int, Any] = {}  # id -> code object

F = TypeVar("F", bound=Callable[..., Any])


def calls_user_code(function: F) -> F:
    """Marks a profkit function that calls the user's code (a wrapper, a
    decorator's inner function): with_stack leaves the function out but
    records the Python code it calls. Returns the function unchanged."""
    _PASS_THROUGH.add(function.__code__)
    if _tracing:  # made in a window (a wrapper made as it opened): the tracer learns of it now
        _C.python_tracer_pass_through(function.__code__)
    return function


def runs_for_profkit(function: F) -> F:
    """Marks another library's function that runs only because of profkit
    (torch's wrapper around the pure-Python operator recorder's dispatch
    mode): with_stack leaves its calls out with all they call, as profkit's
    own. The tracer knows functions by code object: every function made from
    the same ``def`` (a closure's siblings) is left out too, unless the
    caller gave this one a copy of its own (``code.replace()``). Returns the
    function unchanged."""
    _HIDDEN[id(function.__code__)] = function.__code__
    if _tracing:
        _C.python_tracer_pass_through(function.__code__, hidden=True)
    return function


def asked_by_profkit(check: Callable[[], bool]) -> Callable[[], bool]:
    """``check`` (torch.compiler.is_compiling) called from a function of
    profkit's own: with_stack leaves its Python calls out, as profkit's
    bookkeeping. Asked straight from a wrapper that records the user's code
    under it (``calls_user_code``), they showed as the program's calls
    before every module call or collective."""

    def asked() -> bool:
        return check()

    return asked


_tracing = False  # the tracer is on (python_tracer_start succeeded on the Profiler's thread)


def _adopt_new_thread(frame: Any, event: str, arg: Any) -> None:
    """threading's profile hook while tracing: a new thread's first call hands it to the C tracer."""
    try:
        _C.python_tracer_adopt(frame)
    except Exception:  # an exception here would end the user's thread: that thread goes untraced instead
        sys.setprofile(None)


def _threading_hook() -> Any:
    if sys.version_info >= (3, 10):
        return threading.getprofile()  # novermin (guarded: 3.10+)
    return getattr(threading, "_profile_hook", None)  # pragma: no cover (3.9)


def _on_window(profiler: Optional["Profiler"], state: ProfilerState) -> None:
    global _tracing
    wanted = profiler is not None and profiler.with_stack and state.is_recording
    if wanted and not _tracing:
        _tracing, others_not_traced = _C.python_tracer_start(_OWN_PREFIX, tuple(_PASS_THROUGH), tuple(_HIDDEN.values()))
        if not _tracing:
            warn_at_caller(
                "profkit: with_stack records no Python calls in this window: another profile function "
                "(sys.setprofile: cProfile, a debugger or another profiler) is set on this thread, and "
                "profkit does not replace it. Stop that one to record them."
            )
            return
        if others_not_traced:
            warn_at_caller(
                f"profkit: with_stack records no Python calls of {others_not_traced} other thread(s) in this "
                "window: another profile function (sys.setprofile: cProfile, a debugger or another profiler) "
                "is set on them, and profkit does not replace it."
            )
        if _threading_hook() is None:
            threading.setprofile(_adopt_new_thread)
        else:
            warn_at_caller(
                "profkit: with_stack records no Python calls of the threads started in this window: the program "
                "set a profile hook for new threads (threading.setprofile), and profkit does not replace it."
            )
    elif not wanted and _tracing:
        if _threading_hook() is _adopt_new_thread:
            threading.setprofile(None)
        out_of_memory, replaced = _C.python_tracer_stop()
        _tracing = False
        if replaced:
            warn_at_caller(
                "profkit: with_stack stopped recording this thread's Python calls during this window: the program "
                "set another profile function (sys.setprofile, cProfile) in it, which replaced profkit's. The "
                "calls from then on, and those still open then, are missing from this window."
            )
        if out_of_memory:
            warn_at_caller(
                f"profkit: with_stack stopped recording the Python calls of {out_of_memory} thread(s) before this "
                "window closed: memory ran out. Their calls from then on are missing from this window."
            )


def install() -> None:
    """Follows the Profilers' recording windows (idempotent)."""
    _window_listeners.add(_on_window)
