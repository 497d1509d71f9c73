"""Long-lived use of a Profiler: threads that come and go inside a window,
hundreds of windows in one process, interrupts inside a window."""

import os
import threading
import warnings

import pytest

import profkit
from profkit import Profiler, ProfilerWarning, RecordEvent, _C, make_scheduler


@pytest.fixture
def engine_memory_cap():
    """Puts the engine's memory cap back after the test."""
    before = _C.get_memory_cap()
    yield
    _C.set_memory_cap(before)


def _brief_thread():
    with RecordEvent("brief"):
        pass


def test_threads_that_come_and_go_in_a_window_keep_every_event_under_a_small_cap(engine_memory_cap):
    # Each exited thread used to hold its whole 256 KiB record buffer until
    # the window was collected: 8 of them filled this 2 MiB cap (4096 the
    # default 1 GiB one) and the events of the later threads were dropped.
    results = []
    keep = lambda p: results.append(p.profiler_result)  # noqa: E731
    prof = Profiler(scheduler=None, memory_cap=2 * 1024 * 1024, on_trace_ready=keep)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)  # a window that lost events warns
        with prof:
            for _ in range(60):
                thread = threading.Thread(target=_brief_thread)
                thread.start()
                thread.join()
            prof.step()
    (result,) = results
    assert result.info["dropped_events"] == 0
    assert sum(1 for name in result.events["name"] if name == "brief") == 60


def test_hundreds_of_windows_leave_no_files_open_and_give_their_memory_back(tmp_path):
    delivered = []

    def on_trace_ready(prof):
        profkit.export_protobuf(str(tmp_path))(prof)
        delivered.append(prof.profiler_result.info["step_count"])

    fds = []
    memory_before = _C.counters()["memory_used"]  # buffers of threads that live on (earlier tests')
    with Profiler(scheduler=make_scheduler(closed=1, ready=0, record=1), on_trace_ready=on_trace_ready) as prof:
        for step in range(400):
            with RecordEvent("work"):
                pass
            if step % 4 == 0:
                thread = threading.Thread(target=_brief_thread)
                thread.start()
                thread.join()
            prof.step()
            if step % 100 == 50:
                fds.append(len(os.listdir("/proc/self/fd")))
    assert len(delivered) == 200 and set(delivered) == {1}
    assert len(os.listdir(tmp_path)) == 200
    assert len(set(fds)) == 1  # no descriptor kept per window
    # Profiling is over: at most the buffer this thread still writes to is kept.
    assert _C.counters()["memory_used"] <= memory_before + 256 * 1024


def test_a_keyboard_interrupt_inside_the_with_block_still_delivers_the_window():
    results = []
    with pytest.raises(KeyboardInterrupt):
        with Profiler(scheduler=(1, 10), on_trace_ready=lambda p: results.append(p.profiler_result)) as prof:
            for step in range(5):
                with RecordEvent("work"):
                    if step == 3:
                        raise KeyboardInterrupt
                prof.step()
    (result,) = results
    assert result.steps == [1, 2, 3]
    assert Profiler.active() is None and _C.get_state() == 0
    assert prof.profiler_result is result  # prof.summary() works on it


def _interrupt_once(monkeypatch, module, name, when):
    """Makes module.name raise KeyboardInterrupt the first time when(*args) holds."""
    original = getattr(module, name)
    fired = []

    def interrupting(*args, **kwargs):
        if not fired and when(*args):
            fired.append(True)
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupting)
    return fired


@pytest.mark.parametrize("where", ["closing the window", "after the collect"])
def test_a_keyboard_interrupt_while_step_closes_a_window_loses_nothing(monkeypatch, where):
    # Ctrl-C inside step() as it closed the window of steps 1-2: the window
    # was dropped (in the engine, or collected and not yet delivered), and
    # stop() even warned that nothing had been recorded.
    from profkit import _window_listeners
    from profkit import profiler as profiler_module

    if where == "closing the window":
        fired = _interrupt_once(
            monkeypatch, _window_listeners, "notify", lambda p, state: state is profkit.ProfilerState.CLOSED
        )
    else:
        fired = _interrupt_once(monkeypatch, profiler_module, "ProfilerResult", lambda result: True)
    results = []
    scheduler = make_scheduler(closed=1, ready=0, record=2, repeat=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)  # no "never reached RECORD"
        with pytest.raises(KeyboardInterrupt):
            with Profiler(scheduler=scheduler, on_trace_ready=lambda p: results.append(p.profiler_result)) as prof:
                for _ in range(5):
                    with RecordEvent("work"):
                        pass
                    prof.step()
    assert fired
    (result,) = results
    assert result.steps == [1, 2]
    assert sorted(set(result.events["name"])) == ["ProfileStep#1", "ProfileStep#2", "work"]
    assert Profiler.active() is None and _C.get_state() == 0


def test_a_thread_that_filled_the_cap_in_one_window_leaves_room_for_others_in_the_next(engine_memory_cap):
    # Back-to-back windows keep the engine's buffers for the next window; all
    # of them used to stay with the thread that had filled them, so that any
    # other thread's events were dropped in every later window.
    results = []
    done, release = threading.Event(), threading.Event()

    def busy_then_idle():
        for _ in range(100000):  # past the 2 MiB cap
            with RecordEvent("busy"):
                pass
        done.set()
        release.wait()

    def few():
        for _ in range(100):
            with RecordEvent("few"):
                pass

    keep = lambda p: results.append(p.profiler_result)  # noqa: E731
    scheduler = make_scheduler(closed=0, ready=1, record=1, repeat=2)
    busy = threading.Thread(target=busy_then_idle)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilerWarning)  # the first window lost events
        with Profiler(scheduler=scheduler, memory_cap=2 * 1024 * 1024, on_trace_ready=keep) as prof:
            prof.step()  # READY -> RECORD
            busy.start()
            done.wait()
            prof.step()  # the first window ends; READY
            prof.step()  # RECORD
            thread = threading.Thread(target=few)
            thread.start()
            thread.join()
            prof.step()
    release.set()
    busy.join()
    first, second = results
    assert first.info["dropped_events"] > 0
    assert second.info["dropped_events"] == 0
    assert sum(1 for name in second.events["name"] if name == "few") == 100


_EXIT_WITHOUT_STOP = """
import sys, threading, time, warnings
import profkit
from profkit import RecordEvent

if sys.argv[2] == "warnings as errors":
    warnings.simplefilter("error", profkit.ProfilerWarning)

prof = profkit.Profiler(scheduler=(1, 100), on_trace_ready=profkit.export_protobuf(sys.argv[1]))
prof.start()
for _ in range(3):
    with RecordEvent("work"):
        pass
    prof.step()
if sys.argv[2] == "daemon":  # keeps the Profiler alive through shutdown
    threading.Thread(target=lambda p=prof: time.sleep(600), daemon=True).start()
"""


@pytest.mark.parametrize("keeper", ["none", "daemon", "warnings as errors"])
def test_a_profiler_still_started_at_exit_is_stopped_and_its_window_delivered(tmp_path, keeper):
    # A script that never called stop() lost its window: discarded when the
    # Profiler was collected at shutdown, silently when a daemon thread held
    # it, and when the warning about it was raised as an error (-W error).
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _EXIT_WITHOUT_STOP, str(tmp_path), keeper], capture_output=True, text=True, timeout=120
    )
    assert "exiting with a Profiler started (at step 3)" in done.stderr
    assert done.returncode == 0, done.stderr
    (trace,) = tmp_path.glob("*.pktrace")
    assert profkit.load_profiler_result(str(trace)).steps == [1, 2, 3]
