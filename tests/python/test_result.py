"""ProfilerResult and load_profiler_result: the same events as the run that
wrote the file, NumPy and pandas views, notebooks, errors."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from profkit import (
    Profiler,
    ProfilerResult,
    RecordEvent,
    SortedKeys,
    SummaryView,
    TracerEventType,
    _C,
    _records,
    export_protobuf,
    load_profiler_result,
)
from profkit.result import DEVICE_EVENT_DTYPE, EVENT_DTYPE


@pytest.fixture
def metadata():
    _C.set_metadata("model", "mlp")
    yield
    _C.set_metadata("model", None)


def record_run(on_trace_ready):
    def worker():
        _C.set_thread_name("loader")
        for k in range(3):
            with RecordEvent("fetch", TracerEventType.Dataloader):
                with RecordEvent(f"decode{k}"):
                    pass

    with Profiler(on_trace_ready=on_trace_ready) as p:
        for step in range(3):
            t = threading.Thread(target=worker)
            t.start()
            with RecordEvent("forward", TracerEventType.Forward):
                with RecordEvent("matmul", TracerEventType.Operator):
                    pass
            with RecordEvent("backward", TracerEventType.Backward):
                pass
            t.join()
            p.step(num_samples=8)
    return p.profiler_result


@pytest.fixture
def saved(tmp_path, metadata):
    exporter = export_protobuf(str(tmp_path))
    live = record_run(exporter)
    return live, exporter.paths[0]


def test_loaded_file_has_the_same_events_event_for_event(saved):
    live, path = saved
    loaded = load_profiler_result(path)
    assert loaded.path == path and live.path is None
    assert len(loaded) == len(live) == live.info["host_event_count"] > 0
    for field in EVENT_DTYPE.names:
        assert np.array_equal(loaded.events[field], live.events[field]), field
    assert np.array_equal(loaded.host_events, live.host_events)
    assert loaded.info == live.info
    assert loaded.threads == live.threads
    assert loaded.strings == live.strings
    assert loaded.metadata == live.metadata
    # Where a GPU is traced, the window also says with which CUPTI.
    assert {k: v for k, v in live.metadata.items() if k != "gpu_tracing"} == {"model": "mlp"}
    assert [tuple(a) for a in loaded.event_args] == [tuple(a) for a in live.event_args]
    assert loaded.steps == live.steps == [0, 1, 2, 3]


def test_events_array(saved):
    live, _ = saved
    ev = live.events
    assert ev.dtype == EVENT_DTYPE and not ev.flags.writeable
    assert np.all(ev["duration_ns"] == ev["end_ns"] - ev["start_ns"])
    names = set(ev["name"])
    assert {"forward", "matmul", "backward", "fetch", "decode0", "ProfileStep#0"} <= names
    # parents are the C ABI's, event for event
    assert [live.raw.parent(i) for i in range(len(ev))] == [None if p < 0 else p for p in ev["parent"]]
    matmul = ev[ev["name"] == "matmul"]
    assert set(ev["name"][matmul["parent"]]) == {"forward"}
    threads = live.threads
    loader = [k for k, t in enumerate(threads) if t["name"] == "loader"]
    assert set(ev["thread"][ev["name"] == "fetch"]) <= set(loader)
    assert set(ev["tid"][ev["name"] == "forward"]) == {threads[ev["thread"][ev["name"] == "forward"][0]]["tid"]}
    samples = [(ev["name"][a["event"]], a["value"]) for a in live.event_args if a["key"] == "num_samples"]
    assert samples == [("ProfileStep#0", 8), ("ProfileStep#1", 8), ("ProfileStep#2", 8)]


def test_event_args_are_decoded_once_and_shared_read_only(saved, monkeypatch):
    live, path = saved
    builds = []
    real_view = _records.view

    def counting_view(column, dtype):
        if dtype == _records.EVENT_ARG:
            builds.append(dtype)
        return real_view(column, dtype)

    monkeypatch.setattr(_records, "view", counting_view)
    for result in (live, load_profiler_result(path)):
        builds.clear()
        first = result.event_args
        assert len(first) > 0
        for _ in range(3):
            assert result.event_args is first
        assert len(builds) == 1  # was one decode per access
        # Shared by every caller: writing into it would change what the next one reads.
        assert not first.flags.writeable
        with pytest.raises(ValueError):
            first["value"][0] = 0


def test_counts_top_events_and_span(saved):
    live, _ = saved
    counts = live.event_counts()
    assert counts["Dataloader"] == 9 and counts["Forward"] == 3 and counts["ProfileStep"] == 4
    assert list(counts.values()) == sorted(counts.values(), reverse=True)
    top = live.top_events(3)
    assert len(top) == 3 and top[0][2] >= 1 and top[0][3] >= top[1][3] >= top[2][3]
    assert live.duration_ns == live.info["end_ns"] - live.info["start_ns"] > 0
    assert "host events" in repr(live)


def test_device_events_and_raw_columns_have_engine_layouts():
    result = ProfilerResult(_C.collect())
    assert result.device_events.dtype == DEVICE_EVENT_DTYPE and len(result.device_events) == 0
    raw = result.raw
    for column, dtype in [
        (raw.host_events, _records.HOST_EVENT),
        (raw.event_args, _records.EVENT_ARG),
        (raw.memory_events, _records.MEMORY_EVENT),
        (raw.device_events, _records.DEVICE_EVENT),
        (raw.kernel_details, _records.KERNEL_DETAIL),
        (raw.memory_op_details, _records.MEMORY_OP_DETAIL),
    ]:
        assert column.itemsize == dtype.itemsize
    assert len(result.memory_events) == 0 and result.events.dtype == EVENT_DTYPE and result.steps == []


def test_to_pandas(saved):
    pd = pytest.importorskip("pandas")
    live, _ = saved
    df = live.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(live)
    assert list(df.columns) == list(EVENT_DTYPE.names) + ["type_name"]
    assert (df.loc[df["name"] == "matmul", "type_name"] == "Operator").all()
    assert df.groupby("type_name", observed=True).size()["Dataloader"] == 9
    assert live.events_df.equals(df)
    assert len(live.to_pandas("device")) == 0
    with pytest.raises(ValueError, match="kind"):
        live.to_pandas("gpu")


def test_to_pandas_without_pandas_is_a_clear_import_error(saved, monkeypatch):
    live, _ = saved
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        live.to_pandas()


def test_repr_html(saved, tmp_path):
    live, path = saved
    page = load_profiler_result(path)._repr_html_()
    for text in ("profkit trace", "Events per type", "Dataloader", "Top events by total time", "metadata: model"):
        assert text in page
    assert live.info["hostname"] in page and path in page


def test_repr_counts_one_of_a_thing_in_the_singular():
    _C.set_state(2)
    with RecordEvent("only"):
        pass
    _C.set_state(0)
    text = repr(ProfilerResult(_C.collect()))
    assert ": 1 host event, 0 GPU events, 1 thread, " in text, text
    _C.set_state(2)
    for _ in range(2):
        with RecordEvent("twice"):
            pass
    _C.set_state(0)
    assert ": 2 host events, 0 GPU events, 1 thread, " in repr(ProfilerResult(_C.collect()))


def test_repr_html_escapes_names():
    _C.set_state(2)
    with RecordEvent("<script>alert(1)</script>"):
        pass
    _C.set_state(0)
    page = ProfilerResult(_C.collect())._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_export_chrome_tracing_and_save(saved, tmp_path):
    import json

    live, _ = saved
    live.export_chrome_tracing(tmp_path / "x.trace.json", label_durations=True)
    doc = json.loads((tmp_path / "x.trace.json").read_text())
    assert any(e["name"].startswith("forward[") for e in doc["traceEvents"] if e.get("ph") == "X")
    live.save(tmp_path / "copy.pktrace")
    assert load_profiler_result(tmp_path / "copy.pktrace").info == live.info


def test_save_takes_paddles_format_argument_and_otherwise_goes_by_the_suffix(saved, tmp_path):
    import json

    live, _ = saved
    live.save(tmp_path / "a.json")  # paddle.profiler scripts: ProfilerResult.save(path) with a .json path
    live.save(tmp_path / "b.out", "json")
    live.save(tmp_path / "c.out", format="pb")
    live.save(tmp_path / "d.out")
    for name in ("a.json", "b.out"):
        assert "traceEvents" in json.loads((tmp_path / name).read_text())
    for name in ("a.json", "b.out", "c.out", "d.out"):
        assert load_profiler_result(tmp_path / name).info == live.info
    assert (tmp_path / "c.out").read_bytes()[:1] != b"{" and (tmp_path / "d.out").read_bytes()[:1] != b"{"
    with pytest.raises(ValueError, match="format must be 'json' or 'pb'"):
        live.save(tmp_path / "e.out", "protobuf")
    assert not (tmp_path / "e.out").exists()


def test_file_names_that_are_not_utf8_save_export_and_load(saved, tmp_path):
    """Linux file names are bytes; Python hands undecodable ones over with
    surrogate escapes (os.listdir, glob), which must reach the engine intact."""
    live, _ = saved
    (tmp_path / "names").mkdir()
    stem = os.path.join(str(tmp_path / "names"), os.fsdecode(b"caf\xe9"))
    live.save(stem + ".pktrace")
    live.export_chrome_tracing(stem + ".trace.json")
    assert sorted(os.listdir(os.fsencode(str(tmp_path / "names")))) == [b"caf\xe9.pktrace", b"caf\xe9.trace.json"]
    for suffix in (".pktrace", ".trace.json"):
        assert load_profiler_result(stem + suffix).info["host_event_count"] == live.info["host_event_count"]


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="nowhere.pktrace"):
        load_profiler_result("/nonexistent/nowhere.pktrace")


def test_bad_files_raise_value_error_with_the_engine_message(saved, tmp_path):
    _, path = saved
    with open(path, "rb") as f:
        data = f.read()
    cases = {
        "empty.pktrace": (b"", "empty"),
        "truncated.pktrace": (data[: len(data) // 2], "truncated"),
        "garbage.pktrace": (bytes(range(256)) * 8, "not a profkit trace"),
        "json.pktrace": (b'{"traceEvents": []}', "not one profkit wrote"),
        "header_only.pktrace": (data[:16], "truncated|corrupt|not a profkit"),
    }
    for name, (content, message) in cases.items():
        bad = tmp_path / name
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            load_profiler_result(bad)


@pytest.mark.parametrize("fmt", ["pb", "json"])
def test_a_trace_read_from_a_pipe_loads_like_the_file(saved, tmp_path, fmt):
    # `profkit summary <(gunzip -c x.pktrace.gz)`: a FIFO has no size (st_size 0)
    # and can be read once; it was refused as "the file is empty (0 bytes)", or
    # waited forever for a second writer. The load runs in a child process, so
    # that such a wait fails the test instead of hanging it.
    live, _ = saved
    path = str(tmp_path / f"trace.{fmt}")
    live.save(path, format=fmt)
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)

    def feed():
        with open(path, "rb") as src, open(fifo, "wb") as out:
            out.write(src.read())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    copy = str(tmp_path / "copy.pktrace")
    code = "import sys, profkit; profkit.load_profiler_result(sys.argv[1]).save(sys.argv[2])"
    try:
        done = subprocess.run([sys.executable, "-c", code, fifo, copy], capture_output=True, text=True, timeout=60)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # a writer still waiting for a reader goes on
        writer.join(timeout=30)
    assert done.returncode == 0, done.stderr
    loaded = load_profiler_result(copy)
    assert loaded.summary() == live.summary()
    for field in EVENT_DTYPE.names:
        assert np.array_equal(loaded.events[field], live.events[field]), field


def test_every_truncation_is_an_error_never_a_crash(saved, tmp_path):
    _, path = saved
    with open(path, "rb") as f:
        data = f.read()
    bad = tmp_path / "cut.pktrace"
    for size in range(0, len(data), max(1, len(data) // 64)):
        bad.write_bytes(data[:size])
        with pytest.raises(ValueError):
            load_profiler_result(bad)


def test_directory_is_an_error(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load_profiler_result(tmp_path)


def test_a_path_that_is_not_a_path_is_a_type_error_naming_the_function():
    with pytest.raises(TypeError, match="load_profiler_result: path must be a str or os.PathLike, not NoneType"):
        load_profiler_result(None)  # type: ignore[arg-type]


def test_a_path_that_is_not_utf8_shows_escaped_in_the_message(tmp_path):
    # Linux paths are bytes; the engine's message quotes this one, and its
    # 0xff must not turn the FileNotFoundError into a UnicodeDecodeError.
    with pytest.raises(FileNotFoundError, match=r"\\xff\.pktrace"):
        load_profiler_result(os.fsencode(tmp_path) + b"/missing\xff.pktrace")


# ---- summary delegation (the tables live in profkit._summary) ----------------------


def test_summary_of_a_live_and_a_loaded_result_are_the_same(saved):
    live, path = saved
    loaded = load_profiler_result(path)
    text = live.summary(sorted_by=SortedKeys.CPUMax, views=[SummaryView.OverView, SummaryView.ModelView], time_unit="us")
    assert "Overview Summary" in text and "Model Summary" in text and "Time unit: us" in text
    assert "Kernel Summary" not in text  # only the views asked for
    assert loaded.summary(sorted_by=SortedKeys.CPUMax, views=[SummaryView.OverView, SummaryView.ModelView],
                          time_unit="us") == text
    data = live.summary_data(views=[SummaryView.OverView, SummaryView.UDFView], row_limit=5)
    assert list(data) == ["OverView", "UDFView"]
    assert list(data) == list(loaded.summary_data(views=[SummaryView.OverView, SummaryView.UDFView]))


def test_summary_of_a_loaded_result_shows_as_the_tables_in_a_notebook(saved):
    # A notebook cell ending in `result.summary()` shows its value through
    # IPython's pretty printer: a plain str came out as one quoted line of "\\n"s.
    pretty = pytest.importorskip("IPython.lib.pretty")
    text = load_profiler_result(saved[1]).summary(views=SummaryView.ModelView)
    assert isinstance(text, str) and "Model Summary" in text
    assert pretty.pretty(text) == text


def test_profiler_summary_prints_the_latest_window(capsys):
    with Profiler(on_trace_ready=lambda prof: None) as p:
        with RecordEvent("only in the last window"):
            pass
        p.step()
    capsys.readouterr()
    p.summary(sorted_by=SortedKeys.CPUAvg, op_detail=False, thread_sep=True, views=SummaryView.UDFView)
    out = capsys.readouterr().out
    assert "UserDefined Summary" in out and "only in the last window" in out
    assert out == p.profiler_result.summary(
        sorted_by=SortedKeys.CPUAvg, op_detail=False, thread_sep=True, views=SummaryView.UDFView) + "\n"


def test_summary_rejects_bad_arguments(saved):
    live, _ = saved
    with pytest.raises(ValueError, match="time_unit"):
        live.summary(time_unit="minutes")
    with pytest.raises(ValueError):
        live.summary(sorted_by=42)
    with pytest.raises(ValueError):
        live.summary(views=[99])


def test_corrupted_bytes_load_or_raise_value_error_never_crash(saved, tmp_path):
    _, path = saved
    with open(path, "rb") as f:
        data = bytearray(f.read())
    rng = np.random.default_rng(7)
    bad = tmp_path / "flipped.pktrace"
    for position in rng.integers(0, len(data), size=64):
        flipped = bytearray(data)
        flipped[position] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        try:
            result = load_profiler_result(bad)
        except ValueError:
            continue
        result.events  # whatever loads must also decode


def test_a_path_with_a_nul_byte_is_refused_not_cut_short(saved, tmp_path):
    live, _ = saved
    for call in (
        lambda: live.save(str(tmp_path / "a\0b.pktrace")),
        lambda: live.export_chrome_tracing(str(tmp_path / "a\0b.trace.json")),
        lambda: load_profiler_result(str(tmp_path / "a\0b.pktrace")),
    ):
        with pytest.raises(ValueError, match="embedded null (byte|character)"):  # 3.13 says "character"
            call()
    assert os.listdir(tmp_path) == [os.path.basename(saved[1])]  # nothing written under "a"


def test_top_events_refuses_a_negative_count(saved):
    live, _ = saved
    assert len(live.top_events(2)) == 2 and live.top_events(0) == []
    with pytest.raises(ValueError, match="n must be an int >= 0, got -1"):
        live.top_events(-1)


def test_steps_leave_out_profile_step_events_that_are_not_numbered_steps():
    # A user's own ProfileStep-type range used to make .steps raise
    # "invalid literal for int()".
    windows = []
    with Profiler(on_trace_ready=lambda p: windows.append(p.profiler_result)) as p:
        for name in ("ProfileStep#warmup", "ProfileStep#", "ProfileStep# 7", "ProfileStep"):
            with RecordEvent(name, TracerEventType.ProfileStep):
                pass
        p.step()
    (result,) = windows
    assert "ProfileStep#warmup" in set(result.events["name"])
    assert result.steps == [0, 1]
