"""Profiler lifecycle (SPEC §3): every transition, the windows each scheduler
delivers (as ProfileStep#n sets), and the fixes over paddle.profiler."""

import json
import multiprocessing
import os
import warnings

import pytest

import profkit
from profkit import Profiler, ProfilerState, ProfilerTarget, ProfilerWarning, RecordEvent, _C, _lifecycle, make_scheduler
from profkit import profiler as profiler_module

C, Y, R, A = ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN


class Windows:
    """on_trace_ready that keeps the ProfileStep numbers of each delivered window."""

    def __init__(self):
        self.steps = []
        self.results = []

    def __call__(self, prof):
        self.results.append(prof.profiler_result)
        self.steps.append(prof.profiler_result.steps)


def run(scheduler, n_steps, work=None):
    """Runs n_steps steps; returns (state of each step 0..n_steps, windows)."""
    windows = Windows()
    prof = Profiler(scheduler=scheduler, on_trace_ready=windows)
    seen = []
    prof.start()
    for _ in range(n_steps):
        seen.append(prof.current_state)
        assert _C.get_state() == prof.current_state.value  # the engine follows the schedule
        if work:
            work(prof)
        prof.step()
    seen.append(prof.current_state)
    prof.stop()
    assert _C.get_state() == C.value
    return seen, windows.steps


# ---- the transition table -------------------------------------------------------


@pytest.mark.parametrize("previous", list(ProfilerState))
@pytest.mark.parametrize("current", list(ProfilerState))
def test_transition_table(previous, current):
    t = _lifecycle.plan(previous, current)
    if not previous.is_recording:
        # CLOSED/READY -> anything: enter the new state; nothing to deliver.
        assert not t.deliver and not t.improper and t.then is None
        assert t.first == (None if previous is current else current)
    elif previous is R and current.is_recording:
        # RECORD -> RECORD(_AND_RETURN): the window goes on; nothing collected.
        assert t == (None if current is R else A, False, False, None)
    else:
        # RECORD_AND_RETURN -> any, RECORD -> CLOSED/READY: collect and deliver.
        assert t.deliver
        assert t.improper == (previous is R)
        assert t.first == (C if current is C else Y)
        assert t.then == (current if current.is_recording else None)


def test_stop_delivers_only_from_recording_states():
    for state in ProfilerState:
        t = _lifecycle.plan_stop(state)
        assert t.first is C and t.deliver == state.is_recording and not t.improper


# ---- windows per scheduler --------------------------------------------------------


def test_pair_2_10():
    seen, windows = run((2, 10), 12)
    assert seen == [C, Y] + [R] * 7 + [A, C, C, C]
    assert windows == [list(range(2, 10))]


def test_half_open_list_3_14():
    seen, windows = run([3, 14], 16)
    assert seen == [C, C, Y] + [R] * 10 + [A, C, C, C]
    assert windows == [list(range(3, 14))]


def test_make_scheduler_repeat_three_gives_three_windows():
    seen, windows = run(make_scheduler(closed=1, ready=1, record=4, repeat=3), 20)
    assert seen == [C, Y, R, R, R, A] * 3 + [C, C, C]
    assert windows == [[2, 3, 4, 5], [8, 9, 10, 11], [14, 15, 16, 17]]


def test_make_scheduler_repeat_three_writes_three_files(tmp_path):
    exporter = profkit.export_chrome_tracing(str(tmp_path / "log"))
    with Profiler(scheduler=make_scheduler(closed=1, ready=1, record=4, repeat=3), on_trace_ready=exporter) as p:
        for _ in range(20):
            p.step()
    files = sorted((tmp_path / "log").iterdir())
    assert [str(f) for f in files] == sorted(exporter.paths) and len(files) == 3
    steps = []
    for f in sorted(files, key=lambda f: exporter.paths.index(str(f))):
        doc = json.loads(f.read_text())
        steps.append(sorted(int(e["name"].split("#")[1]) for e in doc["traceEvents"] if e.get("cat") == "ProfileStep"))
    assert steps == [[2, 3, 4, 5], [8, 9, 10, 11], [14, 15, 16, 17]]


