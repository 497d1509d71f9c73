"""The recording engine's limits, seen from Python: the memory cap counts what
it drops as what it is (events, or arguments of events), threads that idle
after a window hold no buffer against a later window's cap, and numbers and
names the engine cannot hold are refused where they are given, not recorded
wrong."""

import os
import subprocess
import sys
import threading
import warnings

import pytest

from profkit import Profiler, ProfilerState, ProfilerWarning, RecordEvent, TracerEventType, _C
from profkit._profiler_arguments import check_samples

BUFFER = 256 * 1024  # one record buffer (cpp/recorder/chunk.h), the least memory cap


@pytest.fixture
def engine_memory_cap():
    """Puts the engine's memory cap back after the test."""
    before = _C.get_memory_cap()
    yield
    _C.set_memory_cap(before)


def _count_named(result, name):
    return sum(1 for n in result.events["name"] if n == name)


def test_arguments_past_the_memory_cap_count_as_lost_arguments_not_as_dropped_events(engine_memory_cap):
    # Each argument that found no room was counted as a dropped event: an
    # operator with three arguments made the window's "lost events" four
    # times what it lost, and lost_event_args stayed 0.
    op, key = _C.intern("capped op"), _C.intern("flops")
    n = 10000  # 40,000 records: more than one buffer holds
    results = []
    cap = _C.counters()["memory_used"] + BUFFER  # room for one buffer more than the process holds
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ProfilerWarning)
        with Profiler(scheduler=None, memory_cap=cap, on_trace_ready=lambda p: results.append(p.profiler_result)):
            for _ in range(n):
                _C.begin_event(op, int(TracerEventType.Operator))
                for _ in range(3):
                    _C.event_arg_int(key, 48)
                _C.end_event()
    (result,) = results
    kept = _count_named(result, "capped op")
    assert 0 < kept < n
    assert result.info["dropped_events"] == n - kept
    assert result.info["lost_event_args"] == 3 * n - len(result.event_args)
    assert any(f"lost events: {n - kept} past the engine's memory cap" in str(w.message) for w in caught)


def test_threads_idle_after_a_window_hold_no_buffer_against_the_next_windows_cap(engine_memory_cap):
    # Every live thread that had recorded kept its 256 KiB buffer after
    # stop(), counted against the memory cap: a thread pool of 16 held 4 MiB,
    # and a later window under a 1 MiB cap dropped every event of a new thread.
    workers_n = 16
    before = _C.counters()["memory_used"]
    go, finish = threading.Event(), threading.Event()
    recorded = threading.Barrier(workers_n + 1)

    def pool_worker():
        go.wait()
        for _ in range(100):
            with RecordEvent("pool"):
                pass
        recorded.wait()
        finish.wait()  # alive and idle, as a pool's threads are

    def fresh():
        for _ in range(1000):
            with RecordEvent("fresh"):
                pass

    results = []
    keep = lambda p: results.append(p.profiler_result)  # noqa: E731
    workers = [threading.Thread(target=pool_worker) for _ in range(workers_n)]
    for worker in workers:
        worker.start()
    try:
        with Profiler(scheduler=None, on_trace_ready=keep):
            go.set()
            recorded.wait()
        # A page of each idle worker's buffer is left, not the buffer.
        assert _C.counters()["memory_used"] - before < workers_n * BUFFER // 8
        with warnings.catch_warnings():
            warnings.simplefilter("error", ProfilerWarning)  # a window that lost events warns
            with Profiler(scheduler=None, memory_cap=before + 4 * BUFFER, on_trace_ready=keep):
                thread = threading.Thread(target=fresh)
                thread.start()
                thread.join()
    finally:
        finish.set()
        for worker in workers:
            worker.join()
    first, second = results
    assert _count_named(first, "pool") == workers_n * 100
    assert second.info["dropped_events"] == 0
    assert _count_named(second, "fresh") == 1000


def _num_samples(result):
    return [int(v) for k, v in zip(result.event_args["key"], result.event_args["value"]) if k == "num_samples"]


