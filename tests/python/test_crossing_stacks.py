"""Events that cross: one starts inside another and ends after it (a range
held open across a generator's yield, a range begun in one function and
ended in another, a call that steps the Profiler, with the Python calls of
with_stack around them). Each moment of a thread counts once, in the flame
graph and in the Operator table's Self CPU, and on every lane of the Chrome
trace slices nest."""

import profkit
from profkit import RecordEvent, SummaryView, TracerEventType

from test_chrome_validity import assert_same_result, read_exact, strict_problems
from test_with_stack import record


def busy(n=20000):
    total = 0
    for i in range(n):
        total += i
    return total


def crossings(result):
    """How many pairs of a thread's events cross: the later starts inside the earlier and ends after it."""
    events = result.events
    count = 0
    for i in range(len(events)):
        earlier = events[:i][events["thread"][:i] == events["thread"][i]]
        inside = (earlier["start_ns"] <= events["start_ns"][i]) & (events["start_ns"][i] < earlier["end_ns"])
        count += int((inside & (earlier["end_ns"] < events["end_ns"][i])).sum())
    return count


def covered_us(result):
    """The time each thread's events cover (the union of its top-level events), summed, in µs."""
    events = result.events
    total_ns = 0
    for thread in set(events["thread"].tolist()):
        tops = events[(events["thread"] == thread) & (events["depth"] == 0)]
        until = 0
        for start, end in sorted(zip(tops["start_ns"].tolist(), tops["end_ns"].tolist())):
            if end > until:
                total_ns += end - max(start, until)
                until = end
    return total_ns / 1000


def flame_graph(result, tmp_path):
    path = tmp_path / "run.stacks"
    result.export_stacks(path)
    stacks = {}
    for line in path.read_text().splitlines():
        stack, value = line.rsplit(" ", 1)
        stacks[stack] = int(value)
    return stacks


def assert_each_moment_counts_once(result, tmp_path):
    stacks = flame_graph(result, tmp_path)
    assert all(us >= 0 for us in stacks.values())
    # Each line is rounded to the µs: half a µs each, either way.
    assert abs(sum(stacks.values()) - covered_us(result)) <= len(stacks) / 2 + 1, sorted(stacks.items())
    return stacks


def batches():
    for i in range(3):
        with RecordEvent("load"):
            busy()  # loading
            yield i  # the range stays open while the consumer trains


def train(prof):
    for _ in batches():
        busy()  # training


def test_a_range_open_across_a_generators_yield_counts_each_moment_once(tmp_path):
    # The range crosses the generator's calls: nested by containment, they
    # are siblings. The flame graph held the loading time twice (under the
    # call and under the range), ~1.7 times the step's time.
    result = record(train, with_stack=True)
    assert crossings(result) >= 3
    stacks = assert_each_moment_counts_once(result, tmp_path)
    assert any(stack.endswith(";load") for stack in stacks)


def range_x_begun(x):
    busy(3000)
    x.begin()
    busy(3000)


def range_x_ended(x):
    busy(3000)
    x.end()
    busy(3000)


def one_step(prof):
    busy(3000)
    prof.step()  # this call crosses the step's end
    busy(3000)


def ranges_and_steps_across_calls(prof):
    x = RecordEvent("x")
    for _ in range(3):
        range_x_begun(x)
        range_x_ended(x)
        one_step(prof)
        for _ in batches():
            busy(3000)


def test_ranges_and_steps_ended_in_another_call_count_each_moment_once(tmp_path):
    result = record(ranges_and_steps_across_calls, with_stack=True)
    assert crossings(result) >= 9
    assert_each_moment_counts_once(result, tmp_path)


OP = RecordEvent("op", TracerEventType.Operator)
INNER_OP = RecordEvent("inner op", TracerEventType.Operator)


def ends_op():
    with INNER_OP:  # time of its own: no call recorded in it
        total = 0
        for i in range(50000):
            total += i
    OP.end()
    busy(3000)


def op_crossed_by_a_call(prof):
    OP.begin()
    busy(3000)
    ends_op()  # begins inside op and ends after it


def test_the_operator_tables_self_cpu_counts_an_operators_time_once_when_a_call_crosses_it(tmp_path):
    result = record(op_crossed_by_a_call, with_stack=True)
    assert crossings(result) >= 1
    events = result.events
    (op,) = events[events["name"] == "op"]
    (call,) = [e for e in events if e["name"].endswith(": ends_op")]
    table = result.summary_data(views=SummaryView.OperatorView, op_detail=False, time_unit="ns")["OperatorView"]
    self_ns = {row[0]: dict(zip(table.columns, row))["Self CPU Total"] for row in table.rows}
    # op's own time ends where the call that crosses it starts: before, it
    # kept the rest of its time too, inner op's included, which inner op's
    # own self time holds: the column added up to more than the operators ran.
    assert self_ns["op"] <= call["start_ns"] - op["start_ns"] + 1
    assert self_ns["op"] + self_ns["inner op"] <= op["end_ns"] - op["start_ns"] + 2
    # The flame graph agrees, and holds the time they cover once.
    stacks = assert_each_moment_counts_once(result, tmp_path)
    (op_line,) = [us for stack, us in stacks.items() if stack.endswith(";op")]
    assert abs(op_line - self_ns["op"] / 1000) <= 0.5


def lanes_test_body(prof):
    x = RecordEvent("X")
    e = RecordEvent("E")

    def z():
        busy(3000)
        x.begin()
        busy(3000)

    def y():
        busy(3000)
        e.end()
        busy(3000)
        x.end()
        busy(3000)

    z()
    busy(3000)
    e.begin()
    busy(3000)
    y()  # crosses E, which crosses nothing, and X, which crosses z()


def test_events_crossing_events_that_cross_get_lanes_that_nest_and_load_back(tmp_path):
    result = record(lanes_test_body, with_stack=True)
    path = tmp_path / "lanes.trace.json"
    result.export_chrome_tracing(str(path))
    assert strict_problems(read_exact(path)) == []
    doc = read_exact(path)
    lanes = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    tid = int(result.events["tid"][0])
    assert lanes[tid + 2_000_000_000].endswith(f"(Python, overlapping) [{tid}]")  # X
    assert lanes[tid + 4_000_000_000].endswith(f"(overlapping 2) [{tid}]")  # y()
    assert_same_result(profkit.load_profiler_result(str(path)), result)