def test_skip_first():
    seen, windows = run(make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=3), 13)
    assert seen == [C, C, C] + [C, Y, R, A] * 2 + [C, C, C]
    assert windows == [[5, 6], [9, 10]]


def test_ready_zero():
    seen, windows = run(make_scheduler(closed=2, ready=0, record=2, repeat=2), 9)
    assert seen == [C, C, R, A, C, C, R, A, C, C]
    assert windows == [[2, 3], [6, 7]]


def test_always_record_and_return_delivers_every_step():
    seen, windows = run(lambda step: A, 4)
    assert seen == [A] * 5
    # Each step is its own window; stop() delivers the step it ends.
    assert windows == [[0], [1], [2], [3], [4]]


def test_default_scheduler_records_everything_until_stop():
    seen, windows = run(None, 5)
    assert seen == [R] * 6
    assert windows == [[0, 1, 2, 3, 4, 5]]


def test_custom_callable():
    plan = {1: Y, 2: R, 3: A, 5: R, 6: A}
    seen, windows = run(lambda step: plan.get(step, C), 8)
    assert seen == [C, Y, R, A, C, R, A, C, C]
    assert windows == [[2, 3], [5, 6]]


def test_a_custom_scheduler_is_asked_every_step():
    asked = []

    def scheduler(step):
        asked.append(step)
        return R

    with Profiler(scheduler=scheduler, on_trace_ready=Windows()) as p:
        for _ in range(6):
            p.step()
    assert asked == list(range(7))


def test_replacing_the_scheduler_takes_effect_at_the_next_step():
    windows = Windows()
    p = Profiler(scheduler=None, on_trace_ready=windows)  # records every step ...
    p.start()
    p.step()
    p.step()
    p.scheduler = lambda step: A if step == 3 else C  # ... until this one ends the window at step 3
    p.step()
    assert p.current_state is A
    p.step()
    assert p.current_state is C
    p.stop()
    assert windows.steps == [[0, 1, 2, 3]]


def test_steps_inside_a_window_count_samples_and_steps_like_any_other():
    windows = Windows()
    with Profiler(scheduler=(1, 6), on_trace_ready=windows, timer_only=False) as p:
        for n in range(7):
            p.step(10 + n)
            assert p.step_num == n + 1
    summary = p.perf_summary
    assert summary.total_steps == 7 and summary.ips_unit == "samples/s"
    assert windows.steps == [[1, 2, 3, 4, 5]]


@pytest.mark.parametrize("bad", [-1, 2.5, "3", True, 2**64])
def test_bad_num_samples_inside_a_window_is_rejected_as_outside(bad):
    with Profiler(scheduler=(0, 10), on_trace_ready=Windows()) as p:
        p.step()
        p.step()
        with pytest.raises((TypeError, ValueError), match="num_samples"):
            p.step(bad)
        assert p.step_num == 2


def test_scheduler_returning_ints_is_accepted():
    seen, windows = run(lambda step: 3 if step == 1 else 0, 3)
    assert seen == [C, A, C, C] and windows == [[1]]


def test_stop_in_the_middle_of_a_window_delivers_it():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no improper-schedule warning here
        seen, windows = run(make_scheduler(closed=1, ready=1, record=4, repeat=3), 3)
    assert seen == [C, Y, R, R]
    assert windows == [[2, 3]]


def test_record_to_closed_delivers_with_a_warning():
    with pytest.warns(ProfilerWarning, match=r"improper schedule: step 2 was RECORD and step 3 is CLOSED"):
        seen, windows = run(lambda step: R if step < 3 else C, 5)
    assert seen == [R, R, R, C, C, C]
    assert windows == [[0, 1, 2]]


def test_record_to_ready_delivers_with_a_warning_and_recording_resumes():
    plan = [R, R, Y, R, A]
    with pytest.warns(ProfilerWarning, match="step 1 was RECORD and step 2 is READY"):
        seen, windows = run(lambda step: plan[step] if step < len(plan) else C, 6)
    assert seen == plan + [C, C]
    assert windows == [[0, 1], [3, 4]]


def test_ready_to_closed_delivers_nothing_and_stop_says_so():
    with pytest.warns(ProfilerWarning, match="without recording any step"):
        seen, windows = run(lambda step: Y if step == 1 else C, 3)
    assert seen == [C, Y, C, C]
    assert windows == []


