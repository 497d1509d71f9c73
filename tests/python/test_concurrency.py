"""The Python API under concurrency and interruption: many threads recording
at once, thread names, a Profiler driven from several threads, signal
handlers and Ctrl-C (KeyboardInterrupt) landing inside start/step/stop, and
multiprocessing children while the parent profiles.

Every test synchronizes with Events and joins, never with sleeps."""

import contextlib
import io
import json
import multiprocessing
import os
import threading

import pytest

import profkit
from profkit import Profiler, RecordEvent, _C, _lifecycle, _rank, _window_listeners
from profkit import timer as timer_module


class Windows:
    """on_trace_ready that keeps each delivered window."""

    def __init__(self):
        self.results = []

    def __call__(self, prof):
        self.results.append(prof.profiler_result)

    @property
    def steps(self):
        return [r.steps for r in self.results]


def quiet(function, *args):
    """Calls function(*args) without the Perf Summary stop() prints."""
    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args)


def thread_names(result):
    return {t["tid"]: t["name"] for t in result.threads}


def assert_engine_free():
    """No Profiler holds the engine: a new one starts, records its own steps only, and stops."""
    assert Profiler.active() is None
    assert _C.get_state() == 0
    windows = Windows()
    prof = Profiler(scheduler=(1, 3), on_trace_ready=windows)
    quiet(prof.start)
    for _ in range(4):
        prof.step()
    quiet(prof.stop)
    assert windows.steps == [[1, 2]]


# ---- threads -----------------------------------------------------------------------
def test_many_threads_record_on_their_own_lanes_in_every_window():
    n_threads, per_step = 4, 5
    windows = Windows()
    prof = Profiler(scheduler=profkit.make_scheduler(closed=1, ready=0, record=2, repeat=3), on_trace_ready=windows)
    native = {}
    go = [threading.Event() for _ in range(n_threads)]
    done = [threading.Event() for _ in range(n_threads)]
    stop = threading.Event()

    @RecordEvent("inner")
    def inner():
        pass

    def worker(k):
        native[k] = threading.get_native_id()
        while True:
            go[k].wait()
            go[k].clear()
            if stop.is_set():
                return
            for _ in range(per_step):
                with RecordEvent(f"outer{k}"):
                    inner()
            done[k].set()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    quiet(prof.start)
    for _ in range(9):
        for k in range(n_threads):  # every worker records whole ranges inside this step
            done[k].clear()
            go[k].set()
        for k in range(n_threads):
            done[k].wait()
        prof.step()
    quiet(prof.stop)
    stop.set()
    for k in range(n_threads):
        go[k].set()
    for t in threads:
        t.join()

    assert windows.steps == [[1, 2], [4, 5], [7, 8]]
    for result in windows.results:
        ev = result.events
        for k in range(n_threads):
            outer = ev[ev["name"] == f"outer{k}"]
            assert len(outer) == 2 * per_step  # two steps per window, nothing from another window
            assert set(outer["tid"].tolist()) == {native[k]}
        inner_events = ev[ev["name"] == "inner"]
        assert len(inner_events) == 2 * per_step * n_threads
        # Each decorated call nests in its own thread's range.
        for i in map(int, (ev["name"] == "inner").nonzero()[0]):
            parent = ev[ev["parent"][i]]
            assert parent["tid"] == ev[i]["tid"] and parent["name"] == f"outer{native_index(native, ev[i]['tid'])}"


def native_index(native, tid):
    return next(k for k, v in native.items() if v == tid)


