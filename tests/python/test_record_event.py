"""RecordEvent: context manager and begin()/end(), nesting, threads, the idle
no-op, and misuse that raises clear errors instead of corrupting the trace."""

import functools
import threading

import numpy as np
import pytest

import profkit
from profkit import RecordEvent, TracerEventType, _C
from profkit.result import ProfilerResult

RECORD, CLOSED = 2, 0


def recorded(body):
    """Runs body() in a recording window; returns the window as a ProfilerResult."""
    _C.set_state(RECORD)
    try:
        body()
    finally:
        _C.set_state(CLOSED)
    return ProfilerResult(_C.collect())


def rows(result):
    ev = result.events
    return [(name, int(t), int(d)) for name, t, d in zip(ev["name"], ev["type"], ev["depth"])]


def test_context_manager_nesting_and_types():
    def body():
        with RecordEvent("outer"):
            with RecordEvent("inner", TracerEventType.Forward):
                pass
            with RecordEvent(name="second", event_type=int(TracerEventType.Backward)) as ev:
                assert ev.is_open

    result = recorded(body)
    assert rows(result) == [("outer", 14, 0), ("inner", 9, 1), ("second", 10, 1)]
    assert list(result.events["parent"]) == [-1, 0, 0]


def test_begin_end_in_a_loop_reuses_one_object():
    ev = RecordEvent("load", TracerEventType.Dataloader)

    def body():
        for _ in range(3):
            ev.begin()
            ev.end()

    result = recorded(body)
    assert rows(result) == [("load", 1, 0)] * 3
    assert np.all(result.events["end_ns"] >= result.events["start_ns"])


def test_duration_covers_the_block():
    import time

    def body():
        with RecordEvent("sleep"):
            time.sleep(0.01)

    (duration,) = recorded(body).events["duration_ns"]
    assert duration >= 10_000_000


def test_not_recording_is_a_no_op():
    before = _C.counters()
    with RecordEvent("idle"):
        pass
    ev = RecordEvent("idle2")
    ev.begin()
    ev.end()
    after = _C.counters()
    assert after["recorded_events"] == before["recorded_events"]
    assert after["unmatched_ends"] == before["unmatched_ends"]
    assert len(_C.collect().host_events) == 0


def test_many_python_threads_each_keep_their_nesting():
    barrier = threading.Barrier(4)

    def worker(k):
        _C.set_thread_name(f"py-{k}")
        barrier.wait()
        for i in range(200):
            with RecordEvent(f"t{k}"):
                with RecordEvent(f"t{k}.inner"):
                    pass

    def body():
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    result = recorded(body)
    ev = result.events
    by_thread = {t["name"]: t for t in result.threads}
    for k in range(4):
        index = list(by_thread).index(f"py-{k}")
        mine = ev[ev["thread"] == index]
        assert len(mine) == 400
        assert set(mine["name"]) == {f"t{k}", f"t{k}.inner"}
        inner = mine[mine["name"] == f"t{k}.inner"]
        assert np.all(inner["depth"] == 1)
        assert np.all(ev["name"][inner["parent"]] == f"t{k}")
    assert result.info["unmatched_ends"] == 0


def test_end_without_begin_raises_and_records_nothing():
    ev = RecordEvent("lonely")
    unmatched = _C.counters()["unmatched_ends"]

    def body():
        with pytest.raises(RuntimeError, match="'lonely': end\\(\\) called without a matching begin\\(\\)"):
            ev.end()
        ev.begin()
        ev.end()
        with pytest.raises(RuntimeError, match="without a matching begin"):
            ev.end()  # a second end is an error too

    result = recorded(body)
    assert rows(result) == [("lonely", 14, 0)]
    assert _C.counters()["unmatched_ends"] == unmatched


def test_begin_twice_raises():
    ev = RecordEvent("twice")

    def body():
        ev.begin()
        with pytest.raises(RuntimeError, match="begin\\(\\) called again before end\\(\\)"):
            ev.begin()
        ev.end()

    assert rows(recorded(body)) == [("twice", 14, 0)]


def test_end_on_another_thread_raises():
    ev = RecordEvent("crossing")
    errors = []

    def other():
        try:
            ev.end()
        except RuntimeError as e:
            errors.append(str(e))

    def body():
        ev.begin()
        t = threading.Thread(target=other)
        t.start()
        t.join()
        ev.end()  # the right thread still can

    assert rows(recorded(body)) == [("crossing", 14, 0)]
    assert len(errors) == 1 and "another thread" in errors[0]