def test_stop_in_ready_state_warns_that_nothing_was_recorded():
    with pytest.warns(ProfilerWarning, match="never reached RECORD"):
        seen, windows = run((5, 8), 4)
    assert seen == [C, C, C, C, Y] and windows == []


def test_schedule_warnings_name_the_users_line():
    # Given at a fixed stack depth, they named profkit's own lines: step()'s
    # for the improper schedule, __exit__'s for a Profiler in a with block.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Profiler(scheduler=lambda step: R if step < 2 else C, on_trace_ready=lambda p: None) as prof:
            for _ in range(4):
                prof.step()
        with Profiler(scheduler=(5, 10), on_trace_ready=lambda p: None) as prof:
            prof.step()
    said = [w for w in caught if "improper schedule" in str(w.message) or "without recording" in str(w.message)]
    assert len(said) == 2 and {w.filename for w in said} == {__file__}, [(str(w.message), w.filename) for w in said]


def test_on_trace_ready_starting_the_profiler_again_at_stop_is_no_lost_trace():
    # The restarted run counts its windows from 0, which stop() took for a
    # run that delivered none: it warned "no trace was produced" right after
    # delivering one.
    delivered = []

    def start_again(prof):
        delivered.append(prof.profiler_result.steps)
        if len(delivered) == 1:
            prof.start()

    prof = Profiler(scheduler=None, on_trace_ready=start_again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prof.start()
        prof.step()
        prof.stop()
        assert prof._started and delivered == [[0, 1]]
        prof.step()
        prof.stop()
    assert not prof._started and delivered == [[0, 1], [0, 1]]


def test_record_events_land_in_their_step():
    def work(prof):
        with RecordEvent(f"work{prof.step_num}"):
            pass

    _, windows = run(make_scheduler(closed=0, ready=0, record=2, repeat=2), 4, work=work)
    assert windows == [[0, 1], [2, 3]]


def test_windows_hold_only_their_own_events():
    names = []

    def collect_names(prof):
        ev = prof.profiler_result.events
        names.append(sorted(n for n in ev["name"] if not n.startswith("ProfileStep")))

    with Profiler(scheduler=lambda step: A, on_trace_ready=collect_names) as p:
        for k in range(3):
            with RecordEvent(f"e{k}"):
                pass
            p.step()
    assert names == [["e0"], ["e1"], ["e2"], []]


def test_num_samples_is_attached_to_the_step():
    windows = Windows()
    with Profiler(scheduler=None, on_trace_ready=windows) as p:
        p.step(num_samples=32)
        p.step(num_samples=16)
    args = windows.results[0].event_args
    events = windows.results[0].events
    samples = {events["name"][a["event"]]: a["value"] for a in args if a["key"] == "num_samples"}
    assert samples == {"ProfileStep#0": 32, "ProfileStep#1": 16}


# ---- fixes and errors -----------------------------------------------------------------


def test_second_active_profiler_raises_and_the_first_keeps_working():
    windows = Windows()
    first = Profiler(on_trace_ready=windows)
    first.start()
    second = Profiler(on_trace_ready=Windows())
    with pytest.raises(RuntimeError, match="another Profiler is active"):
        second.start()
    first.step()
    first.stop()
    assert windows.steps == [[0, 1]]
    second.start()  # the engine is free again
    second.stop()


def test_a_dropped_started_profiler_frees_the_engine_with_a_warning():
    import gc

    prof = Profiler(on_trace_ready=Windows())
    prof.start()
    with RecordEvent("lost with its Profiler"):
        pass
    assert Profiler.active() is prof
    with pytest.warns(ProfilerWarning, match="garbage-collected without stop.*discarded"):
        del prof  # a training error outside `with`, then the name rebound
        gc.collect()
    assert Profiler.active() is None and _C.get_state() == 0
    windows = Windows()
    with Profiler(on_trace_ready=windows) as fresh:  # not blocked, and nothing of the old window leaks in
        fresh.step()
    assert windows.steps == [[0, 1]]
    assert "lost with its Profiler" not in set(windows.results[0].events["name"])


def test_the_active_profiler_can_be_stopped_through_the_class():
    windows = Windows()
    assert Profiler.active() is None
    first = Profiler(on_trace_ready=windows)
    first.start()
    with pytest.raises(RuntimeError, match=r"Profiler.active\(\).stop\(\) stops it"):
        Profiler(on_trace_ready=Windows()).start()
    Profiler.active().stop()  # delivers its window
    assert windows.steps == [[0]] and Profiler.active() is None


def test_timer_only_profilers_do_not_take_the_engine(capsys):
    with Profiler(timer_only=True) as timer:
        with Profiler(on_trace_ready=Windows()) as recording:
            recording.step()
            timer.step()
    assert _C.get_state() == 0


def test_start_twice_raises():
    p = Profiler(on_trace_ready=Windows())
    p.start()
    with pytest.raises(RuntimeError, match="already started"):
        p.start()
    p.stop()


def test_step_before_start_raises_and_stop_is_idempotent():
    p = Profiler(on_trace_ready=Windows())
    with pytest.raises(RuntimeError, match="not started"):
        p.step()
    p.stop()  # nothing to stop: no error
    with p:
        p.stop()  # stopping inside the with block; __exit__ stops again harmlessly


def test_engine_driven_elsewhere_refuses_to_start():
    _C.set_state(R.value)
    with pytest.raises(RuntimeError, match="already in state RECORD"):
        Profiler(on_trace_ready=Windows()).start()


def test_exception_in_on_trace_ready_at_a_step_propagates_and_profiling_goes_on():
    calls = []

    def flaky(prof):
        calls.append(prof.profiler_result.steps)
        if len(calls) == 1:
            raise KeyError("user callback failed")

    p = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=3), on_trace_ready=flaky)
    p.start()
    p.step()
    with pytest.raises(KeyError, match="user callback failed"):
        p.step()
    assert p.step_num == 2 and p.current_state is R
    for _ in range(3):
        p.step()
    p.stop()
    assert calls == [[0, 1], [2, 3], [4, 5]]