def test_threads_are_named_after_their_threading_names():
    # CPython 3.11 does not give threading.Thread names to the OS: the engine
    # named every Python thread after the process ("python3").
    windows = Windows()
    prof = Profiler(scheduler=profkit.make_scheduler(closed=0, ready=0, record=1, repeat=2), on_trace_ready=windows)
    ready, recorded = threading.Event(), threading.Event()
    native = {}

    def record(label):
        native[label] = threading.get_native_id()
        with RecordEvent(label):
            pass

    def early():  # started before the Profiler, records in both windows, renamed in between
        native["early"] = threading.get_native_id()
        ready.set()
        for _ in range(2):
            recorded.wait()
            recorded.clear()
            with RecordEvent("early"):
                pass
            ready.set()

    def explicit():  # a name the program gave the engine stays
        native["explicit"] = threading.get_native_id()
        _C.set_thread_name("my loader")
        with RecordEvent("explicit"):
            pass

    def loading():  # a thread that only marks data loading
        native["loading"] = threading.get_native_id()
        with profkit.dataloader_range():
            pass

    early_thread = threading.Thread(target=early, name="early-worker")
    early_thread.start()
    ready.wait()
    ready.clear()
    quiet(prof.start)
    recorded.set()
    ready.wait()
    ready.clear()
    for target, args, name in ((record, ("late",), "late-worker"), (explicit, (), "ignored"), (loading, (), "loader")):
        t = threading.Thread(target=target, args=args, name=name)
        t.start()
        t.join()
    prof.step()  # the first window ends
    early_thread.name = "renamed-worker"
    recorded.set()
    ready.wait()
    prof.step()
    quiet(prof.stop)
    early_thread.join()

    first, second = (thread_names(r) for r in windows.results)
    assert first[native["early"]] == "early-worker"
    assert first[native["late"]] == "late-worker"
    assert first[native["explicit"]] == "my loader"
    assert first[native["loading"]] == "loader"
    assert second[native["early"]] == "renamed-worker"
    # The main thread keeps the OS name while threading calls it MainThread.
    assert first[threading.get_native_id()] != "MainThread"


def test_profiler_started_on_one_thread_stepped_and_stopped_on_another():
    windows = Windows()
    prof = Profiler(scheduler=(1, 3), on_trace_ready=windows)
    quiet(prof.start)
    native = []

    def loop():
        native.append(threading.get_native_id())
        for _ in range(4):
            with RecordEvent("work"):
                pass
            prof.step()
        quiet(prof.stop)

    t = threading.Thread(target=loop)
    t.start()
    t.join()
    assert windows.steps == [[1, 2]]
    ev = windows.results[0].events
    assert set(ev["tid"].tolist()) == set(native)  # steps are on the thread that stepped
    assert Profiler.active() is None


def test_second_profiler_refused_while_one_records_on_another_thread():
    first = Profiler(scheduler=None, on_trace_ready=lambda p: None)
    quiet(first.start)
    errors = []

    def other():
        try:
            Profiler(scheduler=None, on_trace_ready=lambda p: None).start()
        except RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1 and "another Profiler is active" in errors[0]
    first.step()
    quiet(first.stop)
    assert first.profiler_result.steps == [0, 1]


# ---- stop() in the middle of step() --------------------------------------------------
def test_stop_during_step_takes_effect_when_step_returns(monkeypatch):
    # A signal handler (SIGTERM flushing the trace) runs between any two
    # bytecodes of the loop, step() included. Stopping there used to let the
    # rest of step() put the stopped engine back in READY or RECORD for no one,
    # and every later Profiler was refused ("the engine is already in state ...").
    windows = Windows()
    prof = Profiler(scheduler=(1, 3), on_trace_ready=windows)
    real_plan = _lifecycle.plan

    def plan_then_signal(previous, current):
        transition = real_plan(previous, current)
        if current is profkit.ProfilerState.RECORD_AND_RETURN:
            quiet(prof.stop)  # what the signal handler does, mid-step
        return transition

    monkeypatch.setattr(_lifecycle, "plan", plan_then_signal)
    quiet(prof.start)
    prof.step()
    quiet(prof.step)  # steps 1 -> 2: the "signal" comes in the middle
    assert not prof._started and Profiler.active() is None
    assert windows.steps == [[1, 2]]  # the window, up to the step that was under way, delivered once
    with pytest.raises(RuntimeError, match="not started"):
        prof.step()
    monkeypatch.setattr(_lifecycle, "plan", real_plan)
    assert_engine_free()


