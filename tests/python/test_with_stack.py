"""Profiler(with_stack=True): the Python calls of the Profiler's thread as PythonOp events."""

import os
import sys
import threading

import pytest

import profkit
from profkit import ProfilerWarning, RecordEvent, TracerEventType, _C, _python_stacks, cli

from clock_helpers import CLOCKS, run_on_clock

PYTHON_OP = int(TracerEventType.PythonOp)
HERE = os.path.abspath(__file__)
PROFKIT_DIR = os.path.dirname(os.path.abspath(profkit.__file__))


def frame_name(function):
    """The name with_stack gives a Python function's calls."""
    code = function.__code__
    qualname = code.co_qualname if sys.version_info >= (3, 11) else code.co_name
    return f"{code.co_filename}({code.co_firstlineno}): {qualname}"


def record(body, **options):
    """Runs body(prof) inside one recording window; returns the window's result."""
    prof = profkit.Profiler(on_trace_ready=lambda p: None, timer_only=False, **options)
    prof.start()
    try:
        body(prof)
    finally:
        prof.stop()
    return prof.profiler_result


def python_ops(result):
    events = result.events
    return events[events["type"] == PYTHON_OP]


def parent_name(result, index):
    parent = result.events[index]["parent"]
    return None if parent < 0 else result.events[parent]["name"]


def indices_named(result, name):
    return [i for i, e in enumerate(result.events) if e["name"] == name]


def leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total


def middle():
    with RecordEvent("range"):
        leaf(200)
    return sorted([3, 1, 2])


class Model:
    def forward(self):
        return middle()


def test_calls_nest_under_their_callers_and_ranges_under_the_call_that_opened_them():
    model = Model()

    def body(prof):
        model.forward()
        prof.step()
        model.forward()

    result = record(body, with_stack=True)
    forwards = indices_named(result, frame_name(Model.forward))
    assert len(forwards) == 2
    for index in indices_named(result, frame_name(middle)):
        assert parent_name(result, index) == frame_name(Model.forward)
    ranges = indices_named(result, "range")
    assert len(ranges) == 2
    for index in ranges:
        assert parent_name(result, index) == frame_name(middle)
    for index in indices_named(result, frame_name(leaf)):
        assert parent_name(result, index) == "range"
    sorts = indices_named(result, "<built-in function builtins.sorted>")
    assert len(sorts) == 2
    assert all(parent_name(result, i) == frame_name(middle) for i in sorts)
    assert all(result.events[i]["type"] == PYTHON_OP for i in forwards + sorts)
    # A call lies within its caller.
    events = result.events
    for index in indices_named(result, frame_name(middle)):
        parent = events[events[index]["parent"]]
        assert parent["start_ns"] <= events[index]["start_ns"] <= events[index]["end_ns"] <= parent["end_ns"]


_CLOCK_CHILD = r"""
import json, time
import profkit
from profkit import RecordEvent

def sleeper():
    with RecordEvent("nap"):
        time.sleep(0.002)

prof = profkit.Profiler(on_trace_ready=lambda p: None, timer_only=False, with_stack=True)
before = profkit._C.now_ns()
prof.start()
sleeper()
prof.stop()
after = profkit._C.now_ns()
events = prof.profiler_result.events
def one(name):
    (index,) = [i for i, e in enumerate(events) if e["name"].endswith(name)]
    e = events[index]
    return {"start": int(e["start_ns"]), "end": int(e["end_ns"]), "parent": int(e["parent"]), "index": index}
print(json.dumps({"before": before, "after": after, "call": one(": sleeper"), "range": one("nap")}))
"""


@pytest.mark.parametrize("clock", CLOCKS)
def test_calls_are_timed_on_either_engine_clock(clock):
    # The tracer reads the engine's raw ticks (the TSC by default;
    # CLOCK_MONOTONIC ns with PROFKIT_CLOCK=monotonic), converted at collect:
    # on either clock a call lands inside the window and around its range.
    out = run_on_clock(_CLOCK_CHILD, clock)
    call, nap = out["call"], out["range"]
    assert out["before"] <= call["start"] <= nap["start"] <= nap["end"] <= call["end"] <= out["after"]
    assert nap["end"] - nap["start"] >= 2_000_000  # the 2 ms sleep
    assert nap["parent"] == call["index"]