def test_exception_in_on_trace_ready_at_stop_propagates_and_the_next_profiler_works():
    def failing(prof):
        raise ValueError("boom")

    p = Profiler(on_trace_ready=failing)
    p.start()
    p.step()
    with pytest.raises(ValueError, match="boom"):
        p.stop()
    assert _C.get_state() == 0
    windows = Windows()
    with Profiler(on_trace_ready=windows) as q:
        q.step()
    assert windows.steps == [[0, 1]]
    p.start()  # the failed one is reusable too
    p.step()
    with pytest.raises(ValueError):
        p.stop()


def test_exception_in_the_with_block_still_delivers():
    windows = Windows()
    with pytest.raises(ZeroDivisionError):
        with Profiler(on_trace_ready=windows) as p:
            p.step()
            1 / 0
    assert windows.steps == [[0, 1]]
    assert _C.get_state() == 0


def test_bad_scheduler_value_raises_before_anything_changes():
    plan = {0: R, 1: "record"}
    p = Profiler(scheduler=lambda step: plan.get(step, C), on_trace_ready=Windows())
    p.start()
    with pytest.raises(ValueError, match="returned 'record' for step 1"):
        p.step()
    assert p.step_num == 0 and p.current_state is R and _C.get_state() == R.value
    p.stop()


def test_scheduler_that_raises_at_start_leaves_the_engine_free():
    def broken(step):
        raise RuntimeError("scheduler bug")

    with pytest.raises(RuntimeError, match="scheduler bug"):
        Profiler(scheduler=broken, on_trace_ready=Windows()).start()
    with Profiler(on_trace_ready=Windows()) as p:
        p.step()


def test_restart_begins_again_at_step_zero():
    windows = Windows()
    p = Profiler(scheduler=(1, 3), on_trace_ready=windows)
    for _ in range(2):
        p.start()
        for _ in range(4):
            p.step()
        p.stop()
    assert windows.steps == [[1, 2], [1, 2]]


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_invalid_num_samples(bad):
    p = Profiler(on_trace_ready=Windows())
    p.start()
    with pytest.raises((ValueError, TypeError)):
        p.step(num_samples=bad)
    p.stop()