def test_stop_from_on_trace_ready_still_stops_at_once():
    windows = Windows()

    def stop_here(prof):
        windows(prof)
        prof.stop()

    prof = Profiler(scheduler=(1, 3), on_trace_ready=stop_here)
    quiet(prof.start)
    for _ in range(3):
        quiet(prof.step)
    assert windows.steps == [[1, 2]] and not prof._started
    assert_engine_free()


# ---- KeyboardInterrupt inside start / step / stop ---------------------------------------
def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_keyboard_interrupt_in_start_leaves_no_claim_on_the_engine():
    # A Ctrl-C right before the run began (after the engine was claimed) left
    # a Profiler that was not started holding the engine: stop() did nothing
    # and every later Profiler was refused, the engine recording meanwhile.
    prof = Profiler(scheduler=None, on_trace_ready=lambda p: None)
    prof._begin_run = interrupt
    with pytest.raises(KeyboardInterrupt):
        prof.start()
    assert not prof._started
    assert_engine_free()


def test_keyboard_interrupt_in_stop_releases_the_engine():
    prof = Profiler(scheduler=None, on_trace_ready=lambda p: None)
    quiet(prof.start)
    prof.step()
    prof._timer.stop = interrupt  # the Ctrl-C lands early in stop()
    with pytest.raises(KeyboardInterrupt):
        prof.stop()
    assert_engine_free()


def test_keyboard_interrupt_mid_step_delivers_the_window_at_stop(monkeypatch):
    # Interrupted between moving to the next step's state and closing the
    # window, step() left the engine recording; stop() planned from the
    # Profiler's state (CLOSED), so the window was lost and its events opened
    # the next Profiler's window.
    windows = Windows()
    prof = Profiler(scheduler=(1, 3), on_trace_ready=windows)
    real_plan = _lifecycle.plan

    def plan(previous, current):
        if previous is profkit.ProfilerState.RECORD_AND_RETURN:
            raise KeyboardInterrupt
        return real_plan(previous, current)

    monkeypatch.setattr(_lifecycle, "plan", plan)
    with pytest.raises(KeyboardInterrupt):
        with contextlib.redirect_stdout(io.StringIO()):
            with prof:
                for _ in range(4):
                    prof.step()
    monkeypatch.setattr(_lifecycle, "plan", real_plan)
    assert windows.steps == [[1, 2]]
    assert_engine_free()


def interrupt_once(monkeypatch, module, name, when=lambda *args: True):
    """Makes module.name raise KeyboardInterrupt at its first call for which ``when(*args)`` holds."""
    real = getattr(module, name)
    armed = [True]

    def maybe_interrupt(*args, **kwargs):
        if armed[0] and when(*args):
            armed[0] = False
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, maybe_interrupt)


def interrupt_as_it_returns(monkeypatch, module, name):
    """Makes module.name's first call raise KeyboardInterrupt after it has
    done its work: where CPython runs the handler of a signal that arrived
    during a call into C (a Ctrl-C during a long collect)."""
    real = getattr(module, name)
    armed = [True]

    def call_then_interrupt(*args, **kwargs):
        result = real(*args, **kwargs)
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(module, name, call_then_interrupt)


def step_through_interruptions(prof, steps):
    """A loop that catches a Ctrl-C and goes on (a notebook cell run again); the interruptions seen."""
    interruptions = 0
    quiet(prof.start)
    for _ in range(steps):
        try:
            prof.step()
        except KeyboardInterrupt:
            interruptions += 1
    quiet(prof.stop)
    return interruptions


RECORD = profkit.ProfilerState.RECORD


