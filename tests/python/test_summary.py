"""Summary tables from Python: the engine computes them from a real run;
profkit._summary checks arguments and shapes the rows as data."""

import sys
import threading
import time

import pytest

from profkit import ProfilerState, SortedKeys, SummaryView, TracerEventType, _C, _summary

CLOSED, RECORD = 0, 2
OPERATOR, USER_DEFINED, PYTHON_USER_DEFINED = 0, 7, 14

SLEEP_A = 0.02
SLEEP_B = 0.01
STEPS = 3


def record_sleeps():
    """Three steps; in each, RecordEvent-like ranges around sleeps of known length."""
    _C.set_state(RECORD)
    for step in range(STEPS):
        _C.step_begin(step)
        _C.begin_event_str("sleep_a", PYTHON_USER_DEFINED)
        time.sleep(SLEEP_A)
        _C.end_event()
        _C.begin_event_str("sleep_b", USER_DEFINED)
        _C.begin_event_str("aten::add", OPERATOR)
        _C.end_event()
        time.sleep(SLEEP_B)
        _C.end_event()
        _C.step_end(0)
    _C.set_state(CLOSED)
    return _C.collect()


@pytest.fixture(scope="module")
def run():
    _C.set_state(CLOSED)
    _C.collect()
    result = record_sleeps()
    yield result


def test_user_defined_rows_have_the_calls_and_time_of_the_sleeps(run):
    tables = _summary.summary_data(run, time_unit="ms")
    udf = tables["UDFView"]
    assert udf.columns[:3] == ["Name", "Calls", "CPU Total"]
    rows = {row[0]: dict(zip(udf.columns, row)) for row in udf.rows}
    assert set(rows) == {"sleep_a", "sleep_b"}
    for name, seconds in (("sleep_a", SLEEP_A), ("sleep_b", SLEEP_B)):
        row = rows[name]
        assert row["Calls"] == STEPS
        expected_ms = STEPS * seconds * 1e3
        # A sleep never ends early; a loaded machine may make it much longer.
        assert expected_ms * 0.95 <= row["CPU Total"] < expected_ms + 500
        assert row["CPU Min"] >= seconds * 1e3 * 0.95
        assert row["CPU Min"] <= row["CPU Avg"] <= row["CPU Max"]
        assert 0 < row["CPU Ratio(%)"] <= 100
    # Sorted by CPU total, largest first.
    assert [r[0] for r in udf.rows] == ["sleep_a", "sleep_b"]


def test_text_has_paddle_style_tables(run):
    text = _summary.summary_text(run)
    for title in ("Device Summary", "Overview Summary", "Model Summary", "Operator Summary", "UserDefined Summary"):
        assert title in text
    assert "Time unit: ms" in text
    assert "CPU Total / Avg / Max / Min / Ratio(%)" in text
    assert "Kernel Summary: no GPU kernels recorded" in text
    udf_only = _summary.summary_text(run, views=SummaryView.UDFView, time_unit="us")
    assert udf_only.startswith("-") and "UserDefined Summary" in udf_only
    assert "Overview Summary" not in udf_only
    assert "Time unit: us" in udf_only
    assert "sleep_a" in udf_only


def test_overview_and_model_rows(run):
    tables = _summary.summary_data(run, views=[SummaryView.OverView, "ModelView"])
    assert list(tables) == ["OverView", "ModelView"]
    overview = tables["OverView"]
    assert overview.rows[0][0] == "ProfileStep"
    assert overview.rows[0][1] == STEPS
    assert overview.nested and overview.levels[0] == 0 and set(overview.levels[1:]) == {1}
    model = tables["ModelView"]
    assert [r[0] for r in model.rows] == ["ProfileStep", "Others"]
    # Any iterable of views will do, a generator included.
    chosen = (view for view in SummaryView if view.name in ("OverView", "ModelView"))
    assert list(_summary.summary_data(run, views=chosen)) == ["OverView", "ModelView"]