def test_profkits_own_calls_and_calls_begun_before_the_window_are_left_out():
    def body(prof):
        leaf(10)
        prof.step()  # profkit's step(): its timer, its state changes
        leaf(10)

    result = record(body, with_stack=True)
    names = set(python_ops(result)["name"])
    assert frame_name(leaf) in names
    assert not [n for n in names if PROFKIT_DIR in n or "profkit." in n], names
    assert not [n for n in names if "perf_counter" in n or "step_begin" in n], names
    # record() and this test began before the window opened; body() in it.
    assert frame_name(body) in names
    assert frame_name(record) not in names
    assert not [n for n in names if n.endswith("test_profkits_own_calls_and_calls_begun_before_the_window_are_left_out")]


@RecordEvent("decorated range")
def decorated():
    return leaf(40)


class Dataset:
    def __getitem__(self, index):
        if index >= 2:
            raise IndexError(index)
        return leaf(index + 1)


def test_the_users_code_that_profkit_calls_is_recorded_and_profkits_wrapper_is_not():
    def body(prof):
        decorated()
        for _ in profkit.wrap_dataloader(iter(Dataset())):
            pass

    result = record(body, with_stack=True)
    [range_index] = indices_named(result, "decorated range")
    [function] = indices_named(result, frame_name(decorated.__wrapped__))
    assert parent_name(result, function) == "decorated range"
    assert parent_name(result, range_index) == frame_name(body)  # the decorator's wrapper is not a frame
    items = indices_named(result, frame_name(Dataset.__getitem__))
    assert len(items) == 3  # two items and the IndexError that ends the iteration
    assert {parent_name(result, i) for i in items} == {"Dataloader"}
    names = set(python_ops(result)["name"])
    assert not [n for n in names if PROFKIT_DIR in n], names


def test_naming_the_thread_for_a_decorated_functions_range_is_not_recorded_as_the_programs_calls():
    # The decorator's range is the first thing the window records on this
    # thread (this test began before the window: its own calls are not
    # recorded), so its begin() names the thread's lanes, through threading's
    # Python code (main_thread(), Thread.name), run from under the wrapper
    # whose Python callees are recorded: they showed as the program's calls.
    prof = profkit.Profiler(on_trace_ready=lambda p: None, timer_only=False, with_stack=True)
    prof.start()
    decorated()
    prof.stop()
    names = set(python_ops(prof.profiler_result)["name"])
    assert frame_name(decorated.__wrapped__) in names
    assert not [n for n in names if n.startswith(threading.__file__)], names


class EventTypeObject:
    """An event type given as an object: profkit's binding reads it through this Python method."""

    def __index__(self):
        return int(TracerEventType.UserDefined)


@_python_stacks.calls_user_code
def wrapper_of_profkits():
    # As profkit's wrappers (marked the same way): its built-in calls are its
    # machinery, its Python callees the user's code.
    _C.begin_event(_C.intern("typed by an object"), EventTypeObject())
    _C.end_event()
    return leaf(3)


def test_what_profkits_own_builtins_call_is_left_out_under_a_pass_through_function_too():
    result = record(lambda prof: wrapper_of_profkits(), with_stack=True)
    names = set(python_ops(result)["name"])
    assert frame_name(leaf) in names
    assert frame_name(wrapper_of_profkits) not in names
    # begin_event's own call of __index__ is profkit's bookkeeping, as it is
    # under the user's code; it was recorded here, its built-in passed through.
    assert frame_name(EventTypeObject.__index__) not in names
    assert len(indices_named(result, "typed by an object")) == 1


def test_without_with_stack_no_python_calls_are_recorded():
    result = record(lambda prof: leaf(10))
    assert len(python_ops(result)) == 0


