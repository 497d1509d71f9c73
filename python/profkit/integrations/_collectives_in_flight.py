"""Asynchronous CPU collectives in flight: how long each was really under way.

An asynchronous call (``async_op=True``, isend/irecv, batch_isend_irecv)
returns at once, so its own event only spans the launch. For CPU tensors
(gloo) ``track()`` hands the call's futures to a daemon thread, "profkit:
collectives in flight", which waits for them in launch order and records a
second event, "<name> (in flight)", from when it picks the work up until
the work completes: the Distributed Summary's Overlap reads these lanes.

The thread waits on each work's future, never on the work itself: gloo's
send/recv works have no future and each completion wakes one waiter, so
waiting on them too would hang the caller's own wait (such calls get no
in-flight event).

Thread-safety: ``track()`` and ``wait_in_flight()`` may be called from any
thread; the waiter thread starts once, on first use, and lives until the
interpreter exits: an ``atexit`` handler ends it then (see ``_Waiter.stop``).
"""

import atexit
import os
import queue
import threading
from typing import Any, List, Optional, Sequence, Tuple

from .. import _C
from .._C import RecordEvent
from ._collective_calls import COMMUNICATION, annotate, annotate_failure

__all__ = ["IN_FLIGHT_SUFFIX", "IN_FLIGHT_THREAD_NAME", "WINDOW_END_WAIT_S", "track", "wait_in_flight", "finish_in_flight"]

IN_FLIGHT_SUFFIX = " (in flight)"
IN_FLIGHT_THREAD_NAME = "profkit: collectives in flight"

#: How long the end of a recording window waits for collectives in flight
#: (they normally completed already: the step waited for them). Longer waits
#: give up, and those in-flight events are left out of the window. A work
#: that outlasted one such wait (a peer that died) is not waited for again.
WINDOW_END_WAIT_S = 0.5

#: How long the interpreter's exit waits for the waiter thread to finish the
#: work it is on (normally none: windows drained it) before leaving it be.
EXIT_WAIT_S = 2.0

# Queued to end the waiter thread.
_STOP = object()


class _Waiter:
    """A daemon thread that waits for asynchronous CPU collectives in launch
    order and records how long each was under way."""

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._start_lock = threading.Lock()
        # The item the thread is waiting on now, and the one a drain gave up
        # on: while the thread is still stuck on that one, nothing queued
        # behind it can finish, so later drains return at once instead of
        # paying their whole timeout again at every window end.
        self._current: Any = None
        self._given_up: Any = None

    def forget_after_fork(self) -> None:
        """In a forked child: the thread is the parent's and does not run
        here. Without this the child's works would queue up for it forever,
        and every window end would wait WINDOW_END_WAIT_S for it in vain. The
        child starts its own thread on its first asynchronous collective."""
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._start_lock = threading.Lock()  # another parent thread may have held it at the fork
        self._current = None
        self._given_up = None

    def track(self, name: str, futures: List[Any], args: Sequence[Tuple[str, Any]]) -> None:
        if not futures:
            return
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    thread = threading.Thread(target=self._run, name=IN_FLIGHT_THREAD_NAME, daemon=True)
                    thread.start()
                    self._thread = thread
        self._queue.put((name + IN_FLIGHT_SUFFIX, futures, args))

    def drain(self, timeout: float, skip_stuck: bool = False) -> bool:
        """Waits until every work tracked so far has been waited for. True if
        it finished in time. With ``skip_stuck``, False at once while the
        thread is still on the work an earlier drain timed out on."""
        if self._thread is None:
            return True
        stuck = self._given_up
        if stuck is not None:
            if stuck is not self._current:
                self._given_up = None  # it completed after all: wait as usual again
            elif skip_stuck:
                return False
        done = threading.Event()
        self._queue.put(done)
        if done.wait(timeout):
            return True
        self._given_up = self._current  # None if the thread was between works: the next drain waits again
        return False

    def stop(self, timeout: float) -> None:
        """Ends the waiter thread once what is queued before is done, waiting
        up to ``timeout`` seconds for it. Called at interpreter exit: a daemon
        thread still in torch's C++ code (a future's wait) when the
        interpreter finalizes is ended by ``pthread_exit`` as it takes the GIL
        back, and an unwind through C++ frames there can abort the process
        ("terminate called without an active exception"). A later ``track()``
        starts a new thread."""
        with self._start_lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout)

    def _run(self) -> None:
        try:
            _C.set_thread_name(IN_FLIGHT_THREAD_NAME)
        except RuntimeError:  # pragma: no cover - naming is cosmetic
            pass
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            name, futures, args = item
            self._current = item
            event = RecordEvent(name, COMMUNICATION)
            event.begin()
            try:
                annotate(args)
                failure: Optional[BaseException] = None
                for future in futures:
                    try:
                        future.wait()  # any number of threads may wait on a future
                    except Exception as error:  # the caller sees it on its own wait; the event notes it
                        failure = failure or error
                if failure is not None:
                    annotate_failure(failure)
                del failure
            finally:
                event.end()
                self._current = None
            del futures, item


_waiter = _Waiter()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_waiter.forget_after_fork)
atexit.register(_waiter.stop, EXIT_WAIT_S)


def track(event_name: str, result: Any, args: Sequence[Tuple[str, Any]]) -> None:
    """Records "<event_name> (in flight)" for the works a call returned
    (``result``: one work or a list), with the call's event arguments."""
    _waiter.track(event_name, _futures(result), args)


def _futures(result: Any) -> List[Any]:
    """The futures of a call's works. Never the works themselves: waiting
    twice on a gloo send/recv work (ours and the caller's) hangs the caller,
    since each completion wakes one waiter. Works without a future (gloo's
    send/recv) are not tracked."""
    futures = []
    for work in result if isinstance(result, list) else [result]:
        try:
            futures.append(work.get_future())
        except Exception:  # "getFuture not implemented": no in-flight event for it
            pass
    return futures


def wait_in_flight(timeout: float = 10.0) -> bool:
    """Blocks until profkit has seen every asynchronous collective launched so
    far complete and recorded its in-flight event; False if ``timeout``
    seconds passed first. The Profiler does this (up to
    WINDOW_END_WAIT_S) before each recording window closes, but skips it
    while a work that outlasted an earlier wait is still pending; this call
    waits for it all the same."""
    return _waiter.drain(timeout)


def finish_in_flight(_profiler: object = None) -> None:
    """The collect hook that lets in-flight events land in the window."""
    _waiter.drain(WINDOW_END_WAIT_S, skip_stuck=True)
