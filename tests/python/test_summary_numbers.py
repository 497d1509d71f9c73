"""Every number of the summary tables, checked against traces whose times are
known to the nanosecond: a profkit Chrome JSON written by hand (profkit's own
layout, ts/dur in microseconds with ns decimals) and loaded back with
load_profiler_result. The text must show what summary_data holds."""

import json
import math
import re

import pytest

from profkit import load_profiler_result

PID = 4242
BASE_NS = 10**12


def write_trace(path, events, end_ns=None, start_ns=0, instants=()):
    """A profkit Chrome trace of host `events` (tid, name, category, start_ns,
    end_ns) and `instants` (tid, name, category, time_ns), times relative to
    the window start."""
    trace = [{"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "Process (CPU)"}}]
    for tid in sorted({e[0] for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "args": {"name": f"t{tid}"}})
    for tid, name, category, start, end in events:
        trace.append(
            {"ph": "X", "cat": category, "name": name, "ts": start / 1000, "dur": (end - start) / 1000, "pid": PID,
             "tid": tid}
        )
    for tid, name, category, time in instants:
        trace.append({"ph": "i", "s": "t", "cat": category, "name": name, "ts": time / 1000, "pid": PID, "tid": tid})
    if end_ns is None:
        end_ns = max(e[4] for e in events)
    meta = {
        "profkit_version": "0.1.0", "schema_version": 1, "trace_json_version": 3, "hostname": "h", "pid": PID,
        "rank": -1, "world_size": -1, "span_index": 0, "base_ns": BASE_NS, "base_wall_ns": BASE_NS,
        "start_ns": BASE_NS + start_ns, "end_ns": BASE_NS + end_ns, "clock_offset_ns": 0,
        "host_event_count": len(events) + len(instants), "device_event_count": 0, "memory_event_count": 0, "dropped_events": 0,
        "unmatched_ends": 0, "overflowed_events": 0, "unfinished_events": 0, "lost_event_args": 0,
        "dropped_device_records": 0, "unattached_device_records": 0, "process_cpu_ns": 0, "system_busy_ns": 0,
        "system_idle_ns": 0, "cpu_count": 2, "devices": [], "metadata": {},
    }
    path.write_text(json.dumps({"traceEvents": trace, "displayTimeUnit": "ms", "profkit": meta}))
    return load_profiler_result(str(path))


def rows_of(table):
    """{label: {column: value}} of the top-level rows (level 0) of a table."""
    return {row[0]: dict(zip(table.columns, row)) for row, level in zip(table.rows, table.levels) if level == 0}


def nested_rows(table):
    """[(level, label, {column: value})] in table order."""
    return [(level, row[0], dict(zip(table.columns, row))) for row, level in zip(table.rows, table.levels)]


def text_cells(text, title):
    """The cells of each row of table `title` in the text: the label (stripped
    of its indentation), then the values, group columns split at " / "."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line and line.startswith("-"))
    separators = [i for i in range(start + 1, len(lines)) if re.fullmatch(r"[- ]+", lines[i])][:3]
    out = []
    for line in lines[separators[1] + 1 : separators[2]]:
        cells = re.split(r"\s{2,}", line.strip())
        out.append([cells[0]] + [v for cell in cells[1:] for v in cell.split(" / ")])
    return out


def expected_cells(table, shown_columns):
    """The cells the text should show for `table`'s rows: "%.2f" for times and
    ratios, whole numbers for counts, "-" for missing values."""
    out = []
    for row in table.rows:
        cells = [row[0]]
        for column, kind, value in zip(table.columns[1:], table.kinds[1:], row[1:]):
            if column not in shown_columns:
                continue
            if value is None:
                cells.append("-")
            elif kind in ("time", "percent"):
                cells.append(f"{value:.2f}")
            else:
                cells.append(str(int(value)))
        out.append(cells)
    return out


# One thread records two steps with every phase; a second thread runs an
# operator during step 1. Times in ns:
#   step 0 [0, 1000): dl [0,100) fw [100,400) (op [150,350) > op [200,300) >
#                     in [210,220)) bw [400,800) opt [800,900)
#   step 1 [1000, 1500): fw [1000,1200); thread 2: op [1100,1300)
#   u: [1300,1300) (zero length), [1400,1600) (across the end of step 1),
#      [1700,1800) (after every step)
EVENTS = [
    (1, "ProfileStep#0", "ProfileStep", 0, 1000),
    (1, "dl", "Dataloader", 0, 100),
    (1, "fw", "Forward", 100, 400),
    (1, "op", "Operator", 150, 350),
    (1, "op", "Operator", 200, 300),
    (1, "in", "OperatorInner", 210, 220),
    (1, "bw", "Backward", 400, 800),
    (1, "opt", "Optimization", 800, 900),
    (1, "ProfileStep#1", "ProfileStep", 1000, 1500),
    (1, "fw", "Forward", 1000, 1200),
    (2, "op", "Operator", 1100, 1300),
    (2, "u", "UserDefined", 1300, 1300),
    (1, "u", "UserDefined", 1400, 1600),
    (1, "u", "UserDefined", 1700, 1800),
]
TOTAL = 1500  # the two steps


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    return write_trace(tmp_path_factory.mktemp("numbers") / "loop.trace.json", EVENTS, end_ns=2000)


def test_overview_is_the_union_of_each_type_over_the_step_time(loop):
    overview = loop.summary_data(time_unit="ns", views="OverView")["OverView"]
    rows = rows_of(overview)
    assert rows["ProfileStep"]["Calls"] == 2
    assert rows["ProfileStep"]["CPU Time"] == TOTAL
    assert rows["ProfileStep"]["CPU Ratio(%)"] == 100
    union = {
        "Forward": (2, 300 + 200),
        "Operator": (3, 200 + 200),  # the nested op counts once; thread 2's adds its own 200
        "Backward": (1, 400),
        "UserDefined": (3, 100),  # only [1400,1500) lies inside the steps
        "Dataloader": (1, 100),
        "Optimization": (1, 100),
        "OperatorInner": (1, 10),
    }
    by_type = {label: (row["Calls"], row["CPU Time"]) for level, label, row in nested_rows(overview) if level == 1}
    assert by_type == union
    for level, label, row in nested_rows(overview):
        if level == 1:
            assert row["CPU Ratio(%)"] == pytest.approx(union[label][1] * 100 / TOTAL)
    # Largest first.
    times = [row["CPU Time"] for level, _, row in nested_rows(overview) if level == 1]
    assert times == sorted(times, reverse=True)


def test_overview_counts_no_time_outside_the_steps(tmp_path):
    # A C program's setup before its first pk_step, and work between
    # pk_step_end and the next pk_step_begin: as shares of step time they
    # read 700% before; only what lies inside the steps counts.
    result = write_trace(
        tmp_path / "outside.trace.json",
        [
            (1, "setup", "UserDefined", 0, 5000),
            (1, "ProfileStep#0", "ProfileStep", 5000, 6000),
            (1, "train", "UserDefined", 5100, 5600),
            (1, "eval", "UserDefined", 6000, 8000),
            (1, "ProfileStep#1", "ProfileStep", 8000, 9000),
        ],
        end_ns=10000,
    )
    overview = result.summary_data(time_unit="ns", views="OverView")["OverView"]
    by_type = {label: row for level, label, row in nested_rows(overview) if level == 1}
    assert by_type["UserDefined"]["Calls"] == 3
    assert by_type["UserDefined"]["CPU Time"] == 500
    assert by_type["UserDefined"]["CPU Ratio(%)"] == pytest.approx(25)
    assert any(note.startswith("Only time inside the ProfileSteps counts here") for note in overview.notes)
    # The UserDefined table still counts every call in full.
    udf = rows_of(result.summary_data(time_unit="ns", views="UDFView")["UDFView"])
    assert udf["setup"]["CPU Total"] == 5000


def test_model_rows_per_phase_and_others(loop):
    model = loop.summary_data(time_unit="ns", views="ModelView")["ModelView"]
    rows = {label: row for _, label, row in nested_rows(model)}
    assert [label for _, label, _ in nested_rows(model)] == [
        "ProfileStep", "Dataloader", "Forward", "Backward", "Optimization", "Others"
    ]
    expected = {  # calls, total, avg, max, min
        "ProfileStep": (2, 1500, 750, 1000, 500),
        "Dataloader": (1, 100, 100, 100, 100),
        "Forward": (2, 500, 250, 300, 200),
        "Backward": (1, 400, 400, 400, 400),
        "Optimization": (1, 100, 100, 100, 100),
    }
    for label, (calls, total, avg, most, least) in expected.items():
        row = rows[label]
        assert (row["Calls"], row["CPU Total"], row["CPU Avg"], row["CPU Max"], row["CPU Min"]) == (
            calls, total, avg, most, least
        ), label
        assert row["CPU Ratio(%)"] == pytest.approx(total * 100 / TOTAL)
    # Step time no phase covers: [900,1000) and [1200,1500).
    assert rows["Others"]["CPU Total"] == 400
    assert rows["Others"]["CPU Ratio(%)"] == pytest.approx(400 * 100 / TOTAL)
    assert rows["Others"]["Calls"] is None
    phases = sum(expected[p][1] for p in ("Dataloader", "Forward", "Backward", "Optimization"))
    assert phases + rows["Others"]["CPU Total"] == TOTAL


def test_operator_rows_with_inner_rows_and_ratios_to_their_operator(loop):
    table = loop.summary_data(time_unit="ns", views="OperatorView")["OperatorView"]
    rows = nested_rows(table)
    assert [(level, label) for level, label, _ in rows] == [(0, "op"), (1, "in")]
    op = rows[0][2]
    # Every call counts with its inclusive time; op [200,300), the only event
    # in op [150,350), is part of that call, as torch.profiler's tables fold
    # it, and its inner event is the outer call's.
    assert (op["Calls"], op["CPU Total"], op["CPU Max"], op["CPU Min"]) == (2, 400, 200, 200)
    assert op["CPU Avg"] == pytest.approx(200)
    assert op["CPU Ratio(%)"] == pytest.approx(400 * 100 / TOTAL)
    inner = rows[1][2]
    assert (inner["Calls"], inner["CPU Total"], inner["CPU Ratio(%)"]) == (1, 10, 2.5)


def test_user_defined_counts_zero_length_and_out_of_step_ranges(loop):
    rows = rows_of(loop.summary_data(time_unit="ns", views="UDFView")["UDFView"])
    u = rows["u"]
    assert (u["Calls"], u["CPU Total"], u["CPU Avg"], u["CPU Max"], u["CPU Min"]) == (3, 300, 100, 200, 0)
    assert u["CPU Ratio(%)"] == pytest.approx(20)


@pytest.mark.parametrize("unit, ns_per_unit", [("s", 1e9), ("ms", 1e6), ("us", 1e3), ("ns", 1)])
def test_every_unit_is_the_ns_figure_divided_and_the_text_shows_the_data(loop, unit, ns_per_unit):
    in_ns = loop.summary_data(time_unit="ns")
    data = loop.summary_data(time_unit=unit)
    text = loop.summary(time_unit=unit)
    for view, table in data.items():
        reference = in_ns[view]
        assert table.time_unit == unit
        for row, row_ns in zip(table.rows, reference.rows):
            for kind, value, value_ns in zip(table.kinds[1:], row[1:], row_ns[1:]):
                if kind == "time" and value is not None:
                    assert value == pytest.approx(value_ns / ns_per_unit, rel=1e-12)
                else:
                    assert value == value_ns
        if not table.rows:
            continue
        shown = [c for c in table.columns[1:] if not c.startswith("GPU")]  # no GPU activity: not printed
        assert text_cells(text, table.title) == expected_cells(table, shown), view


SORT_EVENTS = [(1, "ProfileStep#0", "ProfileStep", 0, 10_000)]


def _operators():
    # A: 100, 100 (thread 1) and 7 (thread 2); B: 300; C: 10, 50, 90; D: 1, 400 (thread 2).
    t = 0
    out = []
    for tid, name, length in [(1, "A", 100), (1, "A", 100), (1, "B", 300), (1, "C", 10), (1, "C", 50),
                              (1, "C", 90), (2, "D", 1), (2, "D", 400), (2, "A", 7)]:
        out.append((tid, name, "Operator", t, t + length))
        t += length + 5
    return out


@pytest.fixture(scope="module")
def operators(tmp_path_factory):
    return write_trace(tmp_path_factory.mktemp("numbers") / "ops.trace.json", SORT_EVENTS + _operators())


@pytest.mark.parametrize(
    "key, order",
    [
        ("CPUTotal", ["D", "B", "A", "C"]),  # 401, 300, 207, 150
        ("CPUAvg", ["B", "D", "A", "C"]),  # 300, 200.5, 69, 50
        ("CPUMax", ["D", "B", "A", "C"]),  # 400, 300, 100, 90
        ("CPUMin", ["D", "A", "C", "B"]),  # 1, 7, 10, 300: ascending
    ],
)
def test_sorted_by_orders_operators(operators, key, order):
    table = operators.summary_data(sorted_by=key, views="OperatorView", op_detail=False)["OperatorView"]
    assert [row[0] for row in table.rows] == order


def test_thread_sep_and_row_limit_per_thread(operators):
    table = operators.summary_data(
        sorted_by="CPUMin", views="OperatorView", thread_sep=True, row_limit=2, time_unit="ns"
    )["OperatorView"]
    got = [(row["Name"], row["Thread"], row["Calls"], row["CPU Total"], row["CPU Min"]) for _, _, row in
           nested_rows(table)]
    assert got == [("C", 1, 3, 150, 10), ("A", 1, 2, 200, 100), ("D", 2, 2, 401, 1), ("A", 2, 1, 7, 7)]
    assert "1 more operators not shown (row_limit=2 per thread)" in table.notes


def test_without_steps_ratios_are_to_the_recorded_span(tmp_path):
    result = write_trace(tmp_path / "nosteps.trace.json", [(1, "x", "UserDefined", 100, 350)], end_ns=1000)
    tables = result.summary_data(time_unit="ns", views=["OverView", "UDFView"])
    overview = rows_of(tables["OverView"])
    assert overview["Total Time"]["CPU Time"] == 1000
    x = rows_of(tables["UDFView"])["x"]
    assert x["CPU Total"] == 250
    assert x["CPU Ratio(%)"] == pytest.approx(25)


def test_a_phase_inside_a_phase_of_its_type_counts_once(tmp_path):
    # A user's RecordEvent("forward", Forward) around a model whose
    # integration records its own Forward: one Forward of 400 ns, not two
    # calls adding up to 700 (which read as 70% of a step whose other rows
    # already make up the rest).
    result = write_trace(
        tmp_path / "nested.trace.json",
        [
            (1, "ProfileStep#0", "ProfileStep", 0, 1000),
            (1, "forward", "Forward", 100, 500),
            (1, "Net.forward", "Forward", 150, 450),
            (1, "optimizer", "Optimization", 600, 900),
            (1, "SGD.step", "Optimization", 600, 800),
        ],
    )
    rows = {label: row for _, label, row in nested_rows(result.summary_data(time_unit="ns")["ModelView"])}
    assert (rows["Forward"]["Calls"], rows["Forward"]["CPU Total"], rows["Forward"]["CPU Min"]) == (1, 400, 400)
    assert (rows["Optimization"]["Calls"], rows["Optimization"]["CPU Total"]) == (1, 300)
    assert rows["Others"]["CPU Total"] == 300
    ratios = [rows[label]["CPU Ratio(%)"] for label in ("Forward", "Optimization", "Others")]
    assert math.fsum(ratios) == pytest.approx(100)


def test_model_counts_no_instant_and_no_step_inside_a_step(tmp_path):
    # A user's RecordEvent("my_step", TracerEventType.ProfileStep) inside each
    # step read as two more steps (Avg and Min halved); instant marks of a
    # phase's or the step's type read as calls of 0 time.
    result = write_trace(
        tmp_path / "marks.trace.json",
        [
            (1, "ProfileStep#0", "ProfileStep", 0, 1000),
            (1, "my_step", "ProfileStep", 100, 900),
            (1, "fw", "Forward", 200, 500),
            (1, "ProfileStep#1", "ProfileStep", 1000, 2000),
            (1, "my_step", "ProfileStep", 1100, 1900),
            (1, "fw", "Forward", 1200, 1600),
        ],
        instants=[(1, "fw_mark", "Forward", 300), (1, "step_mark", "ProfileStep", 1700)],
    )
    rows = {label: row for _, label, row in nested_rows(result.summary_data(time_unit="ns")["ModelView"])}
    step, forward = rows["ProfileStep"], rows["Forward"]
    assert (step["Calls"], step["CPU Total"], step["CPU Avg"], step["CPU Min"]) == (2, 2000, 1000, 1000)
    assert (forward["Calls"], forward["CPU Total"], forward["CPU Min"]) == (2, 700, 300)
    assert rows["Others"]["CPU Total"] == 1300


def test_cross_rank_counts_the_steps_the_model_summary_counts(tmp_path):
    # Every event of type ProfileStep read as a step: the range inside
    # step 0 and the instant mark made 4 steps of 550 ns, for 2 of 1000.
    from profkit import cross_rank_summary

    result = write_trace(
        tmp_path / "marks.trace.json",
        [
            (1, "ProfileStep#0", "ProfileStep", 0, 1000),
            (1, "warmup_marker", "ProfileStep", 100, 300),
            (1, "ProfileStep#1", "ProfileStep", 1000, 2000),
        ],
        instants=[(1, "step_mark", "ProfileStep", 1500)],
    )
    step = rows_of(result.summary_data(time_unit="ns", views="ModelView")["ModelView"])["ProfileStep"]
    figures = cross_rank_summary([result]).ranks[0]
    assert (figures.steps, figures.step_ns) == (step["Calls"], step["CPU Avg"]) == (2, 1000)
    assert figures.other_ns == 1000  # no communication or computation: the whole step