def test_a_call_open_when_the_window_closes_is_recorded_up_to_the_close():
    prof = profkit.Profiler(on_trace_ready=lambda p: None, timer_only=False, with_stack=True)

    def runs_past_the_close():
        leaf(50)
        prof.stop()

    prof.start()
    runs_past_the_close()
    result = prof.profiler_result
    [index] = indices_named(result, frame_name(runs_past_the_close))
    inner = indices_named(result, frame_name(leaf))
    assert [parent_name(result, i) for i in inner] == [frame_name(runs_past_the_close)]
    assert result.events[index]["end_ns"] <= result.end_ns
    assert result.info["unfinished_events"] == 0
    # ... inside the window's last step: the step ended before the tracer
    # closed the open calls, so they sat after it, outside every step, and a
    # flame graph counted their time twice (the step's self time too).
    assert parent_name(result, index) == "ProfileStep#0"


def test_calls_open_when_a_scheduled_window_closes_in_step_end_inside_its_last_step():
    prof = profkit.Profiler(on_trace_ready=lambda p: None, scheduler=(1, 3), with_stack=True)

    def two_steps():  # begins in the window (step 1) and closes it (step 2 -> 3)
        leaf(50)
        prof.step()
        leaf(50)
        prof.step()

    prof.start()
    prof.step()  # the window opens at step 1
    two_steps()
    prof.stop()
    result = prof.profiler_result
    [index] = indices_named(result, frame_name(two_steps))
    # It spans a step boundary, so no step holds it; it ends with the last one.
    last_step = result.events[indices_named(result, "ProfileStep#2")[0]]
    assert result.events[index]["end_ns"] <= last_step["end_ns"]


def recurse(n):
    return leaf(10) if n == 0 else recurse(n - 1) + 1


def test_calls_nested_past_the_depth_limit_are_dropped_with_a_warning_not_summed_again(tmp_path):
    # 300 levels of recursion: the calls past 255 levels were kept with their
    # depth stopped at 255, read as overlapping siblings under one parent,
    # and the flame graph summed their time ~45 times over.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 2000))
    try:
        with pytest.warns(ProfilerWarning, match="nested deeper than 256 levels"):
            result = record(lambda prof: recurse(300), with_stack=True)
    finally:
        sys.setrecursionlimit(limit)
    calls = indices_named(result, frame_name(recurse))
    depths = [int(result.events[i]["depth"]) for i in calls]
    assert depths == list(range(depths[0], 256))  # each nested in the one before, up to the limit
    assert [parent_name(result, i) for i in calls[1:]] == [frame_name(recurse)] * (len(calls) - 1)
    assert result.info["overflowed_events"] >= 301 - len(calls)  # the deeper calls, counted
    result.export_stacks(str(tmp_path / "deep.stacks"))
    with open(tmp_path / "deep.stacks") as f:
        total_us = sum(int(line.rsplit(" ", 1)[1]) for line in f)
    assert total_us <= (result.end_ns - result.start_ns) / 1000 + 1


def another_profile_function(frame, event, arg):
    pass


def test_a_profile_function_set_during_the_window_is_said_and_no_call_is_stretched_to_the_close():
    # A profile function set mid-window (sys.setprofile; cProfile before
    # 3.12) replaces profkit's tracer on the thread: the calls still open
    # then were recorded as lasting to the close (20 ms for a call of
    # microseconds), and the calls after it went missing without a word.
    def turn_on():
        sys.setprofile(another_profile_function)

    def body(prof):
        leaf(10)
        turn_on()
        leaf(10)

    try:
        with pytest.warns(ProfilerWarning, match="set another profile function"):
            result = record(body, with_stack=True)
    finally:
        sys.setprofile(None)
    names = set(result.events["name"])
    assert frame_name(leaf) in names  # the call before, recorded
    assert frame_name(turn_on) not in names  # open when replaced: its end is unknown
    assert not any("setprofile" in str(n) for n in names)