def test_invalid_constructor_arguments():
    with pytest.raises(ValueError):
        Profiler(scheduler=(3, 1))
    with pytest.raises(TypeError, match="on_trace_ready"):
        Profiler(on_trace_ready="file.json")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ProfilerTarget"):
        Profiler(targets=["cpu"])  # type: ignore[list-item]
    for not_a_list in (1, "CPU"):
        with pytest.raises(TypeError, match=r"targets must be a ProfilerTarget or a list of them .* not"):
            Profiler(targets=not_a_list)  # type: ignore[arg-type]


def test_an_export_function_given_uncalled_as_on_trace_ready_is_refused_at_once():
    # It used to fail only when the first window ended: "dir_name must be a path, not Profiler".
    for factory in (profkit.export_chrome_tracing, profkit.export_protobuf):
        name = factory.__name__
        expected = rf"on_trace_ready={name} is the function .*=profkit\.{name}\('\./profiler_log'\)"
        with pytest.raises(TypeError, match=expected):
            Profiler(on_trace_ready=factory)


def test_unsupported_options_warn():
    with pytest.warns(ProfilerWarning, match="emit_nvtx"):
        Profiler(emit_nvtx=True)
    with pytest.warns(ProfilerWarning, match="custom devices"):
        Profiler(custom_device_types=["npu"])


def test_one_custom_device_given_as_a_string_is_one_device():
    with pytest.warns(ProfilerWarning, match=r"custom devices \['npu'\] are not supported"):
        p = Profiler(custom_device_types="npu")
    assert p.custom_device_types == ["npu"]


def test_export_and_summary_of_a_timer_only_profiler_say_it_records_no_trace():
    with Profiler(timer_only=True) as p:
        p.step()
    for call in (lambda: p.summary(), lambda: p.export("x.json")):
        with pytest.raises(RuntimeError, match="timer_only=True, so it records no trace"):
            call()


def test_export_and_summary_need_a_result():
    p = Profiler(on_trace_ready=Windows())
    with pytest.raises(RuntimeError, match="no trace has been collected"):
        p.export("x.json")
    with pytest.raises(RuntimeError, match="no trace has been collected"):
        p.summary()


def test_default_on_trace_ready_writes_to_profiler_log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Profiler(scheduler=(0, 2)) as p:
        for _ in range(3):
            p.step()
    files = list((tmp_path / "profiler_log").iterdir())
    assert len(files) == 1 and files[0].name.endswith(".trace.json")
    assert repr(p.on_trace_ready).startswith("export_chrome_tracing('./profiler_log/'")


def test_timer_only_does_not_create_the_default_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Profiler(timer_only=True) as p:
        p.step()
    assert not (tmp_path / "profiler_log").exists()
    assert p.profiler_result is None


# ---- targets ----------------------------------------------------------------------


@pytest.fixture
def fresh_gpu_warning(monkeypatch):
    monkeypatch.setattr(profiler_module, "_gpu_warning_given", False)


