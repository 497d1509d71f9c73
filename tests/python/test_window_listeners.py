"""Python listeners of the recording windows a Profiler opens and closes (profkit._window_listeners)."""

import pytest

import profkit
from profkit import ProfilerState, ProfilerWarning, _C, _window_listeners


@pytest.fixture
def heard():
    states = []

    def listener(profiler, state):
        states.append((state, _C.get_state()))  # the engine has not changed yet

    _window_listeners.add(listener)
    yield states
    _window_listeners.remove(listener)


def test_listeners_hear_each_state_change_before_the_engine_makes_it(heard):
    scheduler = profkit.make_scheduler(closed=1, ready=1, record=2, repeat=1)
    prof = profkit.Profiler(scheduler=scheduler, on_trace_ready=lambda p: None)
    with prof:
        for _ in range(5):
            prof.step()
    R, RR = ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN
    READY, CLOSED = ProfilerState.READY, ProfilerState.CLOSED
    # stop() closes the engine again (listeners must take a repeated state calmly)
    assert heard == [(READY, 0), (R, 1), (RR, 2), (CLOSED, 3), (CLOSED, 0)]


def test_adding_twice_calls_once_and_removing_an_unknown_listener_is_harmless(heard):
    listener = _window_listeners._listeners.all[-1]
    _window_listeners.add(listener)
    _window_listeners.remove(lambda profiler, state: None)
    with profkit.Profiler(on_trace_ready=lambda p: None):
        pass
    assert [state for state, _ in heard] == [ProfilerState.RECORD, ProfilerState.CLOSED]


def test_a_failing_listener_is_a_warning_and_profiling_goes_on():
    def broken(profiler, state):
        raise KeyError("boom")

    _window_listeners.add(broken)
    try:
        with pytest.warns(ProfilerWarning, match="listener .*broken.* failed entering RECORD: KeyError: 'boom'"):
            prof = profkit.Profiler(on_trace_ready=lambda p: None)
            prof.start()
        assert _C.is_recording()
        with pytest.warns(ProfilerWarning, match="failed entering CLOSED"):
            prof.stop()
    finally:
        _window_listeners.remove(broken)
    assert prof.profiler_result.steps == [0]