def test_a_call_that_raises_ends_where_the_exception_leaves_it():
    def raises():
        leaf(20)
        raise KeyError("x")

    def catches():
        try:
            raises()
        except KeyError:
            pass
        leaf(5)

    result = record(lambda prof: catches(), with_stack=True)
    [raised] = indices_named(result, frame_name(raises))
    assert parent_name(result, raised) == frame_name(catches)
    leaves = indices_named(result, frame_name(leaf))
    assert [parent_name(result, i) for i in leaves] == [frame_name(raises), frame_name(catches)]
    assert result.events[leaves[1]]["start_ns"] >= result.events[raised]["end_ns"]


def test_each_resumption_of_a_generator_is_a_call():
    def numbers():
        for i in range(3):
            yield leaf(i)

    def consume():
        return list(numbers())

    result = record(lambda prof: consume(), with_stack=True)
    resumptions = indices_named(result, frame_name(numbers))
    assert len(resumptions) == 4  # three yields and the final return
    assert {parent_name(result, i) for i in resumptions} == {frame_name(consume)}  # list() is a type: no call of its own


class Worker:
    """A thread started before the window, calling ``work`` whenever asked (with ``profile``
    set on itself first, when given)."""

    def __init__(self, work, profile=None):
        self.work = work
        self.profile = profile
        self.asked = threading.Event()
        self.done = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self.loop)
        self.thread.start()

    def loop(self):
        if self.profile is not None:
            sys.setprofile(self.profile)
        while True:
            self.asked.wait()
            self.asked.clear()
            if self.stopping:
                return
            self.work()
            self.done.set()

    def run_once(self):
        self.done.clear()
        self.asked.set()
        assert self.done.wait(10)

    def close(self):
        self.stopping = True
        self.asked.set()
        self.thread.join()


def test_every_thread_is_traced_those_running_and_those_started_in_the_window():
    def other_thread_work():
        leaf(30)

    def started_in_the_window():
        leaf(7)

    worker = Worker(other_thread_work)
    started = []
    try:

        def body(prof):
            worker.run_once()
            thread = threading.Thread(target=started_in_the_window)
            thread.start()
            thread.join()
            started.append(thread.native_id)
            leaf(5)

        result = record(body, with_stack=True)
        assert _python_stacks._threading_hook() is None  # profkit's hook for new threads is gone
        after = record(lambda prof: worker.run_once())  # no with_stack: the worker's tracer is gone
    finally:
        worker.close()
    events = result.events
    for tid, outer in ((worker.thread.native_id, other_thread_work), (started[0], started_in_the_window)):
        on_thread = [i for i, e in enumerate(events) if e["tid"] == tid]
        [work] = [i for i in on_thread if events[i]["name"] == frame_name(outer)]
        [inner] = [i for i in on_thread if events[i]["name"] == frame_name(leaf)]
        assert events[inner]["parent"] == work
        assert events[work]["type"] == PYTHON_OP
    assert list(python_ops(result)["name"]).count(frame_name(leaf)) == 3  # the two threads' and the loop's
    assert len(python_ops(after)) == 0


def test_a_thread_that_records_only_python_calls_is_named_after_its_thread_in_each_window():
    # Its lanes are named after its threading.Thread, as a thread that runs
    # RecordEvent gets; before, such a thread showed the process's OS name
    # ("python3") on every lane.
    def in_the_window():
        leaf(9)

    worker = Worker(lambda: leaf(4))
    worker.thread.name = "worker before the window"
    started = []
    try:

        def body(prof):
            worker.run_once()
            thread = threading.Thread(target=in_the_window, name="started in the window")
            thread.start()
            thread.join()
            started.append(thread.native_id)

        first = record(body, with_stack=True)
        worker.thread.name = "renamed between windows"
        second = record(lambda prof: worker.run_once(), with_stack=True)
    finally:
        worker.close()
    names = {t["tid"]: t["name"] for t in first.threads}
    assert names[worker.thread.native_id] == "worker before the window"
    assert names[started[0]] == "started in the window"
    assert {t["tid"]: t["name"] for t in second.threads}[worker.thread.native_id] == "renamed between windows"


