"""Marking data loading: Dataloader events and the reader cost of benchmark mode.

paddle.profiler learns about data loading from Paddle's own DataLoader. Here
any loader can say so, in one of two ways:

    for batch in profkit.wrap_dataloader(loader):   # every next() is a range
        ...

    with profkit.dataloader_range():                # one range, by hand
        batch = next(it)

Each range is recorded as a ``Dataloader`` event (inside a recording window)
and its duration is added to the reader cost of the step in progress of every
running Profiler (``step_info()``, the Perf Summary). Mark what the training
loop waits for, on the loop's thread; loading done ahead by worker threads is
not reader cost.
"""

import threading
from typing import Generic, Iterable, Iterator, Optional, TypeVar

from . import timer as _timer
from ._C import RecordEvent
from ._enums import TracerEventType

__all__ = ["dataloader_range", "wrap_dataloader", "DataloaderRange", "WrappedDataloader"]

T = TypeVar("T")

_DATALOADER = int(TracerEventType.Dataloader)


class _Nesting(threading.local):
    depth = 0  # data-loading ranges open on this thread


_nesting = _Nesting()


class DataloaderRange:
    """A context manager marking data loading: a Dataloader event plus reader cost.

    ``with profkit.dataloader_range():`` around fetching a batch records a
    ``Dataloader`` event (inside a recording window) and adds the time to
    the reader cost of every running Profiler's current step. A range
    opened inside another one on the same thread (``wrap_dataloader`` around
    a loader that a framework integration already marks) is part of the
    outer one: it records nothing and adds no reader time of its own.

    Args:
        name: the event's name in traces (default ``"Dataloader"``).
    """

    __slots__ = ("_event", "_start", "_outer")

    def __init__(self, name: str = "Dataloader") -> None:
        self._event = RecordEvent(name, _DATALOADER)
        self._start = 0
        self._outer = False

    def __enter__(self) -> "DataloaderRange":
        nesting = _nesting
        self._outer = nesting.depth == 0
        nesting.depth += 1
        if self._outer:
            self._event.begin()
            self._start = _timer.clock_ns()
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> bool:
        _nesting.depth -= 1
        if not self._outer:
            return False
        elapsed = _timer.clock_ns() - self._start
        self._event.end()
        for running in _timer._active_timers:
            running.add_reader_time(elapsed)
        return False


#: ``with dataloader_range(name="Dataloader"):`` -- see DataloaderRange.
dataloader_range = DataloaderRange


class WrappedDataloader(Generic[T]):
    """An iterable whose every ``next()`` is a data-loading range; ``len()`` is the loader's."""

    def __init__(self, iterable: Iterable[T], name: str = "Dataloader") -> None:
        self._iterable = iterable
        self._name = name

    def __iter__(self) -> Iterator[T]:
        it = iter(self._iterable)
        name = self._name
        while True:
            with DataloaderRange(name):
                try:
                    item = next(it)
                except StopIteration:
                    return
            yield item

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __getattr__(self, attribute: str) -> object:
        # batch_size, dataset, sampler...: the wrapped loader's attributes.
        if attribute.startswith("__") or attribute in ("_iterable", "_name"):
            raise AttributeError(attribute)
        return getattr(self._iterable, attribute)


def wrap_dataloader(iterable: Iterable[T], name: Optional[str] = None) -> WrappedDataloader[T]:
    """Wraps a data loader (any iterable) so that fetching each batch is marked.

    Every ``next()`` becomes a ``Dataloader`` event and adds to the reader
    cost of the running Profilers. The wrapper iterates like the loader and
    forwards ``len()`` and attributes to it.
    """
    return WrappedDataloader(iterable, name or "Dataloader")
