"""``@RecordEvent(name)`` on a function: paddle.profiler's RecordEvent is a
ContextDecorator, so scripts decorate functions with it.

The wrapper makes a new RecordEvent for every call (RecordEvent.__call__ in
python/bindings/record_event.cpp calls :func:`decorate`): one object marks
one range at a time, so recursion and calls from several threads each need
their own.

Thread-safety: the wrapper may be called from any thread at once.
"""

import functools
import inspect
from typing import Any, Callable, TypeVar

from ._C import RecordEvent
from ._python_stacks import calls_user_code

__all__ = ["decorate"]

F = TypeVar("F", bound=Callable[..., Any])


def decorate(name: str, event_type: int, function: F) -> F:
    """``function`` wrapped so that each call is a ``RecordEvent(name, event_type)`` range."""
    if not callable(function):
        raise TypeError(
            f"RecordEvent({name!r}) used as a decorator needs a function, not {type(function).__name__}"
        )
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(
        function
    ):
        # The call only creates the coroutine or generator: a range around it
        # would time nothing, and one spanning its suspensions would nest
        # across other work on the thread.
        raise TypeError(
            f"RecordEvent({name!r}) cannot decorate {getattr(function, '__qualname__', function)!r}: it is a coroutine or generator "
            "function; put `with RecordEvent(...):` around the synchronous parts inside it instead"
        )

    @functools.wraps(function)
    @calls_user_code
    def recorded(*args: Any, **kwargs: Any) -> Any:
        with RecordEvent(name, event_type):
            return function(*args, **kwargs)

    return recorded  # type: ignore[return-value]
