"""How a recording window reaches on_trace_ready (SPEC §3): exactly once, even
when a warning raised as an error or a Ctrl-C (KeyboardInterrupt) comes while
it is delivered; before the next window opens; and stop() from a signal
handler that comes as step() begins."""

import warnings

import pytest

from profkit import Profiler, ProfilerState, ProfilerWarning, RecordEvent, _C, make_scheduler
from profkit import profiler as profiler_module

C, Y, R, A = ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN


class Windows:
    """on_trace_ready that keeps each delivered window."""

    def __init__(self):
        self.results = []

    def __call__(self, prof):
        self.results.append(prof.profiler_result)

    @property
    def steps(self):
        return [r.steps for r in self.results]


def interrupt_once(monkeypatch, name):
    """Makes profiler_module.name raise KeyboardInterrupt at its first call
    (where a Ctrl-C lands between two bytecodes of profkit's own code)."""
    real = getattr(profiler_module, name)
    armed = [True]

    def maybe_interrupt(*args, **kwargs):
        if armed[0]:
            armed[0] = False
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(profiler_module, name, maybe_interrupt)


def step_catching(prof, steps, exception):
    """A loop that catches ``exception`` from step() and goes on; how many it caught."""
    caught = 0
    for _ in range(steps):
        try:
            prof.step()
        except exception:
            caught += 1
    return caught


def assert_in_step(prof, state):
    """The Profiler, its step and the engine agree: ``state`` at prof.step_num."""
    assert prof.current_state is state and _C.get_state() == state.value
    assert _C.current_step() == prof.step_num


def assert_engine_free():
    """No Profiler holds the engine: a new one starts, records its own steps only, and stops."""
    assert Profiler.active() is None and _C.get_state() == C.value
    windows = Windows()
    with Profiler(scheduler=(1, 3), on_trace_ready=windows) as prof:
        for _ in range(4):
            prof.step()
    assert windows.steps == [[1, 2]]


# ---- a warning raised as an error, a Ctrl-C: the window is still delivered -------------


def test_an_improper_schedule_warning_raised_as_an_error_still_delivers_the_window():
    # Under `-W error` the warning was raised after the window was marked
    # delivered and before on_trace_ready was called: the window was lost.
    plan = [R, R, C, R, A]  # 0-1 improper (RECORD -> CLOSED), 3-4 proper
    windows = Windows()
    prof = Profiler(scheduler=lambda step: plan[step] if step < len(plan) else C, on_trace_ready=windows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)
        prof.start()
        prof.step()
        with pytest.raises(ProfilerWarning, match="improper schedule: step 1 was RECORD and step 2 is CLOSED"):
            prof.step()
        assert windows.steps == [[0, 1]]  # delivered before the warning's error came out
        assert prof.step_num == 2
        assert_in_step(prof, C)  # the step went on
        assert step_catching(prof, 4, ProfilerWarning) == 0
        prof.stop()
    assert windows.steps == [[0, 1], [3, 4]]
    assert_engine_free()


def test_a_lost_events_warning_raised_as_an_error_still_delivers_the_window():
    windows = Windows()
    prof = Profiler(
        scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=2),
        on_trace_ready=windows,
        memory_cap=profiler_module.MIN_MEMORY_CAP,  # one record buffer: the events below overflow it
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)
        prof.start()
        for _ in range(30_000):
            with RecordEvent("e"):
                pass
        prof.step()
        with pytest.raises(ProfilerWarning, match="this recording window lost events"):
            prof.step()
        assert_in_step(prof, R)  # the next window is recording
        assert step_catching(prof, 3, ProfilerWarning) == 0
        prof.stop()
    assert windows.steps == [[0, 1], [2, 3]]
    assert windows.results[0].info["dropped_events"] > 0
    assert_engine_free()


def test_a_ctrl_c_while_a_window_is_checked_still_delivers_it(monkeypatch):
    # A Ctrl-C landing in _deliver before on_trace_ready was called (here, in
    # _losses) lost the window: marked delivered, never handed over.
    interrupt_once(monkeypatch, "_losses")
    windows = Windows()
    prof = Profiler(scheduler=make_scheduler(closed=1, ready=1, record=3, repeat=2), on_trace_ready=windows)
    prof.start()
    assert step_catching(prof, 12, KeyboardInterrupt) == 1
    prof.stop()
    assert windows.steps == [[2, 3, 4], [7, 8, 9]]
    assert_engine_free()


@pytest.mark.parametrize("then", ["step", "stop"])
def test_a_window_a_ctrl_c_kept_from_on_trace_ready_is_delivered_by_the_next_step_or_stop(monkeypatch, then):
    # Interrupted before the hand-over (here, making its ProfilerResult), the
    # window stays undelivered while the next window records. stop() took
    # the next window's collect for the whole story: the earlier one was lost.
    interrupt_once(monkeypatch, "ProfilerResult")
    windows = Windows()
    prof = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2), on_trace_ready=windows)
    prof.start()
    prof.step()
    with pytest.raises(KeyboardInterrupt):
        prof.step()  # closes [0, 1]; the next window is recording all the same
    assert windows.steps == [] and prof.step_num == 2
    assert_in_step(prof, R)
    if then == "step":
        prof.step()
        prof.step()
    prof.stop()
    assert windows.steps == ([[0, 1], [2, 3], [4]] if then == "step" else [[0, 1], [2]])
    assert_engine_free()