def test_targets_none_is_cpu_only_without_a_gpu(fresh_gpu_warning, monkeypatch):
    monkeypatch.setattr(_C, "gpu_available", lambda: (False, "no CUDA driver"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Profiler().targets == {ProfilerTarget.CPU}


def test_targets_none_includes_the_gpu_when_available(fresh_gpu_warning, monkeypatch):
    monkeypatch.setattr(_C, "gpu_available", lambda: (True, "CUPTI 12"))
    assert Profiler().targets == {ProfilerTarget.CPU, ProfilerTarget.GPU}


def test_gpu_requested_but_unavailable_warns_once_per_process(fresh_gpu_warning, monkeypatch):
    monkeypatch.setattr(_C, "gpu_available", lambda: (False, "no CUDA driver (libcuda.so.1 not found)"))
    with pytest.warns(ProfilerWarning, match=r"libcuda.so.1 not found.*profiling the CPU only") as record:
        p = Profiler(targets=[ProfilerTarget.CPU, ProfilerTarget.GPU], on_trace_ready=Windows())
        Profiler(targets=[ProfilerTarget.GPU])
    assert len(record) == 1
    assert p.targets == {ProfilerTarget.CPU}
    assert Profiler(targets=[ProfilerTarget.GPU]).targets == {ProfilerTarget.CPU}  # the CPU is always profiled
    assert Profiler(targets=[]).targets == {ProfilerTarget.CPU}
    with p:  # CPU profiling goes on
        p.step()
    assert p.profiler_result.steps == [0, 1]


def test_gpu_that_fails_to_start_warns_with_the_engine_reason(fresh_gpu_warning, monkeypatch):
    # The probe says yes, the engine then refuses: this build's engine where
    # it cannot trace, else one that refuses as it would.
    if _C.gpu_available()[0]:
        set_gpu_tracing = _C.set_gpu_tracing

        def refusing(enabled):
            if enabled:
                raise RuntimeError("GPU tracing is not available: cuptiSubscribe failed; profiling the CPU only")
            set_gpu_tracing(enabled)

        monkeypatch.setattr(_C, "set_gpu_tracing", refusing)
    monkeypatch.setattr(_C, "gpu_available", lambda: (True, "pretend"))
    p = Profiler(targets=[ProfilerTarget.GPU], on_trace_ready=Windows())
    with pytest.warns(ProfilerWarning, match="GPU tracing is not available"):
        p.start()
    p.step()
    p.stop()
    assert p.profiler_result.steps == [0, 1]


def test_on_trace_ready_may_stop_the_profiler_but_not_step_it():
    windows = []

    def stop_after_first(prof):
        windows.append(prof.profiler_result.steps)
        if len(windows) == 1:
            with pytest.raises(RuntimeError, match="called from on_trace_ready"):
                prof.step()
            prof.stop()  # the next window is not open yet (it opens once the callback returns): nothing more to deliver

    p = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=1), on_trace_ready=stop_after_first)
    p.start()
    p.step()  # delivers step 0; the callback stops profiling
    assert _C.get_state() == 0 and windows == [[0]]
    assert p.profiler_result.steps == [0]  # the delivered window stays the Profiler's result
    with pytest.raises(RuntimeError, match="not started"):
        p.step()
    with Profiler(on_trace_ready=Windows()) as q:  # the engine is free
        q.step()


def test_step_from_the_on_trace_ready_that_stop_calls_says_it_is_from_the_callback():
    # stop() has already marked the Profiler stopped when it delivers; the
    # error must not advise calling start().
    errors = []

    def step_inside(prof):
        try:
            prof.step()
        except RuntimeError as e:
            errors.append(str(e))

    p = Profiler(scheduler=None, on_trace_ready=step_inside)
    p.start()
    p.stop()
    assert len(errors) == 1 and "called from on_trace_ready" in errors[0] and "start()" not in errors[0]


# ---- losses are never silent --------------------------------------------------------


@pytest.fixture
def engine_memory_cap():
    cap = _C.get_memory_cap()
    yield
    _C.set_memory_cap(cap)


def test_a_window_that_hit_the_memory_cap_warns_and_its_summary_says_so(engine_memory_cap):
    windows = []
    lost = r"lost events: \d+ past the engine's memory cap of 262144 bytes .*memory_cap="  # the window's cap
    with pytest.warns(ProfilerWarning, match=lost) as caught:
        with Profiler(on_trace_ready=lambda p: windows.append(p.profiler_result), memory_cap=256 << 10) as p:
            assert _C.get_memory_cap() == 256 << 10  # set at start: one record buffer, ~10 k events
            for _ in range(3):
                for _ in range(200_000):
                    with RecordEvent("tiny"):
                        pass
                p.step()
    assert {w.filename for w in caught if "lost events" in str(w.message)} == {__file__}  # the user's line
    (result,) = windows
    assert result.info["dropped_events"] > 0
    assert result.summary().startswith("Warning: %d events were dropped" % result.info["dropped_events"])
    assert f"{result.info['dropped_events']} events lost while recording" in repr(result)
    for table in result.summary_data().values():
        assert table.notes[0].startswith("Warning: %d events were dropped" % result.info["dropped_events"])


