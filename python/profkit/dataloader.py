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

The ranges are the engine's (``pk_data_loading_begin``/``end`` in the C ABI),
so a range marked here and one a framework marks in C around the same fetch
nest: only the outermost one counts.
"""

from typing import Dict, Generic, Iterable, Iterator, Optional, TypeVar

from . import _C
from ._python_stacks import calls_user_code

__all__ = ["dataloader_range", "wrap_dataloader", "DataloaderRange", "WrappedDataloader"]

T = TypeVar("T")

# Interned event names: a loader wrapper makes one range per batch.
_name_ids: Dict[str, int] = {}


def _name_id(name: str, where: str = "profkit.dataloader_range") -> int:
    if not isinstance(name, str):
        raise TypeError(f"{where}: name must be a str, not {type(name).__name__}")
    name_id = _name_ids.get(name)
    if name_id is None:
        try:
            name_id = _name_ids[name] = _C.intern(name)
        except MemoryError:  # the engine's name table is full: the range is timed, its event unnamed
            return 0
    return name_id


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

    __slots__ = ("_name_id",)

    def __init__(self, name: str = "Dataloader") -> None:
        self._name_id = _name_id(name)

    def __enter__(self) -> "DataloaderRange":
        _C.data_loading_begin(self._name_id)
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> bool:
        _C.data_loading_end()
        return False


#: ``with dataloader_range(name="Dataloader"):`` -- see DataloaderRange.
dataloader_range = DataloaderRange


class WrappedDataloader(Generic[T]):
    """An iterable whose every ``next()`` is a data-loading range; ``len()`` is the loader's."""

    def __init__(self, iterable: Iterable[T], name: str = "Dataloader") -> None:
        _name_id(name, "profkit.wrap_dataloader")  # a bad name fails here, not at the first batch
        self._iterable = iterable
        self._name = name

    @calls_user_code
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
    return WrappedDataloader(iterable, "Dataloader" if name is None or name == "" else name)
