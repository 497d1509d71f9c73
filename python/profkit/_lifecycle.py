"""The Profiler's state machine: what each scheduler transition does (SPEC §3).

``plan(previous, current)`` turns a transition between two steps' states
into engine actions; the Profiler carries them out. Kept free of side
effects so that every row of the table is tested on its own.

| from -> to                          | action                                      |
|-------------------------------------|---------------------------------------------|
| CLOSED -> READY                     | arm the tracers (engine READY)              |
| CLOSED/READY -> RECORD(_AND_RETURN) | start recording (a new window)              |
| READY -> CLOSED                     | disarm; nothing was recorded                |
| RECORD -> RECORD(_AND_RETURN)       | nothing (the window goes on)                |
| RECORD -> CLOSED / READY            | Paddle drops the data. We close the window, |
|                                     | collect, deliver it, and warn.              |
| RECORD_AND_RETURN -> any            | close the window, collect, deliver; then    |
|                                     | record again if the next state records      |
"""

from typing import NamedTuple, Optional

from ._enums import ProfilerState

CLOSED = ProfilerState.CLOSED
READY = ProfilerState.READY
RECORD = ProfilerState.RECORD
RECORD_AND_RETURN = ProfilerState.RECORD_AND_RETURN


class Transition(NamedTuple):
    """Engine actions for one step boundary, in order: enter ``first``, collect
    and deliver (when ``deliver``), then enter ``then``."""

    first: Optional[ProfilerState]  # engine state to enter first (None: leave it)
    deliver: bool  # collect what was recorded and hand it to on_trace_ready
    improper: bool  # RECORD left without RECORD_AND_RETURN: deliver with a warning
    then: Optional[ProfilerState]  # engine state to enter after collecting (None: none)


_NOTHING = Transition(None, False, False, None)


def plan(previous: ProfilerState, current: ProfilerState) -> Transition:
    """The engine actions for moving from ``previous`` to ``current``."""
    if not previous.is_recording:
        if previous is current:
            return _NOTHING
        return Transition(current, False, False, None)
    if previous is RECORD and current.is_recording:
        # The window goes on; the engine learns the intent (no window change).
        return _NOTHING if current is RECORD else Transition(current, False, False, None)
    # The window ends here. Closing to READY (not CLOSED) keeps the tracers
    # armed when recording goes on or the next state is READY.
    first = CLOSED if current is CLOSED else READY
    then = current if current.is_recording else None
    return Transition(first, True, previous is RECORD, then)


def plan_stop(current: ProfilerState) -> Transition:
    """What ``stop()`` does from ``current``: a recording window is delivered
    (RECORD counts as RECORD_AND_RETURN here, without a warning)."""
    return Transition(CLOSED, current.is_recording, False, None)