def test_outside_a_window_a_generator_may_end_its_range_on_another_thread():
    # No profiler at all: RecordEvent is a no-op, and a generator paused in a
    # range and finished on another thread must not fail the user's code.
    def batches():
        for i in range(2):
            with RecordEvent("produce"):
                yield i

    produced = batches()
    assert next(produced) == 0
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(list(produced)))
    worker.start()
    worker.join()
    assert outcome == [[1]]


def test_outside_a_window_one_object_may_be_shared_by_threads():
    shared = RecordEvent("load")  # a module-level `with LOAD:` in code run by a thread pool
    inside = threading.Barrier(2)
    errors = []

    def load():
        try:
            with shared:
                inside.wait(timeout=10)  # both threads inside at once
        except Exception as e:  # pragma: no cover - the failure being tested
            errors.append(e)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert not shared.is_open
    with pytest.raises(RuntimeError, match="without a matching begin"):
        shared.end()  # still an error: more ends than begins


def test_a_range_begun_outside_a_window_cannot_be_begun_again_inside_one():
    ev = RecordEvent("straddling")
    ev.begin()  # nothing recorded
    try:
        with pytest.raises(RuntimeError, match="begin\\(\\) called again"):
            recorded(ev.begin)
    finally:
        ev.end()
    assert not ev.is_open


def test_exceptions_in_the_block_propagate_and_the_range_is_closed():
    def body():
        with pytest.raises(KeyError):
            with RecordEvent("failing"):
                raise KeyError("x")
        with RecordEvent("after"):
            pass

    assert rows(recorded(body)) == [("failing", 14, 0), ("after", 14, 0)]


def test_a_range_across_a_window_boundary_is_left_out_without_unmatched_ends():
    unmatched = _C.counters()["unmatched_ends"]
    ev = RecordEvent("early")
    ev.begin()  # not recording yet
    _C.set_state(RECORD)
    with RecordEvent("inside"):
        pass
    ev.end()  # began outside this window: not recorded, not counted as unmatched
    late = RecordEvent("late")
    late.begin()
    _C.set_state(CLOSED)
    late.end()  # the window closed meanwhile
    result = ProfilerResult(_C.collect())
    assert rows(result) == [("inside", 14, 0)]
    assert _C.counters()["unmatched_ends"] == unmatched


def test_a_range_from_an_earlier_window_is_not_ended_in_the_next_one():
    ev = RecordEvent("old")
    _C.set_state(RECORD)
    ev.begin()
    _C.set_state(CLOSED)
    _C.collect()
    _C.set_state(RECORD)
    with RecordEvent("new"):
        ev.end()  # must not close "new"
    _C.set_state(CLOSED)
    assert rows(ProfilerResult(_C.collect())) == [("new", 14, 0)]


def spans(result):
    """{name: (start_ns, end_ns)} of a result whose names are unique."""
    ev = result.events
    return {name: (int(start), int(end)) for name, start, end in zip(ev["name"], ev["start_ns"], ev["end_ns"])}


def test_a_range_ended_before_a_later_one_warns_and_ends_with_it():
    # Crosswise begin()/end() on one thread: "a" ends while "b", begun after
    # it, is open. Ending the engine's innermost event would give "b" the end
    # time of "a" and "a" that of "b"; instead "b" keeps its own times and
    # "a" ends with it, still its parent.
    import time

    a, b = RecordEvent("a"), RecordEvent("b")

    def body():
        a.begin()
        b.begin()
        time.sleep(0.002)
        with pytest.warns(RuntimeWarning, match="RecordEvent 'a' ended while 'b', begun after it on the same thread"):
            a.end()
        time.sleep(0.005)
        b.end()

    result = recorded(body)
    assert rows(result) == [("a", 14, 0), ("b", 14, 1)]
    (a_start, a_end), (b_start, b_end) = spans(result)["a"], spans(result)["b"]
    assert b_end - b_start >= 7_000_000  # b's own time, not cut at a.end()
    assert a_start <= b_start and a_end >= b_end  # ended right after "b", its child
    assert _C.counters()["unmatched_ends"] == 0 and result.info["unfinished_events"] == 0


def test_interleaved_asyncio_tasks_keep_the_later_range_exact():
    import asyncio
    import warnings

    async def request(name, delay):
        with RecordEvent(name):
            await asyncio.sleep(delay)

    async def both():
        first = asyncio.ensure_future(request("fast", 0.01))
        await asyncio.sleep(0.002)  # "slow" begins after "fast"
        await asyncio.gather(first, request("slow", 0.03))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = recorded(lambda: asyncio.run(both()))
    assert any("RecordEvent 'fast' ended while 'slow'" in str(w.message) for w in caught)
    got = spans(result)
    assert got["slow"][1] - got["slow"][0] >= 30_000_000
    assert got["fast"][1] >= got["slow"][1]  # ended with "slow", not before it
    assert result.info["unfinished_events"] == 0