def test_a_file_name_that_is_not_utf8_names_its_calls_with_the_replacement_character():
    # co_filename of code from a file whose name is not UTF-8 holds a lone
    # surrogate (surrogateescape). Before, the whole file name became "?".
    namespace = {}
    exec(compile("def from_there():\n    return 1\n", "/data/mod_\udcff.py", "exec"), namespace)
    result = record(lambda prof: namespace["from_there"](), with_stack=True)
    assert "/data/mod_\ufffd.py(1): from_there" in list(python_ops(result)["name"])


def test_a_thread_the_tracer_cannot_take_runs_untraced(monkeypatch):
    def refuses(frame):
        raise RuntimeError("simulated")

    monkeypatch.setattr(_python_stacks._C, "python_tracer_adopt", refuses)
    ran = []

    def started_in_the_window():
        ran.append(leaf(4))

    def body(prof):
        thread = threading.Thread(target=started_in_the_window)
        thread.start()
        thread.join()

    result = record(body, with_stack=True)
    assert ran == [6]  # the thread ran its target
    assert frame_name(started_in_the_window) not in list(python_ops(result)["name"])


def test_a_threading_profile_hook_of_the_programs_own_is_left_in_place():
    def theirs(frame, event, arg):
        sys.setprofile(None)

    threading.setprofile(theirs)
    try:
        with pytest.warns(ProfilerWarning, match="threads started in this window"):
            result = record(lambda prof: leaf(3), with_stack=True)
        assert _python_stacks._threading_hook() is theirs
    finally:
        threading.setprofile(None)
    assert frame_name(leaf) in list(python_ops(result)["name"])


def test_a_thread_with_another_profile_function_keeps_it_and_the_others_are_traced():
    calls = []

    def theirs(frame, event, arg):
        calls.append(event)

    worker = Worker(lambda: leaf(3), profile=theirs)
    try:
        worker.run_once()  # its profile function is set
        with pytest.warns(ProfilerWarning, match="1 other thread"):
            result = record(lambda prof: (worker.run_once(), leaf(4)), with_stack=True)
        seen = len(calls)
        worker.run_once()
        assert len(calls) > seen  # still theirs after the window
    finally:
        worker.close()
    ops = python_ops(result)
    assert set(ops["tid"]) == {threading.get_native_id()}
    assert frame_name(leaf) in list(ops["name"])


def test_another_profile_function_is_left_in_place_with_a_warning():
    calls = []

    def theirs(frame, event, arg):
        calls.append(event)

    sys.setprofile(theirs)
    try:
        with pytest.warns(ProfilerWarning, match="another profile function"):
            result = record(lambda prof: leaf(10), with_stack=True)
        assert sys.getprofile() is theirs
    finally:
        sys.setprofile(None)
    assert len(python_ops(result)) == 0
    assert "call" in calls


def test_every_window_of_a_schedule_is_traced_and_nothing_between_them():
    seen = []

    def marker(step):
        return step

    prof = profkit.Profiler(
        scheduler=profkit.make_scheduler(closed=1, ready=0, record=2, repeat=2),
        on_trace_ready=lambda p: seen.append(p.profiler_result),
        timer_only=False,
        with_stack=True,
    )
    prof.start()
    for step in range(6):
        marker(step)
        prof.step()
    prof.stop()
    assert len(seen) == 2
    for result in seen:
        assert list(python_ops(result)["name"]).count(frame_name(marker)) == 2
    assert not any(n == frame_name(marker) for n in python_ops(seen[0])["name"][2:])


