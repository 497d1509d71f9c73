"""The in-flight waiter: a collective that never completes costs one window-end wait, not one per window."""

import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

from profkit.integrations import _collectives_in_flight as in_flight  # noqa: E402


class NeverSet:
    """A torch future nobody completes (a peer that died), which says when the waiter thread starts waiting on it."""

    def __init__(self):
        self.future = torch.futures.Future()
        self.picked_up = threading.Event()

    def wait(self):
        self.picked_up.set()
        return self.future.wait()


@pytest.fixture
def waiter(monkeypatch):
    """A waiter of the test's own, so that a stuck work never blocks the process-wide one."""
    fresh = in_flight._Waiter()
    monkeypatch.setattr(in_flight, "_waiter", fresh)
    monkeypatch.setattr(in_flight, "WINDOW_END_WAIT_S", 0.01)
    return fresh


def test_a_window_end_waits_once_for_a_collective_that_never_completes(waiter):
    stuck = NeverSet()
    waiter.track("gloo:all_reduce", [stuck], [])
    stuck.picked_up.wait()
    in_flight.finish_in_flight()  # the first window end waits, and gives up
    queued = waiter._queue.qsize()
    in_flight.finish_in_flight()  # later window ends: nothing can finish behind it, so no wait at all
    in_flight.finish_in_flight()
    assert waiter._queue.qsize() == queued  # no wait was queued behind the stuck work
    assert waiter._given_up is waiter._current is not None
    assert not in_flight.wait_in_flight(0.01)  # an explicit wait still waits (and still times out)
    assert waiter._queue.qsize() == queued + 1

    stuck.future.set_result(None)  # the peer came back
    assert waiter.drain(None)  # returns once the thread is past the work (it may not have woken yet)
    assert waiter.drain(None, skip_stuck=True)  # window ends wait as usual again
    assert waiter._given_up is None and waiter._current is None


def test_a_work_that_finishes_is_waited_for():
    waiter = in_flight._Waiter()
    done = torch.futures.Future()
    done.set_result(None)
    waiter.track("gloo:broadcast", [done], [])
    assert waiter.drain(None, skip_stuck=True)
    assert waiter._given_up is None


def test_stop_ends_the_thread_after_the_work_queued_before_it():
    waiter = in_flight._Waiter()
    done = torch.futures.Future()
    waiter.track("gloo:broadcast", [done], [])
    thread = waiter._thread
    stopper = threading.Thread(target=waiter.stop, args=(None,))
    stopper.start()
    stopper.join(0.05)
    assert thread.is_alive()  # still on the queued work, which has not completed
    done.set_result(None)
    stopper.join()
    assert not thread.is_alive()
    assert waiter._thread is None

    again = torch.futures.Future()  # a later collective starts a new thread
    again.set_result(None)
    waiter.track("gloo:broadcast", [again], [])
    assert waiter._thread is not None and waiter._thread is not thread
    assert waiter.drain(None)
    waiter.stop(None)


def test_the_waiter_thread_has_ended_before_the_interpreter_finalizes():
    # A daemon thread still in a future's wait when the interpreter finalizes
    # can abort the process; the handler registered first runs last, after
    # profkit's own, and lists the threads still alive then.
    script = f"""
import atexit, threading
atexit.register(lambda: print("alive at exit:", sorted(t.name for t in threading.enumerate())))
import torch
from profkit.integrations import _collectives_in_flight as in_flight
done = torch.futures.Future()
done.set_result(None)
in_flight._waiter.track("gloo:broadcast", [done], [])
assert in_flight.wait_in_flight(10.0)
print("started:", in_flight._waiter._thread.name == {in_flight.IN_FLIGHT_THREAD_NAME!r})
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "started: True" in run.stdout
    assert "alive at exit: ['MainThread']" in run.stdout, run.stdout