def test_summary_data_as_dataframes(run):
    pd = pytest.importorskip("pandas")
    tables = _summary.summary_data(run)
    assert list(tables) == list(_summary.VIEWS)
    udf = tables["UDFView"].to_pandas()
    assert isinstance(udf, pd.DataFrame)
    assert list(udf.columns) == tables["UDFView"].columns
    assert udf.set_index("Name").loc["sleep_a", "Calls"] == STEPS
    assert udf["Calls"].dtype.kind == "i"
    operators = tables["OperatorView"].to_pandas()
    assert "Level" in operators.columns  # nested table
    assert operators.loc[0, "Name"] == "aten::add"
    kernels = tables["KernelView"].to_pandas()  # empty, with its columns
    assert len(kernels) == 0 and "GPU Total" in kernels.columns
    assert tables["KernelView"].empty_reason == "no GPU kernels recorded"
    overview = tables["OverView"].to_pandas()
    assert overview["GPU Time"].isna().all()  # missing values are NaN


SHAPES_A, SHAPES_B = "[[2, 3], [3, 4]]", "[[8, 3], [3, 4]]"


@pytest.fixture(scope="module")
def shaped():
    """aten::mm with shapes A twice, with B once and without shapes once
    (as a framework hook attaches them: an "input_shapes" string argument)."""
    _C.set_state(CLOSED)
    _C.collect()
    key = _C.intern("input_shapes")
    _C.set_state(RECORD)
    for shapes in (SHAPES_A, SHAPES_B, SHAPES_A, None):
        _C.begin_event_str("aten::mm", OPERATOR)
        if shapes is not None:
            _C.event_arg_str(key, shapes)
        _C.end_event()
    _C.set_state(CLOSED)
    return _C.collect()


def mm_calls_by_shapes(table):
    calls, shapes = table.columns.index("Calls"), table.columns.index("Input Shapes")
    return {row[shapes]: row[calls] for row in table.rows if row[0] == "aten::mm"}


def test_operator_rows_per_input_shape(shaped, tmp_path):
    table = _summary.summary_data(shaped, views=SummaryView.OperatorView, group_by_input_shape=True)["OperatorView"]
    assert table.columns[-1] == "Input Shapes" and table.kinds[-1] == "text"
    assert mm_calls_by_shapes(table) == {SHAPES_A: 2, SHAPES_B: 1, None: 1}  # None: no shapes recorded
    assert any("group_by_input_shape" in note for note in table.notes)
    text = _summary.summary_text(shaped, views=SummaryView.OperatorView, group_by_input_shape=True)
    assert "Input Shapes" in text and SHAPES_A in text and SHAPES_B in text
    # Off (the default): one row per name, no column.
    plain = _summary.summary_data(shaped, views=SummaryView.OperatorView)["OperatorView"]
    assert "Input Shapes" not in plain.columns
    assert [row[:2] for row in plain.rows] == [["aten::mm", 4]]
    # The shapes travel in both file formats.
    for name in ("run.pktrace", "run.trace.json"):
        path = str(tmp_path / name)
        if name.endswith(".pktrace"):
            shaped.save(path)
        else:
            shaped.export_chrome(path)
        loaded = _C.load(path)
        again = _summary.summary_data(loaded, views=SummaryView.OperatorView, group_by_input_shape=True)
        assert mm_calls_by_shapes(again["OperatorView"]) == mm_calls_by_shapes(table), name


def test_input_shapes_are_a_string_column_in_pandas(shaped):
    pytest.importorskip("pandas")
    tables = _summary.summary_data(shaped, views=SummaryView.OperatorView, group_by_input_shape=True)
    frame = tables["OperatorView"].to_pandas()
    assert frame["Calls"].dtype.kind == "i"
    shapes = frame.set_index("Input Shapes")["Calls"]
    assert shapes[SHAPES_A] == 2 and shapes[SHAPES_B] == 1
    assert frame["Input Shapes"].isna().sum() == 1


def test_to_pandas_without_pandas_says_what_to_install(run, monkeypatch):
    table = _summary.summary_data(run, views=8)["UDFView"]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        table.to_pandas()