def test_lost_gpu_records_name_both_causes_with_their_remedies():
    # One count holds GPU records past the memory cap and those CUPTI had no
    # buffer for (the info cannot tell them apart): the warning names both.
    info = {"dropped_events": 0, "overflowed_events": 0, "dropped_device_records": 7}
    lost = profiler_module._losses(info, 256 << 10)
    assert lost.startswith("7 GPU records past the memory cap of 262144 bytes (raise it with Profiler(memory_cap=...))")
    assert "CUPTI activity buffer" in lost
    assert "device id past 428" in lost


def test_the_least_memory_cap_is_the_engines(engine_memory_cap):
    with pytest.raises(ValueError, match="below one record buffer"):
        _C.set_memory_cap(profiler_module.MIN_MEMORY_CAP - 1)
    _C.set_memory_cap(profiler_module.MIN_MEMORY_CAP)
    with pytest.raises(ValueError, match=r"memory_cap must be >= 262144, got 4096"):
        Profiler(memory_cap=4096)


def test_a_memory_cap_lasts_from_start_to_stop(engine_memory_cap):
    engine_cap = _C.get_memory_cap()
    with Profiler(memory_cap=profiler_module.MIN_MEMORY_CAP, on_trace_ready=lambda p: None) as p:
        assert _C.get_memory_cap() == profiler_module.MIN_MEMORY_CAP
        p.step()
    assert _C.get_memory_cap() == engine_cap  # the next Profiler gets the engine's cap back
    failing = Profiler(memory_cap=profiler_module.MIN_MEMORY_CAP, scheduler=lambda step: 1 // 0)
    with pytest.raises(ZeroDivisionError):
        failing.start()
    assert _C.get_memory_cap() == engine_cap


def test_a_whole_window_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Profiler(on_trace_ready=lambda p: None) as p:
            with RecordEvent("x"):
                pass
            p.step()
    assert not p.profiler_result.summary().startswith("Warning")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"memory_cap": "1GB"}, TypeError, "memory_cap must be an int, not str"),
        ({"memory_cap": 0}, ValueError, "memory_cap must be >= 262144, got 0"),
        ({"memory_cap": True}, TypeError, "memory_cap must be an int, not bool"),
        ({"benchmark_warmup_steps": "3"}, TypeError, "benchmark_warmup_steps must be an int, not str"),
        ({"benchmark_warmup_steps": -3}, ValueError, "Profiler: benchmark_warmup_steps must be >= 0, got -3"),
    ],
)
def test_bad_numeric_arguments_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        Profiler(**kwargs)


# ---- fork() ----------------------------------------------------------------------