def test_the_warning_names_the_range_whose_end_is_recorded():
    # Three interleaved tasks on one thread: "a1" ends first, while "a2" and
    # "a3" (begun after it, in that order) are open. The engine ends "a1"
    # right after "a2", which encloses "a3" there: the warning names "a2".
    import asyncio
    import warnings

    async def request(name, delay):
        with RecordEvent(name):
            await asyncio.sleep(delay)

    async def three():
        tasks = []
        for name, delay in (("a1", 0.01), ("a2", 0.04), ("a3", 0.02)):
            tasks.append(asyncio.ensure_future(request(name, delay)))
            await asyncio.sleep(0.001)  # each begins after the one before
        await asyncio.gather(*tasks)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = recorded(lambda: asyncio.run(three()))
    messages = [str(w.message) for w in caught if "RecordEvent 'a1' ended" in str(w.message)]
    assert len(messages) == 1 and "'a1' is recorded as ending when 'a2' ends" in messages[0], messages
    got = spans(result)
    assert got["a1"][1] >= got["a2"][1] > got["a3"][1]  # "a1" ended with "a2", after "a3"


def test_a_range_abandoned_open_does_not_hold_up_the_one_below_it():
    import gc

    outer = RecordEvent("outer")

    def body():
        outer.begin()
        RecordEvent("abandoned").begin()  # dropped while open on this thread
        gc.collect()
        outer.end()  # ends "outer" now, and the abandoned range inside it
        with RecordEvent("after"):
            pass

    result = recorded(body)
    assert rows(result) == [("outer", 14, 0), ("abandoned", 14, 1), ("after", 14, 0)]
    assert result.info["unfinished_events"] == 0