@pytest.mark.parametrize(
    "where, windows_expected",
    [
        # Entering the first window (CLOSED -> RECORD at step 1): step 1 goes
        # unrecorded, the window opens at step 2.
        ("entering a window", [[2], [4, 5], [7, 8]]),
        # Closing it, before the engine left RECORD_AND_RETURN: the window
        # goes on through the step the interruption kept from beginning (its
        # events are in it, with no ProfileStep) and closes at the next.
        ("before the collect", [[1, 2], [4, 5], [7, 8]]),
        # Closed in the engine but not collected: collected while the
        # interruption is handled, delivered by the next step().
        ("in the collect", [[1, 2], [4, 5], [7, 8]]),
        # The collect done, interrupted as it returned (a Ctrl-C during a
        # long collect): the window it took from the engine was lost, and an
        # empty one collected again in its place.
        ("as the collect returns", [[1, 2], [4, 5], [7, 8]]),
    ],
)
def test_a_step_interrupted_anywhere_lets_the_loop_go_on(monkeypatch, where, windows_expected):
    # A Ctrl-C inside step() that the loop caught left no step open in the
    # engine: every later step() raised "pk_step_end: no step is open" and
    # no window was delivered again.
    if where == "entering a window":
        interrupt_once(monkeypatch, _window_listeners, "notify", lambda prof, state: state is RECORD)
    elif where == "before the collect":
        interrupt_once(monkeypatch, _window_listeners, "notify_collect")
    elif where == "in the collect":
        interrupt_once(monkeypatch, _rank, "apply_rank", lambda: Profiler.active()._collect_owed)
    else:
        interrupt_as_it_returns(monkeypatch, _C, "collect")
    windows = Windows()
    prof = Profiler(scheduler=profkit.make_scheduler(closed=1, ready=0, record=2), on_trace_ready=windows)
    assert step_through_interruptions(prof, 9) == 1  # stops at step 9, CLOSED
    assert windows.steps == windows_expected
    assert_engine_free()


def test_a_window_collected_before_an_interruption_is_delivered_first(monkeypatch):
    # Back-to-back windows: interrupted while entering the next one, right
    # after collecting [0, 1]. That window reaches on_trace_ready at the next
    # step(), before the windows after it.
    collected = []
    interrupt_once(monkeypatch, _window_listeners, "notify", lambda prof, state: state is RECORD and collected)
    interrupt_once(monkeypatch, _C, "collect", lambda *args: collected.append(1) and False)
    windows = Windows()
    prof = Profiler(scheduler=profkit.make_scheduler(closed=0, ready=0, record=2), on_trace_ready=windows)
    assert step_through_interruptions(prof, 7) == 1  # stop() delivers [6, 7]
    assert windows.steps == [[0, 1], [3], [4, 5], [6, 7]]
    assert_engine_free()


def test_ctrl_c_storms_inside_step_never_leave_the_profiler_stuck():
    # Interrupts at arbitrary points of profkit's own code (SIGALRM every
    # 0.37 ms, raising only while a profkit frame runs), hundreds of times:
    # every step() works or raises KeyboardInterrupt, never an engine error
    # ("pk_step_end: no step is open" followed every later step()), and
    # stop() frees the engine.
    import signal

    package = os.path.dirname(profkit.__file__)
    armed, interrupts, errors = [False], [0], []

    def interrupt_inside_profkit(signum, frame):
        if armed[0] and frame is not None and frame.f_code.co_filename.startswith(package):
            interrupts[0] += 1
            raise KeyboardInterrupt

    prof = Profiler(scheduler=profkit.make_scheduler(closed=1, ready=0, record=1), on_trace_ready=Windows())
    previous = signal.signal(signal.SIGALRM, interrupt_inside_profkit)
    try:
        quiet(prof.start)
        signal.setitimer(signal.ITIMER_REAL, 0.0003, 0.00037)
        for _ in range(20000):
            if interrupts[0] >= 300:
                break
            armed[0] = True
            try:
                prof.step()
            except KeyboardInterrupt:
                pass
            except RuntimeError as e:
                errors.append(str(e))
            finally:
                armed[0] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    quiet(prof.stop)
    assert interrupts[0] > 0 and errors == [], (interrupts, errors[:3])
    assert_engine_free()