def test_a_child_forked_mid_window_delivers_only_its_own_events():
    """A process forked while its parent records (a worker started by hand,
    say) goes on with the parent's Profiler; what it delivers is its own
    work, under its own pid and thread id, and the parent keeps its own."""
    windows = Windows()
    prof = Profiler(on_trace_ready=windows)
    prof.start()
    with RecordEvent("parent before the fork"):
        pass
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            with RecordEvent("child work"):
                pass
            prof.stop()
            (result,) = windows.results
            (thread,) = result.threads
            report = json.dumps(
                {
                    "names": sorted(result.events["name"].tolist()),
                    "in_span": bool((result.events["start_ns"] >= result.start_ns).all()),
                    "pid": result.info["pid"] == os.getpid(),
                    "tid": thread["tid"] == os.getpid(),
                    "cpu_fits": result.info["process_cpu_ns"] <= result.duration_ns + 10**9,
                }
            )
        except BaseException as e:
            report = json.dumps({"error": repr(e)})
        os.write(write, report.encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    report = json.loads(os.read(read, 4000).decode())
    os.close(read)
    with RecordEvent("parent after the fork"):
        pass
    prof.stop()
    assert status == 0
    # The step in progress at the fork goes on in both, from the fork in the child.
    assert report == {
        "names": ["ProfileStep#0", "child work"],
        "in_span": True,
        "pid": True,
        "tid": True,
        "cpu_fits": True,
    }
    (result,) = windows.results
    names = sorted(result.events["name"].tolist())
    assert names == ["ProfileStep#0", "parent after the fork", "parent before the fork"]


def _profile_in_a_multiprocessing_child(inherited, queue):  # pragma: no cover - runs in the child
    """The target of a process multiprocessing forks from a recording parent."""
    try:
        report = {"active": Profiler.active() is not None, "engine": _C.get_state()}
        try:
            inherited.step()
        except RuntimeError as e:
            report["inherited_step"] = str(e)
        windows = Windows()
        with Profiler(on_trace_ready=windows):
            with RecordEvent("child work"):
                pass
        (result,) = windows.results
        report["names"] = sorted(result.events["name"].tolist())
    except BaseException as e:
        report = {"error": repr(e)}
    queue.put(report)


def test_a_process_multiprocessing_forks_mid_window_starts_with_profiling_stopped():
    """A process that multiprocessing forks (a DataLoader or Pool worker)
    runs its target, never the parent's loop: the parent's recording
    session does not go on there (nothing would ever collect it), and the
    child can profile itself with a Profiler of its own."""
    windows = Windows()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with Profiler(on_trace_ready=windows) as prof:
        with RecordEvent("parent work"):
            child = context.Process(target=_profile_in_a_multiprocessing_child, args=(prof, queue))
            child.start()
            report = queue.get(timeout=60)
            child.join(timeout=60)
    assert child.exitcode == 0
    assert "error" not in report, report["error"]
    assert report["active"] is False and report["engine"] == C.value
    assert f"records in the parent process (pid {os.getpid()})" in report["inherited_step"]
    assert report["names"] == ["ProfileStep#0", "child work"]
    (result,) = windows.results  # the parent's window is whole and its own
    assert sorted(result.events["name"].tolist()) == ["ProfileStep#0", "parent work"]


_left_started = []


def _leave_a_profiler_started(out_dir):  # pragma: no cover - runs in the child
    """A target that returns with its Profiler still started (a worker_init_fn
    that profiles, a trainer that forgets stop()), under -W error as pytest
    runs it: the child still writes its window."""
    prof = Profiler(scheduler=None, on_trace_ready=profkit.export_protobuf(out_dir))
    prof.start()
    with RecordEvent("child work"):
        pass
    prof.step()
    _left_started.append(prof)


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_a_multiprocessing_child_that_exits_with_a_profiler_started_delivers_its_window(tmp_path, method):
    # fork and forkserver children end with os._exit(): atexit never ran
    # there, and the window was lost without a word.
    context = multiprocessing.get_context(method)
    child = context.Process(target=_leave_a_profiler_started, args=(str(tmp_path),))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0
    (trace,) = os.listdir(tmp_path)
    names = profkit.load_profiler_result(str(tmp_path / trace)).events["name"].tolist()
    assert "child work" in names


_calls_in_child = []


def _count_in_child():  # pragma: no cover - runs in children
    _calls_in_child.append(os.getpid())


def _report_calls(queue):  # pragma: no cover - runs in the child
    queue.put(_calls_in_child == [os.getpid()])


def test_functions_for_multiprocessing_children_run_once_there_and_not_in_os_fork_children():
    from profkit import _multiprocessing_children

    _multiprocessing_children.run_in_forked_children(_count_in_child)
    _multiprocessing_children.run_in_forked_children(_count_in_child)  # once is enough
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_report_calls, args=(queue,))
    child.start()
    ran_once = queue.get(timeout=60)
    child.join(timeout=60)
    read, write = os.pipe()
    forked = os.fork()
    if forked == 0:  # pragma: no cover - a plain fork goes on with the parent's code
        os.write(write, b"1" if _calls_in_child else b"0")
        os._exit(0)
    os.close(write)
    os.waitpid(forked, 0)
    ran_in_plain_fork = os.read(read, 1) == b"1"
    os.close(read)
    assert ran_once and not ran_in_plain_fork and _calls_in_child == []


def test_on_trace_ready_may_restart_the_profiler_and_the_new_run_has_one_step_zero():
    windows = []

    def restart_after_first(prof):
        windows.append(prof.profiler_result.steps)
        if len(windows) == 1:
            prof.stop()
            prof.start()  # begins the new run's step 0; step() must not begin it again

    p = Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2), on_trace_ready=restart_after_first)
    p.start()
    p.step()
    p.step()  # delivers steps 0-1; the callback restarts at step 0
    assert p.step_num == 0 and _C.current_step() == 0
    p.step()
    p.stop()
    assert windows == [[0, 1], [0, 1]]
