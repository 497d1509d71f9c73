"""load_profiler_result of the Chrome JSON profkit writes: the same result as
the .pktrace of the same window (so the default on_trace_ready's files can be
summarized later), and clear errors for JSON profkit did not write."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from profkit import (
    Profiler,
    ProfilerWarning,
    RecordEvent,
    SummaryView,
    TracerEventType,
    export_chrome_tracing,
    load_profiler_result,
    merge_traces,
)
from profkit.result import EVENT_DTYPE

ALL_VIEWS = list(SummaryView)


def record_window(on_trace_ready):
    with Profiler(on_trace_ready=on_trace_ready) as p:
        for step in range(3):
            with RecordEvent("forward", TracerEventType.Forward):
                with RecordEvent("matmul", TracerEventType.Operator):
                    pass
            with RecordEvent("name with \"quotes\" and é", TracerEventType.UserDefined):
                pass
            p.step(num_samples=4)
    return p.profiler_result


@pytest.fixture
def both_files(tmp_path):
    """One window, as the default on_trace_ready writes it (JSON) and as a .pktrace."""
    exporter = export_chrome_tracing(str(tmp_path))
    live = record_window(exporter)
    pktrace = str(tmp_path / "same.pktrace")
    live.save(pktrace)
    (json_path,) = [os.path.join(tmp_path, f) for f in os.listdir(tmp_path) if f.endswith(".trace.json")]
    return live, json_path, pktrace


def test_the_default_on_trace_ready_file_loads_as_the_same_result(both_files):
    live, json_path, pktrace = both_files
    from_json = load_profiler_result(json_path)
    from_pktrace = load_profiler_result(pktrace)
    assert from_json.path == json_path
    assert from_json.info == from_pktrace.info == live.info
    assert from_json.threads == live.threads
    assert from_json.steps == live.steps == [0, 1, 2, 3]
    assert len(from_json) == len(live) > 0
    for field in EVENT_DTYPE.names:
        assert np.array_equal(from_json.events[field], live.events[field]), field
    assert [tuple(a) for a in from_json.event_args] == [tuple(a) for a in live.event_args]


def test_every_summary_view_matches_the_pktrace(both_files):
    _, json_path, pktrace = both_files
    from_json = load_profiler_result(json_path)
    from_pktrace = load_profiler_result(pktrace)
    for thread_sep in (False, True):
        assert from_json.summary(views=ALL_VIEWS, thread_sep=thread_sep) == from_pktrace.summary(
            views=ALL_VIEWS, thread_sep=thread_sep
        )


def test_the_command_line_reads_json_too(both_files):
    _, json_path, _ = both_files
    out = subprocess.run(
        [sys.executable, "-m", "profkit", "summary", json_path, "--views", "ModelView"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Model Summary" in out and "ProfileStep" in out


def test_a_re_exported_json_reads_back_the_same(both_files, tmp_path):
    _, json_path, _ = both_files
    first = load_profiler_result(json_path)
    again = tmp_path / "again.trace.json"
    first.export_chrome_tracing(again, label_durations=True)
    second = load_profiler_result(again)
    assert second.info == first.info
    for field in EVENT_DTYPE.names:
        assert np.array_equal(second.events[field], first.events[field]), field


def test_torch_profilers_json_is_refused_by_name(tmp_path):
    foreign = tmp_path / "torch.json"
    foreign.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.0,
                                                    "dur": 2.0, "pid": 1, "tid": 1}]}))
    with pytest.raises(ValueError, match="not one profkit wrote"):
        load_profiler_result(foreign)


def test_a_merged_timeline_is_refused_and_says_what_to_load(both_files, tmp_path):
    _, json_path, pktrace = both_files
    merged = tmp_path / "job.trace.json"
    with pytest.warns(ProfilerWarning, match="same recording window"):
        merge_traces({"a": json_path, "b": pktrace}, str(merged), strict=False)
    with pytest.raises(ValueError, match=r"merged from 2 traces .*load one process's own"):
        load_profiler_result(merged)


def test_a_cut_or_edited_json_is_a_value_error_never_a_crash(both_files, tmp_path):
    _, json_path, _ = both_files
    with open(json_path, "rb") as f:
        data = f.read()
    bad = tmp_path / "cut.trace.json"
    for size in range(1, len(data), max(1, len(data) // 64)):
        if not data[size:].strip():
            continue  # only the final newline cut: still the whole document
        bad.write_bytes(data[:size])
        with pytest.raises(ValueError, match="cut.trace.json"):
            load_profiler_result(bad)
    # Dropping one event leaves valid JSON; the counts in its metadata catch it.
    lines = data.split(b"\n")
    (first_op,) = [k for k, line in enumerate(lines) if b'"name":"matmul"' in line and line.endswith(b",")][:1]
    del lines[first_op]
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(ValueError, match="cut short or edited"):
        load_profiler_result(bad)