class InterruptingList(list):
    """A list whose next append raises KeyboardInterrupt (once)."""

    armed = True

    def append(self, item):
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt
        super().append(item)


def test_step_timer_keyboard_interrupt_between_appends_keeps_it_consistent(monkeypatch):
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(timer_module, "clock_ns", lambda: next(ticks))
    monkeypatch.setattr(timer_module, "reader_time_ns", lambda: 0)
    timer = timer_module.StepTimer(warmup_steps=0)
    timer.start()
    timer.step(4)
    timer._reader_ns = InterruptingList(timer._reader_ns)  # the second of three appends
    with pytest.raises(KeyboardInterrupt):
        timer.step(4)
    timer.step(4)
    assert "ips" in timer.step_info()  # raised ValueError (lists of different lengths)
    summary = timer.summary()
    assert summary.steps == timer.steps == 2


# ---- processes ------------------------------------------------------------------------
def _record_in_child(_):
    with RecordEvent("child_event"):
        pass
    return os.getpid()


def _profile_in_child(directory):
    prof = Profiler(scheduler=None, on_trace_ready=profkit.export_chrome_tracing(directory))
    with contextlib.redirect_stdout(io.StringIO()):
        with prof:
            with RecordEvent("child_own"):
                pass
            prof.step()
    return os.getpid()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_children_leave_the_parents_trace_alone(tmp_path, method):
    parent_dir, child_dir = tmp_path / "parent", tmp_path / "children"
    context = multiprocessing.get_context(method)
    prof = Profiler(scheduler=None, on_trace_ready=profkit.export_chrome_tracing(str(parent_dir)))
    with contextlib.redirect_stdout(io.StringIO()):
        with prof:
            with RecordEvent("parent_before"):
                pass
            with context.Pool(2) as pool:
                plain = pool.map(_record_in_child, range(2))
                own = pool.map(_profile_in_child, [str(child_dir)] * 2)
            with RecordEvent("parent_after"):
                pass
            prof.step()
    (parent_file,) = parent_dir.iterdir()
    trace = json.loads(parent_file.read_text())
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert {e["pid"] for e in slices} == {os.getpid()}
    assert {e["name"] for e in slices} >= {"parent_before", "parent_after"}
    assert "child_event" not in {e["name"] for e in slices}
    assert os.getpid() not in plain + own
    child_files = sorted(child_dir.iterdir())
    assert len(child_files) == len(own)  # one file per Profiler run in a child (a worker may run both)
    for f in child_files:
        names = {e["name"] for e in json.loads(f.read_text())["traceEvents"] if e.get("ph") == "X"}
        assert "child_own" in names and "parent_before" not in names


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_fork_while_another_thread_holds_a_range_open():
    prof = Profiler(scheduler=None, on_trace_ready=lambda p: None)
    opened, release = threading.Event(), threading.Event()

    def holder():
        with RecordEvent("held"):
            opened.set()
            release.wait()

    quiet(prof.start)
    t = threading.Thread(target=holder)
    t.start()
    opened.wait()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child goes on with the parent's code: its own session
        code = 1
        try:
            with RecordEvent("child"):
                pass
            prof.step()
            quiet(prof.stop)
            names = set(prof.profiler_result.events["name"].tolist())
            code = 0 if "child" in names and "held" not in names else 2
        finally:
            os.write(write_end, bytes([code]))
            os._exit(0)
    os.close(write_end)
    child_code = os.read(read_end, 1)
    os.close(read_end)
    os.waitpid(pid, 0)
    release.set()
    t.join()
    prof.step()
    quiet(prof.stop)
    assert child_code == bytes([0])
    names = set(prof.profiler_result.events["name"].tolist())
    assert "held" in names and "child" not in names