def test_a_range_abandoned_open_is_not_ended_by_the_ranges_after_it():
    # Its end is unknown: it stays open (unfinished) rather than take the end
    # time of whatever range, begun after it, ends next.
    import gc

    def body():
        RecordEvent("abandoned").begin()
        gc.collect()
        with RecordEvent("after"):
            pass

    result = recorded(body)
    assert rows(result) == [("after", 14, 0)]
    assert result.info["unfinished_events"] == 1


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        ((), {}, TypeError, "missing required argument 'name'"),
        ((3,), {}, TypeError, "name must be a str"),
        (("a", 1, 2), {}, TypeError, "at most 2 positional"),
        (("a",), {"colour": 1}, TypeError, "unexpected keyword argument 'colour'"),
        (("a",), {"name": "b"}, TypeError, "multiple values for argument 'name'"),
        (("a", 15), {}, ValueError, "event_type 15 is not a TracerEventType"),
        (("a", -1), {}, ValueError, "is not a TracerEventType"),
        (("a", 2**64), {}, ValueError, "event_type 18446744073709551616 is not a TracerEventType"),
        (("a", "Forward"), {}, TypeError, "event_type must be a TracerEventType or an int"),
        (("bad\0name",), {}, ValueError, "NUL"),
    ],
)
def test_invalid_arguments(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        RecordEvent(*args, **kwargs)


def test_event_type_accepts_plain_enums_and_none():
    import enum

    class Mine(enum.Enum):
        FORWARD = 9

    assert RecordEvent("a", Mine.FORWARD).event_type is TracerEventType.Forward
    assert RecordEvent("a", None).event_type is TracerEventType.PythonUserDefined
    assert RecordEvent("a").event_type is TracerEventType.PythonUserDefined


def test_type_call_and_new_paths_work_like_the_fast_path():
    a = type.__call__(RecordEvent, "slow", event_type=TracerEventType.Operator)
    b = RecordEvent.__new__(RecordEvent, "new")
    assert (a.name, a.event_type, b.name) == ("slow", TracerEventType.Operator, "new")


def test_unicode_names_round_trip():
    name = "événement ☃ 😀"

    def body():
        with RecordEvent(name):
            pass

    assert rows(recorded(body)) == [(name, 14, 0)]


@pytest.mark.parametrize("recording", [True, False])
def test_a_lone_surrogate_in_a_name_is_recorded_as_the_replacement_character(recording):
    # A lone surrogate has no UTF-8 form (os.fsdecode makes one of a file
    # name's byte that is not UTF-8); before, RecordEvent raised an unexplained
    # UnicodeEncodeError, recording or not. The range is recorded, and the
    # object named, with U+FFFD in its place, as the engine shows bytes from C
    # that are not UTF-8.
    name = "read data_\udcff.bin \ud800!"  # os.fsdecode(b"data_\xff.bin"), and a high surrogate alone
    events = []

    def body():
        ev = RecordEvent(name, TracerEventType.UserDefined)
        events.append(ev)
        with ev:
            pass

    result = recorded(body) if recording else None
    if not recording:
        body()
    assert events[0].name == "read data_\ufffd.bin \ufffd!"
    if recording:
        assert rows(result) == [("read data_\ufffd.bin \ufffd!", int(TracerEventType.UserDefined), 0)]
    # A NUL is still refused: the engine's text would end there.
    with pytest.raises(ValueError, match="NUL"):
        RecordEvent("\ud800\0")


def test_a_thread_whose_name_holds_a_lone_surrogate_is_named_with_the_replacement_character():
    # Its lane fell back to the OS name ("python3"): the name had no UTF-8 form.
    def work():
        with RecordEvent("work"):
            pass

    def body():
        worker = threading.Thread(target=work, name="w\udcff")
        worker.start()
        worker.join()

    result = recorded(body)
    assert "w\ufffd" in [t["name"] for t in result.threads]


def test_introspection():
    ev = RecordEvent("x", TracerEventType.UserDefined)
    assert repr(ev) == "RecordEvent('x', event_type=UserDefined)"
    ev.begin()
    assert repr(ev).endswith("[open]") and ev.is_open
    ev.end()
    assert not ev.is_open
    assert RecordEvent.__module__ == "profkit" and profkit.RecordEvent is RecordEvent
    assert "begin()" in RecordEvent.__doc__ and "RuntimeError" in RecordEvent.__doc__
    assert RecordEvent.__enter__.__name__ == "__enter__"
    assert "bound method RecordEvent.__exit__" in repr(ev.__exit__)
    # The special methods also work when called unbound.
    assert RecordEvent.__enter__(ev) is ev
    assert RecordEvent.__exit__(ev, None, None, None) is False
    with pytest.raises(TypeError):
        RecordEvent.__enter__(object())
    with pytest.raises(TypeError):
        ev.__enter__(1)
    with pytest.raises(TypeError):
        RecordEvent.__dict__["__enter__"].__get__(object(), object)


def test_is_recording_follows_the_engine():
    assert not _C.is_recording()
    _C.set_state(RECORD)
    assert _C.is_recording()
    _C.set_state(CLOSED)
    assert not _C.is_recording()


def test_recycled_objects_start_fresh():
    # Objects are recycled through a free list: a new one never inherits state.
    kept = []
    for k in range(100):
        ev = RecordEvent(f"n{k}", k % 15)
        if k % 3 == 0:
            ev.begin()  # left open, then dropped or kept
        if k % 7 == 0:
            kept.append((k, ev))
    for k, ev in kept:
        assert ev.name == f"n{k}" and ev.event_type == k % 15 and ev.is_open == (k % 3 == 0)
    fresh = RecordEvent("fresh")
    assert not fresh.is_open and fresh.event_type is TracerEventType.PythonUserDefined
    with pytest.raises(RuntimeError):
        fresh.end()


# ---- as a decorator (paddle.profiler's RecordEvent is a ContextDecorator) ----------------


def test_a_decorated_function_is_one_range_per_call_even_recursive():
    @RecordEvent("fib", TracerEventType.Forward)
    def fib(n):
        """Fibonacci."""
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib.__name__ == "fib" and fib.__doc__ == "Fibonacci."  # functools.wraps
    values = []
    result = recorded(lambda: values.append(fib(3)))
    assert values == [2]
    # fib(3) -> fib(2) -> (fib(1), fib(0)), fib(1): five calls, nested as they ran.
    assert rows(result) == [("fib", 9, 0), ("fib", 9, 1), ("fib", 9, 2), ("fib", 9, 2), ("fib", 9, 1)]


def test_a_decorated_function_closes_its_range_when_it_raises_and_on_every_thread():
    @RecordEvent("work")
    def work(fail):
        if fail:
            raise KeyError("boom")

    def body():
        with pytest.raises(KeyError):
            work(True)
        threads = [threading.Thread(target=work, args=(False,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    result = recorded(body)
    assert [name for name, _, _ in rows(result)] == ["work"] * 5
    assert len(set(result.events["thread"])) == 5
    assert result.info["unmatched_ends"] == 0 and result.info["unfinished_events"] == 0


def test_decorating_what_a_range_cannot_time_is_a_clear_error():
    async def coroutine():
        pass

    def generator():
        yield 1

    # A partial has no __qualname__: it is named by its repr.
    for function in (coroutine, generator, functools.partial(coroutine)):
        with pytest.raises(TypeError, match="coroutine or generator function.*with RecordEvent"):
            RecordEvent("x")(function)
    with pytest.raises(TypeError, match="needs a function, not int"):
        RecordEvent("x")(3)
    with pytest.raises(TypeError, match="takes the function to wrap, and only that"):
        RecordEvent("x")(print, print)