def test_options_accept_ints_enum_members_and_names(run):
    by_int = _summary.summary_text(run, sorted_by=3, views=[8])
    by_enum = _summary.summary_text(run, sorted_by=SortedKeys.CPUMin, views=[SummaryView.UDFView])
    by_name = _summary.summary_text(run, sorted_by="CPUMin", views="UDFView")
    assert by_int == by_enum == by_name
    # CPUMin sorts ascending: the shorter sleep first.
    rows = _summary.summary_data(run, sorted_by=SortedKeys.CPUMin, views=8)["UDFView"].rows
    assert [r[0] for r in rows] == ["sleep_b", "sleep_a"]
    limited = _summary.summary_data(run, views=8, row_limit=1)["UDFView"]
    assert len(limited) == 1 and "row_limit=1" in limited.notes[0]
    split = _summary.summary_data(run, views=8, thread_sep=True)["UDFView"]
    assert split.columns[1] == "Thread"
    assert {r[1] for r in split.rows} == {threading.get_native_id()}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"time_unit": "min"}, "time_unit must be one of 's', 'ms', 'us', 'ns'"),
        ({"time_unit": 1}, "time_unit must be one of"),
        ({"sorted_by": 9}, r"sorted_by must be one of CPUTotal \(0\).*CPUSelf \(8\)"),
        ({"sorted_by": "cpu"}, "GPUMin"),
        ({"sorted_by": True}, "sorted_by"),
        ({"views": 9}, r"UDFView \(8\)"),
        ({"views": [1, "NoSuchView"]}, "views must be one of"),
        ({"views": []}, "views is empty"),
        ({"row_limit": 0}, "row_limit must be a positive int"),
        ({"row_limit": 2.5}, "row_limit must be a positive int"),
    ],
)
def test_bad_arguments_name_the_valid_values(run, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _summary.summary_text(run, **kwargs)
    with pytest.raises(ValueError, match=message):
        _summary.summary_data(run, **kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        # Each of these used to pass by its value: the Device table, or GPUAvg order.
        ({"views": SortedKeys.CPUTotal}, "views must be one of .*got SortedKeys.CPUTotal.*use SummaryView"),
        ({"views": [SummaryView.UDFView, TracerEventType.Operator]}, "got TracerEventType.Operator"),
        ({"sorted_by": SummaryView.OperatorView}, "sorted_by must be one of .*use SortedKeys"),
        ({"sorted_by": ProfilerState.RECORD}, "got ProfilerState.RECORD"),
    ],
)
def test_a_member_of_another_enum_is_refused_not_taken_by_its_value(run, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _summary.summary_text(run, **kwargs)


def test_enum_members_of_a_look_alike_enum_count_by_name(run):
    # paddle.profiler's own SortedKeys / SummaryView, passed to profkit.
    import enum

    class PaddleSummaryView(enum.Enum):
        UDFView = 8

    class PaddleSortedKeys(enum.Enum):
        CPUMin = 3

    ours = _summary.summary_text(run, sorted_by=SortedKeys.CPUMin, views=SummaryView.UDFView)
    assert _summary.summary_text(run, sorted_by=PaddleSortedKeys.CPUMin, views=PaddleSummaryView.UDFView) == ours


def test_engine_rejects_out_of_range_values_too(run):
    with pytest.raises(ValueError, match="sorted_by 9"):
        run.summary_text(sorted_by=9)


def test_loaded_result_gives_the_same_tables(run, tmp_path):
    path = str(tmp_path / "run.pktrace")
    run.save(path)
    loaded = _C.load(path)
    assert _summary.summary_text(loaded) == _summary.summary_text(run)
    assert _summary.summary_data(loaded)["UDFView"].rows == _summary.summary_data(run)["UDFView"].rows


def test_empty_result_summarizes_without_errors():
    empty = _C.collect()
    text = _summary.summary_text(empty)
    assert "Overview Summary" in text
    tables = _summary.summary_data(empty)
    assert tables["OverView"].rows[0][0] == "Total Time"
    assert tables["OverView"].rows[0][3] is None  # no ratio without a total


def test_every_table_of_an_empty_result_converts_to_a_dataframe():
    pytest.importorskip("pandas")
    tables = _summary.summary_data(_C.collect(), thread_sep=True)
    for name, table in tables.items():
        frame = table.to_pandas()
        assert list(frame.columns)[0] == table.columns[0], name
        assert len(frame) == len(table.rows), name
        if table.nested:
            assert "Level" in frame.columns
    assert "Thread" in tables["OperatorView"].columns


def test_a_range_still_open_when_the_window_closes_is_said_first(capsys):
    import profkit

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with profkit.RecordEvent("ended"):
            pass
        left_open = profkit.RecordEvent("never ended")
        left_open.begin()
    capsys.readouterr()  # the Perf Summary stop() printed
    prof.summary(views=SummaryView.UDFView)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Warning: 1 events were still open when the window closed"), first
    names = prof.profiler_result.events["name"].tolist()
    assert "ended" in names and "never ended" not in names


def test_self_cpu_time_leaves_out_nested_events_and_orders_rows():
    """An operator's self time is its time outside every event nested in it
    (torch.profiler's self_cpu_time_total); CPUSelf orders by it."""
    _C.set_state(CLOSED)
    _C.collect()
    _C.set_state(RECORD)
    _C.begin_event_str("wrapper", OPERATOR)
    _C.begin_event_str("work", OPERATOR)
    time.sleep(0.03)
    _C.end_event()
    _C.end_event()
    _C.begin_event_str("leaf", OPERATOR)
    time.sleep(0.01)
    _C.end_event()
    _C.set_state(CLOSED)
    result = _C.collect()
    table = _summary.summary_data(result, views=SummaryView.OperatorView, op_detail=False)["OperatorView"]
    rows = {row[0]: dict(zip(table.columns, row)) for row in table.rows}
    for name in rows:
        assert 0 <= rows[name]["Self CPU Total"] <= rows[name]["CPU Total"]
    assert rows["work"]["Self CPU Total"] == rows["work"]["CPU Total"]  # nothing nested
    nested = rows["wrapper"]["CPU Total"] - rows["work"]["CPU Total"]
    assert rows["wrapper"]["Self CPU Total"] == pytest.approx(nested, abs=1e-9)
    assert [r[0] for r in table.rows] == ["wrapper", "work", "leaf"]  # by CPU total
    by_self = _summary.summary_data(result, views=SummaryView.OperatorView, op_detail=False, sorted_by=SortedKeys.CPUSelf)
    assert [r[0] for r in by_self["OperatorView"].rows] == ["work", "leaf", "wrapper"]
    assert "Self CPU Total / Ratio(%)" in _summary.summary_text(result, views="OperatorView", sorted_by="CPUSelf")


def test_instant_events_are_no_calls_in_any_table():
    # An instant (pk_instant_event) marks a moment. The Model table left
    # instants out; the Overview, Operator and UserDefined tables (and
    # top_events) counted each as a call of 0 time: Calls 2, Avg halved, Min 0.
    from profkit import ProfilerResult

    _C.set_state(CLOSED)
    _C.collect()
    _C.set_state(RECORD)
    _C.step_begin(0)
    for event_type in (OPERATOR, USER_DEFINED):
        _C.begin_event_str("x", event_type)
        time.sleep(0.001)
        _C.end_event()
        _C.instant_event(_C.intern("x"), event_type)
    _C.step_end(0)
    _C.set_state(CLOSED)
    result = _C.collect()
    tables = _summary.summary_data(result, time_unit="ns", views=["OverView", "OperatorView", "UDFView"])
    for view in ("OperatorView", "UDFView"):
        table = tables[view]
        (row,) = [dict(zip(table.columns, r)) for r in table.rows if r[0] == "x"]
        assert row["Calls"] == 1 and row["CPU Min"] == row["CPU Max"] == row["CPU Total"] >= 1e6, (view, row)
    overview = {r[0]: r[1] for r in tables["OverView"].rows}
    assert overview["Operator"] == 1 and overview["UserDefined"] == 1, overview
    assert sorted((name, kind, calls) for name, kind, calls, _ in ProfilerResult(result).top_events(3)) == [
        ("ProfileStep#0", "ProfileStep", 1),
        ("x", "Operator", 1),
        ("x", "UserDefined", 1),
    ]
