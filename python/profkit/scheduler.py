"""Schedulers: which ProfilerState each step is in (SPEC §2).

A scheduler is any callable ``step -> ProfilerState``. ``make_scheduler``
builds the periodic one of paddle.profiler; ``Profiler(scheduler=...)`` also
accepts a ``(start, end)`` pair, ``None`` (record every step) or a callable.
"""

import operator
from typing import Callable, Sequence, Union

from ._enums import ProfilerState

__all__ = ["make_scheduler", "Scheduler", "SchedulerArg", "predictable", "steady_until"]

#: steady_until's answer for a state that never changes again.
FOREVER = 1 << 62

Scheduler = Callable[[int], ProfilerState]
SchedulerArg = Union[None, Scheduler, Sequence[int]]


def _count(where: str, name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= minimum, else ValueError naming the argument."""
    if not isinstance(value, bool):
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            if number >= minimum:
                return number
    raise ValueError(f"{where}: {name} must be an int >= {minimum}, got {value!r}")


class _PeriodicScheduler:
    """The scheduler make_scheduler returns: a picklable callable with a clear repr."""

    __slots__ = ("closed", "ready", "record", "repeat", "skip_first", "_period")

    def __init__(self, closed: int, ready: int, record: int, repeat: int, skip_first: int) -> None:
        self.closed = closed
        self.ready = ready
        self.record = record
        self.repeat = repeat
        self.skip_first = skip_first
        self._period = closed + ready + record

    def __call__(self, step: int) -> ProfilerState:
        if step < self.skip_first:
            return ProfilerState.CLOSED
        step -= self.skip_first
        if self.repeat > 0 and step // self._period >= self.repeat:
            return ProfilerState.CLOSED
        m = step % self._period
        if m < self.closed:
            return ProfilerState.CLOSED
        if m < self.closed + self.ready:
            return ProfilerState.READY
        if m < self._period - 1:
            return ProfilerState.RECORD
        return ProfilerState.RECORD_AND_RETURN

    def steady_until(self, step: int) -> int:
        """The first step after ``step`` whose state may differ from ``step``'s."""
        if step < self.skip_first:
            return self.skip_first
        step_in_run = step - self.skip_first
        if self.repeat > 0 and step_in_run // self._period >= self.repeat:
            return FOREVER  # CLOSED for good
        m = step_in_run % self._period
        cycle_start = step - m
        if m < self.closed:
            return cycle_start + self.closed
        if m < self.closed + self.ready:
            return cycle_start + self.closed + self.ready
        if m < self._period - 1:
            return cycle_start + self._period - 1  # the cycle's RECORD_AND_RETURN step
        return step + 1

    def __repr__(self) -> str:
        return (
            f"make_scheduler(closed={self.closed}, ready={self.ready}, record={self.record}, "
            f"repeat={self.repeat}, skip_first={self.skip_first})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _PeriodicScheduler):
            return NotImplemented
        return repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))


def make_scheduler(*, closed: int, ready: int, record: int, repeat: int = 0, skip_first: int = 0) -> Scheduler:
    """A periodic scheduler: ``closed`` steps off, ``ready`` steps armed, ``record`` steps recorded.

    The first ``skip_first`` steps are CLOSED; then the cycle
    ``closed + ready + record`` runs ``repeat`` times (0: forever). The last
    step of each cycle is RECORD_AND_RETURN, so every cycle delivers one
    trace to ``on_trace_ready``.

    Example: ``make_scheduler(closed=1, ready=1, record=4, repeat=3)``
    records steps 2-5, 8-11 and 14-17 and returns three times.

    Raises:
        ValueError: ``closed``, ``ready``, ``repeat`` or ``skip_first`` is
            negative or not an int, or ``record`` is not a positive int.
    """
    return _PeriodicScheduler(
        closed=_count("make_scheduler", "closed", closed, 0),
        ready=_count("make_scheduler", "ready", ready, 0),
        record=_count("make_scheduler", "record", record, 1),
        repeat=_count("make_scheduler", "repeat", repeat, 0),
        skip_first=_count("make_scheduler", "skip_first", skip_first, 0),
    )


def _default_state_scheduler(step: int) -> ProfilerState:
    """``scheduler=None``: record every step; the data comes at ``stop()``."""
    return ProfilerState.RECORD


def predictable(scheduler: Scheduler) -> bool:
    """Whether steady_until can see ahead for ``scheduler`` (profkit's own schedulers)."""
    return isinstance(scheduler, _PeriodicScheduler) or scheduler is _default_state_scheduler


def steady_until(scheduler: Scheduler, step: int) -> int:
    """The first step after ``step`` at which ``scheduler`` may give another state.

    Every step strictly between the two is in ``step``'s state, so
    ``Profiler.step()`` need not ask the scheduler for them. profkit's own
    schedulers know their periods; any other callable is asked every step
    (the answer is ``step + 1``).
    """
    if isinstance(scheduler, _PeriodicScheduler):
        return scheduler.steady_until(step)
    return FOREVER if scheduler is _default_state_scheduler else step + 1


def scheduler_from_argument(scheduler: SchedulerArg) -> Scheduler:
    """The scheduler a ``Profiler(scheduler=...)`` argument stands for.

    ``(start, end)`` records steps ``[start, end)`` once; ``None`` records
    every step; a callable is used as is.
    """
    if scheduler is None:
        return _default_state_scheduler
    if isinstance(scheduler, (tuple, list)):
        if len(scheduler) != 2:
            raise ValueError(
                f"Profiler: scheduler {scheduler!r} must be a (start, end) pair of step numbers, "
                "a callable step -> ProfilerState, or None"
            )
        start = _count("Profiler", "scheduler start", scheduler[0], 0)
        end = _count("Profiler", "scheduler end", scheduler[1], 0)
        if end <= start:
            raise ValueError(f"Profiler: scheduler {scheduler!r} must have end > start (it records steps [start, end))")
        return make_scheduler(
            closed=max(start - 1, 0), ready=1 if start >= 1 else 0, record=end - start, repeat=1
        )
    if callable(scheduler):
        return scheduler
    raise TypeError(
        f"Profiler: scheduler must be a (start, end) pair, a callable step -> ProfilerState, or None, "
        f"not {type(scheduler).__name__}"
    )