def test_the_calls_survive_the_pktrace_and_chrome_round_trips(tmp_path):
    result = record(lambda prof: Model().forward(), with_stack=True)
    want = sorted(python_ops(result)["name"])
    assert frame_name(Model.forward) in want
    result.save(tmp_path / "run.pktrace")
    result.export_chrome_tracing(tmp_path / "run.trace.json")
    for path in ("run.pktrace", "run.trace.json"):
        loaded = profkit.load_profiler_result(tmp_path / path)
        assert sorted(python_ops(loaded)["name"]) == want
    summary = result.summary(views=[profkit.SummaryView.OverView])
    assert "PythonOp" in summary


def test_with_stack_is_kept_on_the_profiler():
    assert profkit.Profiler(with_stack=True).with_stack is True
    assert profkit.Profiler().with_stack is False


def test_the_flame_graph_has_the_python_calls_as_frames(tmp_path):
    def body(prof):
        for _ in range(3):
            Model().forward()

    result = record(body, with_stack=True)
    result.export_stacks(tmp_path / "run.stacks")
    stacks = {}
    for line in (tmp_path / "run.stacks").read_text().splitlines():
        stack, value = line.rsplit(" ", 1)
        stacks[stack] = int(value)
    path = ";".join([frame_name(body), frame_name(Model.forward), frame_name(middle), "range", frame_name(leaf)])
    matching = [stack for stack in stacks if stack.endswith(path)]
    assert len(matching) == 1, sorted(stacks)
    # The three calls of leaf() add up under one stack: their self time.
    events = result.events
    leaves = [i for i, e in enumerate(events) if e["name"] == frame_name(leaf)]
    assert len(leaves) == 3
    assert abs(stacks[matching[0]] - sum(int(events[i]["duration_ns"]) for i in leaves) / 1000) <= 1


def tracing_in_child():
    from profkit import _python_stacks

    return _python_stacks._tracing


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_multiprocessing_forks_in_a_window_stops_tracing():
    import multiprocessing

    def body(prof):
        with multiprocessing.get_context("fork").Pool(1) as pool:
            body.child = pool.apply_async(tracing_in_child).get(timeout=60)
        body.parent = _python_stacks._tracing

    record(body, with_stack=True)
    assert body.parent is True
    assert body.child is False


def op_here():
    with RecordEvent("my::op", TracerEventType.Operator):
        leaf(20)


def op_elsewhere():
    with RecordEvent("my::op", TracerEventType.Operator):
        leaf(20)


def calls_by_location(table):
    calls = table.columns.index("Calls")
    location = table.columns.index("Source Location")
    return {row[location]: row[calls] for row in table.rows if row[0] == "my::op"}


def test_operator_rows_per_source_location(tmp_path, capsys):
    def body(prof):
        op_here()
        op_here()
        op_elsewhere()
        with RecordEvent("my::op", TracerEventType.Operator):  # body() itself is its innermost frame
            pass

    result = record(body, with_stack=True)
    short = {f: os.path.basename(frame_name(f)) for f in (op_here, op_elsewhere, body)}
    data = result.summary_data(views=profkit.SummaryView.OperatorView, group_by_stack_n=1, op_detail=False)
    table = data["OperatorView"]
    assert table.columns[-1] == "Source Location" and table.kinds[-1] == "text"
    assert calls_by_location(table) == {short[op_here]: 2, short[op_elsewhere]: 1, short[body]: 1}
    two = result.summary_data(views=profkit.SummaryView.OperatorView, group_by_stack_n=2, op_detail=False)
    assert calls_by_location(two["OperatorView"])[f"{short[op_here]} <- {short[body]}"] == 2
    text = result.summary(views=profkit.SummaryView.OperatorView, group_by_stack_n=1)
    assert "Source Location" in text and short[op_elsewhere] in text
    # From a saved trace, on the command line.
    path = str(tmp_path / "run.pktrace")
    result.save(path)
    assert cli.main(["summary", path, "--views", "OperatorView", "--group-by-stack-n", "1"]) == 0
    assert short[op_here] in capsys.readouterr().out
    for bad in (-1, 256, True, 1.5):
        with pytest.raises(ValueError, match="group_by_stack_n must be an int from 0"):
            result.summary(group_by_stack_n=bad)