def test_stop_from_on_trace_ready_of_a_window_left_over_delivers_the_recording_one(monkeypatch):
    # The left-over window is delivered while the next one records; stop()
    # from its callback dropped that one (a special case for the empty window
    # step() used to open before on_trace_ready), steps and all.
    interrupt_once(monkeypatch, "ProfilerResult")
    windows = Windows()

    def stop_at_first(prof):
        windows(prof)
        if len(windows.results) == 1:
            prof.stop()

    prof = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2), on_trace_ready=stop_at_first)
    prof.start()
    prof.step()
    with pytest.raises(KeyboardInterrupt):
        prof.step()
    with RecordEvent("work in step 2"):
        pass
    prof.step()  # delivers [0, 1]; its callback stops the Profiler, delivering [2]
    assert windows.steps == [[0, 1], [2]]
    assert "work in step 2" in set(windows.results[1].events["name"])
    assert not prof._started and not prof._in_callback
    assert_engine_free()


# ---- stop() as step() begins ----------------------------------------------------------


def test_stop_from_a_signal_handler_as_step_begins_waits_for_the_step(monkeypatch):
    # A stop() that came before step() marked itself running (here, as it
    # checked num_samples) was not deferred: it stopped the Profiler, and the
    # rest of step() put the engine back in READY for no one, refusing every
    # later Profiler ("the profkit engine is already in state READY").
    windows = Windows()
    prof = Profiler(scheduler=make_scheduler(closed=0, ready=1, record=2), on_trace_ready=windows)
    check_samples = profiler_module.check_samples

    def check_samples_then_signal(num_samples):
        if prof.step_num == 2:
            prof.stop()  # what a SIGTERM handler flushing the trace does, mid-step
        return check_samples(num_samples)

    monkeypatch.setattr(profiler_module, "check_samples", check_samples_then_signal)
    prof.start()
    for _ in range(2):
        prof.step(num_samples=8)
    prof.step(num_samples=8)  # steps 2 -> 3: the "signal" comes as it begins
    assert not prof._started and prof.step_num == 3
    assert windows.steps == [[1, 2]]  # the window, delivered once, by the step
    with pytest.raises(RuntimeError, match="not started"):
        prof.step()
    monkeypatch.setattr(profiler_module, "check_samples", check_samples)
    assert_engine_free()


# ---- on_trace_ready before the next window ---------------------------------------------


def test_on_trace_ready_runs_before_the_next_window_opens():
    # The next window was opened before on_trace_ready ran: the callback's
    # ranges were in it, and its span counted the callback's time (a slow
    # exporter's).
    windows = Windows()
    callbacks = []  # (engine state during the callback, its end on the engine's clock)

    def record_in_callback(prof):
        windows(prof)
        with RecordEvent("inside on_trace_ready"):
            pass
        callbacks.append((_C.get_state(), _C.now_ns()))

    prof = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=1, repeat=3), on_trace_ready=record_in_callback)
    prof.start()
    for _ in range(4):
        prof.step()
    prof.stop()
    assert windows.steps == [[0], [1], [2]]
    assert [state for state, _ in callbacks] == [Y.value, Y.value, C.value]  # not recording
    for result in windows.results:
        assert "inside on_trace_ready" not in set(result.events["name"])
    for (_, callback_end), result in zip(callbacks, windows.results[1:]):
        assert result.info["start_ns"] >= callback_end
        assert result.events["start_ns"].min() >= callback_end


def test_on_trace_ready_that_raises_leaves_the_next_window_recording():
    calls = []

    def failing_once(prof):
        calls.append(prof.profiler_result.steps)
        if len(calls) == 1:
            raise KeyError("exporter failed")

    prof = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=3), on_trace_ready=failing_once)
    prof.start()
    prof.step()
    with pytest.raises(KeyError, match="exporter failed"):
        prof.step()
    assert prof.step_num == 2
    assert_in_step(prof, R)
    for _ in range(4):
        prof.step()
    prof.stop()
    assert calls == [[0, 1], [2, 3], [4, 5]]
    assert_engine_free()


@pytest.mark.parametrize("restart", [False, True])
def test_stop_from_on_trace_ready_between_back_to_back_windows(restart):
    windows = Windows()

    def stop_at_first(prof):
        windows(prof)
        if len(windows.results) == 1:
            prof.stop()  # no window is open: nothing more to deliver, nothing to warn of
            if restart:
                prof.start()

    prof = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=1), on_trace_ready=stop_at_first)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)
        prof.start()
        prof.step()
    assert windows.steps == [[0]]
    if restart:
        assert prof._started and prof.step_num == 0
        assert_in_step(prof, A)
        prof.step()
        prof.stop()
        assert windows.steps == [[0], [0], [1]]
    else:
        assert not prof._started and _C.get_state() == C.value
    assert_engine_free()