def test_num_samples_from_2_63_on_is_refused_with_a_clear_error():
    # An argument's value is a signed 64-bit integer: 2**64 - 1 samples read
    # back as -1. The message promised "< 2**64".
    assert check_samples(2**63 - 1) == 2**63 - 1
    for bad in (2**63, 2**64 - 1):
        with pytest.raises(ValueError, match=rf"num_samples must be >= 0 and < 2\*\*63, got {bad}$"):
            check_samples(bad)
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilerWarning)  # a schedule that never returns its windows
        # A scheduler of the user's is asked at every step: each takes the checked path.
        with Profiler(
            scheduler=lambda step: ProfilerState.RECORD, on_trace_ready=lambda p: results.append(p.profiler_result)
        ) as prof:
            with pytest.raises(ValueError, match=r"num_samples must be >= 0 and < 2\*\*63"):
                prof.step(num_samples=2**63)
            assert prof.step_num == 0  # refused before anything changed
            prof.step(num_samples=2**63 - 1)
    assert [2**63 - 1] == [n for result in results for n in _num_samples(result)]


def test_num_samples_from_2_63_on_is_refused_on_the_steady_steps_fast_path_too():
    # scheduler=None keeps the state: step() takes its shortcut, which let
    # 2**63 to 2**64 - 1 through to the engine.
    with Profiler(scheduler=None, on_trace_ready=lambda p: None) as prof:
        prof.step(num_samples=1)
        with pytest.raises(ValueError, match=r"num_samples must be >= 0 and < 2\*\*63"):
            prof.step(num_samples=2**63)
        assert prof.step_num == 1


def test_the_engine_records_num_samples_past_int64_max_as_int64_max():
    # _C.step is pk_step, which takes any uint64_t: what it cannot record as
    # a signed 64-bit integer is recorded as the largest one, not as negative.
    results = []
    with Profiler(scheduler=None, on_trace_ready=lambda p: results.append(p.profiler_result)):
        _C.step(2**64 - 1)
    (result,) = results
    assert _num_samples(result) == [2**63 - 1]


# Fills the engine's name table, made small for the test through
# $PROFKIT_TEST_NAME_TABLE_CAPACITY (4,194,304 names would take seconds and
# half a gigabyte), then records an event whose name has no room left.
_FULL_NAME_TABLE = """
import warnings
from profkit import Profiler, RecordEvent, _C

assert _C.intern("") == 0
for n in range(100000):
    try:
        _C.intern(f"filler {n}")
    except MemoryError as e:
        print("refused:", e)
        break
else:
    print("never refused")
results = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the window lost an event
    with Profiler(scheduler=None, on_trace_ready=lambda p: results.append(p.profiler_result)):
        with RecordEvent("filler 1"):
            with RecordEvent("a name the table has no room for"):
                pass
(result,) = results
print("names:", sorted(set(result.events["name"])))
print("dropped:", result.info["dropped_events"])
"""


def test_a_name_the_full_name_table_cannot_take_is_refused_not_recorded_as_empty():
    # Past the table's 4,194,304 names, _C.intern returned 0 (the name "")
    # and every new RecordEvent name was recorded as "", without a word.
    env = dict(os.environ, PROFKIT_TEST_NAME_TABLE_CAPACITY="4096")
    child = subprocess.run(
        [sys.executable, "-c", _FULL_NAME_TABLE], env=env, capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    assert lines[0].startswith("refused: pk_intern: the name table is full (4096 names); intern stable names")
    assert lines[1:] == ["names: ['ProfileStep#0', 'filler 1']", "dropped: 1"]


@pytest.mark.parametrize("cap", [2**64, 2**70])
def test_a_memory_cap_past_what_the_engine_takes_is_refused_by_the_constructor(cap):
    # It passed the constructor, and start() failed with pybind11's
    # "incompatible function arguments".
    with pytest.raises(ValueError, match=rf"memory_cap must be <= 2\*\*64 - 1, got {cap}$"):
        Profiler(memory_cap=cap, on_trace_ready=lambda p: None)
    assert Profiler.active() is None


def test_the_largest_memory_cap_is_taken(engine_memory_cap):
    with Profiler(scheduler=None, memory_cap=2**64 - 1, on_trace_ready=lambda p: None):
        assert _C.get_memory_cap() == 2**64 - 1
