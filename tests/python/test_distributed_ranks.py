"""Rank awareness and the cross-rank view (no torch needed).

Ranks are recording windows of this process with set ranks; their figures
are checked against the events they recorded, exactly.
"""

import os
import re
import time

import numpy as np
import pytest

import profkit
from profkit import Profiler, ProfilerResult, RecordEvent, TracerEventType, _C, _window_listeners, cross_rank_summary
from profkit._rank import detect_rank
from profkit.cross_rank import CrossRankSummary, RankFigures

COMMUNICATION = TracerEventType.Communication


pytestmark = pytest.mark.usefixtures("no_rank")  # conftest.py


def rank_window(rank, world, compute_s, comm_s, steps=2, in_flight=False, communicate=True):
    """A window of `steps` steps: a compute range, then a blocking collective."""
    _C.set_rank(rank, world)
    _C.set_state(2)
    for step in range(steps):
        _C.step_begin(step)
        with RecordEvent("compute", TracerEventType.PythonUserDefined):
            time.sleep(compute_s)
        if communicate:
            with RecordEvent("all_reduce", COMMUNICATION):
                _C.event_arg_int(_C.intern("bytes"), 1000)
                time.sleep(comm_s)
        if in_flight:
            with RecordEvent("all_reduce (in flight)", COMMUNICATION):
                _C.event_arg_int(_C.intern("bytes"), 1000)
        _C.step_end(0)
    _C.set_state(0)
    return ProfilerResult(_C.collect())


def total_ns(result, name):
    e = result.events
    chosen = e[e["name"] == name]
    return int((chosen["end_ns"] - chosen["start_ns"]).sum())


def test_figures_are_the_recorded_times_per_step():
    r0 = rank_window(0, 2, 0.002, 0.005, in_flight=True)
    r1 = rank_window(1, 2, 0.030, 0.001)
    summary = cross_rank_summary([r1, r0])  # given out of order: rows come by rank
    a, b = summary.ranks
    assert (a.name, a.rank, a.world_size, a.steps) == ("rank0", 0, 2, 2)
    assert (b.name, b.rank) == ("rank1", 1)
    for figures, result in ((a, r0), (b, r1)):
        steps = [e for e in result.events if e["type"] == 2]
        step_total = sum(int(e["end_ns"] - e["start_ns"]) for e in steps)
        assert figures.step_ns == step_total / 2
        assert figures.computation_ns == total_ns(result, "compute") / 2
        comm = total_ns(result, "all_reduce") + total_ns(result, "all_reduce (in flight)")
        assert figures.communication_ns == comm / 2  # disjoint here: the union is the sum
        assert figures.overlap_ns == 0
        assert figures.other_ns == pytest.approx((step_total - total_ns(result, "compute") - comm) / 2)
        assert figures.comm_bytes == 1000  # per step; the in-flight copy of the bytes is not counted again
        assert figures.collectives == 1
    assert summary.slowest is b and summary.fastest is a and summary.most_computation is b
    text = summary.text()
    assert text.startswith("Cross-rank Summary (per step, time unit: ms)")
    assert re.search(r"^rank1 \*\s+1/2\s+2\s", text, re.M)
    assert "Slowest rank (*): rank1" in text
    assert "Likely straggler: rank1 computes the most" in text
    assert "Note: No GPU kernels were recorded: Computation = time inside UserDefined and PythonUserDefined" in text
    assert str(summary) == text
    assert summary.to_dict()["slowest"] == "rank1"
    with pytest.raises(ValueError, match="time_unit"):
        summary.text("hours")


def test_sources_paths_results_and_names(tmp_path):
    r0 = rank_window(0, 2, 0.001, 0.001)
    r1 = rank_window(-1, -1, 0.001, 0.001, communicate=False)
    path = str(tmp_path / "unnamed.pktrace")
    r1.save(path)
    summary = cross_rank_summary([r0.raw, path])
    assert [r.name for r in summary.ranks] == ["rank0", "unnamed"]
    unknown = summary.ranks[1]
    assert unknown.rank == -1 and unknown.computation_ns is None and unknown.source == path
    # No communication: no computation. The slower of the two rows is starred.
    assert re.search(r"^unnamed( \*)?\s+\?\s+2\s+[\d.]+\s+-\s", summary.text(), re.M)
    assert [r.name for r in cross_rank_summary([r0, r1], names=["a", "b"]).ranks] == ["a", "b"]
    with pytest.raises(ValueError, match="2 names for 1 sources"):
        cross_rank_summary([r0], names=["a", "b"])
    with pytest.raises(FileNotFoundError, match="missing.pktrace"):
        cross_rank_summary([str(tmp_path / "missing.pktrace")])
    frame = pytest.importorskip("pandas") and summary.to_pandas()
    assert list(frame["name"]) == ["rank0", "unnamed"]


def test_a_profkit_chrome_trace_is_a_source_named_like_its_pktrace(tmp_path):
    # The docstring used to say Chrome JSON could not be given, and the row
    # kept the ".trace.json" suffix that the .pktrace's row and merge drop.
    r = rank_window(-1, -1, 0.001, 0.001)
    r.save(str(tmp_path / "w.pktrace"))
    r.export_chrome_tracing(str(tmp_path / "w.trace.json"))
    rows = cross_rank_summary([str(tmp_path / "w.pktrace"), str(tmp_path / "w.trace.json")]).ranks
    assert [row.name for row in rows] == ["w", "w-2"]  # one stem, told apart as profkit merge does
    assert rows[0].step_ns == rows[1].step_ns and rows[0].communication_ns == rows[1].communication_ns


def test_a_window_without_steps_uses_the_recorded_span():
    _C.set_rank(0, 1)
    _C.set_state(2)
    with RecordEvent("all_reduce", COMMUNICATION):
        pass
    _C.set_state(0)
    figures = cross_rank_summary([ProfilerResult(_C.collect())]).ranks[0]
    assert figures.steps == 0 and figures.step_ns > 0
    assert "Steps" in cross_rank_summary([]).text() and "No ranks." in cross_rank_summary([]).text()


def test_detect_rank_from_the_environment(monkeypatch):
    assert detect_rank() is None  # (torch.distributed is not initialized in this process)
    monkeypatch.setenv("RANK", "3")
    assert detect_rank() == (3, -1)
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert detect_rank() == (3, 4)
    monkeypatch.setenv("WORLD_SIZE", "2")  # inconsistent: the world size is left unknown
    assert detect_rank() == (3, -1)
    monkeypatch.setenv("RANK", "x")
    assert detect_rank() is None


def test_ranks_the_engine_cannot_hold_are_not_taken(monkeypatch):
    # Past int32, pk_set_rank's type: start() failed with pybind11's
    # "set_rank(): incompatible function arguments".
    monkeypatch.setenv("RANK", "3000000000")
    assert detect_rank() is None
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4294967297")
    assert detect_rank() == (1, -1)
    with Profiler(on_trace_ready=lambda p: None) as prof:
        prof.step()
    assert prof.profiler_result.info["rank"] == 1


def test_profiler_puts_the_rank_into_results_and_file_names(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    exporter = profkit.export_protobuf(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as prof:
        prof.step()
    info = prof.profiler_result.info
    assert (info["rank"], info["world_size"]) == (3, 4)
    assert re.search(r"pid_\d+rank_3_time_", os.path.basename(exporter.paths[0]))
    assert profkit.load_profiler_result(exporter.paths[0]).info["world_size"] == 4


def test_profiler_leaves_an_engine_rank_alone_when_none_is_found():
    _C.set_rank(1, 4)  # set by a framework hook, say
    with Profiler(on_trace_ready=lambda p: None) as prof:
        prof.step()
    assert (prof.profiler_result.info["rank"], prof.profiler_result.info["world_size"]) == (1, 4)


def test_collect_hooks_run_while_still_recording():
    seen = []

    def hook(profiler):
        seen.append((profiler is prof, _C.is_recording()))
        with RecordEvent("late", TracerEventType.UserDefined):
            pass

    _window_listeners.add_collect_hook(hook)
    _window_listeners.add_collect_hook(hook)  # once only
    try:
        # Two windows back to back: the first is collected while recording goes on.
        scheduler = profkit.make_scheduler(closed=0, ready=0, record=2, repeat=2)
        with Profiler(scheduler=scheduler, on_trace_ready=lambda p: None) as prof:
            for _ in range(5):
                prof.step()
    finally:
        _window_listeners.remove_collect_hook(hook)
    _window_listeners.remove_collect_hook(hook)  # absent: no error
    assert seen == [(True, True), (True, True)]
    assert "late" in set(prof.profiler_result.events["name"])


def test_a_failing_collect_hook_warns_and_the_window_is_delivered():
    def broken(profiler):
        raise RuntimeError("integration bug")

    _window_listeners.add_collect_hook(broken)
    delivered = []
    try:
        with pytest.warns(profkit.ProfilerWarning, match="integration bug"):
            with Profiler(scheduler=(0, 1), on_trace_ready=delivered.append) as prof:
                prof.step()
    finally:
        _window_listeners.remove_collect_hook(broken)
    assert len(delivered) == 1


def test_cpu_distributed_summary_counts_host_computation():
    result = rank_window(0, 2, 0.002, 0.001)
    table = result.summary_data(views=profkit.SummaryView.DistributedView, time_unit="ns")["DistributedView"]
    rows = {row[0]: row[1] for row in table.rows}
    assert rows["Computation"] == total_ns(result, "compute")
    assert rows["Communication"] == total_ns(result, "all_reduce")
    assert rows["Overlap"] == 0
    assert np.isclose(rows["Computation"], cross_rank_summary([result]).ranks[0].computation_ns * 2)


def test_ddp_wait_marker_is_not_counted_as_a_collective():
    from profkit.integrations.torch_distributed import DDP_WAIT_NAME

    _C.set_rank(0, 1)
    _C.set_state(2)
    for step in range(2):
        _C.step_begin(step)
        with RecordEvent("all_reduce", COMMUNICATION):
            _C.event_arg_int(_C.intern("bytes"), 1000)
        with RecordEvent(DDP_WAIT_NAME, COMMUNICATION):
            _C.event_arg_int(_C.intern("buckets"), 3)
        _C.step_end(0)
    _C.set_state(0)
    figures = cross_rank_summary([ProfilerResult(_C.collect())]).ranks[0]
    assert figures.collectives == 1 and figures.comm_bytes == 1000


def test_steps_are_the_model_summarys_steps_not_every_profile_step_event():
    # A user's range of type ProfileStep inside a step and an instant mark of
    # that type were counted as steps of their own: 6 "steps" for 2, and
    # every per-step figure a third of what it is.
    _C.set_rank(0, 1)
    _C.set_state(2)
    for step in range(2):
        _C.step_begin(step)
        with RecordEvent("my_step", TracerEventType.ProfileStep):
            time.sleep(0.001)
        _C.instant_event(_C.intern("step_mark"), int(TracerEventType.ProfileStep))
        with RecordEvent("all_reduce", COMMUNICATION):
            _C.event_arg_int(_C.intern("bytes"), 1000)
        _C.step_end(0)
    _C.set_state(0)
    result = ProfilerResult(_C.collect())
    assert len([e for e in result.events if e["type"] == int(TracerEventType.ProfileStep)]) == 6
    model = result.summary_data(views="ModelView", time_unit="ns")["ModelView"]
    step_row = dict(zip(model.columns, model.rows[0]))
    figures = cross_rank_summary([result]).ranks[0]
    steps = [e for e in result.events if str(e["name"]).startswith("ProfileStep#")]
    step_total = sum(int(e["end_ns"] - e["start_ns"]) for e in steps)
    assert figures.steps == step_row["Calls"] == len(steps) == 2
    assert figures.step_ns == step_total / 2 == step_row["CPU Avg"]
    assert figures.comm_bytes == 1000 and figures.collectives == 1
    assert re.search(r"^rank0\s+0/1\s+2\s", cross_rank_summary([result]).text(), re.M)


def test_overview_counts_an_in_flight_copy_as_no_call():
    # The Overview agrees with the cross-rank count: the async call's
    # "(in flight)" lane is its time, not a second call.
    result = rank_window(0, 1, 0.001, 0.001, in_flight=True)
    overview = result.summary_data(views="OverView", time_unit="ns")["OverView"]
    row = {r[0]: dict(zip(overview.columns, r)) for r in overview.rows}["Communication"]
    assert row["Calls"] == 2 == cross_rank_summary([result]).ranks[0].collectives * 2
    assert row["CPU Time"] == total_ns(result, "all_reduce") + total_ns(result, "all_reduce (in flight)")


def test_two_traces_of_one_rank_are_a_warning():
    r0, again = rank_window(0, 2, 0.001, 0.001), rank_window(0, 2, 0.001, 0.001)
    with pytest.warns(profkit.ProfilerWarning, match="both claim rank 0 of world size 2; give one trace per rank"):
        summary = cross_rank_summary([r0, again, rank_window(1, 2, 0.001, 0.001)], names=["a", "b", None])
    assert [r.name for r in summary.ranks] == ["a", "b", "rank1"]


def test_two_traces_of_one_rank_get_rows_of_their_own_names():
    # Default names alike ("rank0" twice) made findings that named one row
    # for two ("Slowest rank (*): rank0 ... over the fastest (rank0, ...)").
    r0, again = rank_window(0, 2, 0.001, 0.001), rank_window(0, 2, 0.002, 0.001)
    with pytest.warns(profkit.ProfilerWarning, match="both claim rank 0"):
        summary = cross_rank_summary([r0, again, rank_window(1, 2, 0.001, 0.001)], names=[None, None, "rank0-2x"])
    assert sorted(r.name for r in summary.ranks) == ["rank0", "rank0-2", "rank0-2x"]


def figures(name, rank, computation_ms, communication_ms, step_ms=10):
    ms = 1e6
    return RankFigures(
        name=name, rank=rank, world_size=2, steps=1, step_ns=step_ms * ms, computation_ns=computation_ms * ms,
        communication_ns=communication_ms * ms, overlap_ns=0.0, other_ns=0.0, comm_bytes=0.0, collectives=1.0,
        computation_note="", source="",
    )


def findings(*ranks):
    """The summary's finding lines for these ranks (chosen as cross_rank_summary chooses)."""
    summary = CrossRankSummary(
        ranks=list(ranks), slowest=ranks[-1], fastest=ranks[0],
        most_computation=max(ranks, key=lambda r: r.computation_ns),
    )
    return [line for line in summary.text().splitlines() if line.startswith(("Likely straggler", "Most computation"))]


def test_a_straggler_is_named_only_when_it_stands_out():
    assert findings(figures("a", 0, 5, 2), figures("b", 1, 9, 1))[0].startswith("Likely straggler: b computes")
    assert findings(figures("a", 0, 5, 2), figures("b", 1, 9, 3)) == ["Most computation: b (9.00 ms per step)."]
    assert findings(figures("a", 0, 5, 2), figures("b", 1, 5, 2)) == []  # a tie: nobody
    assert findings(figures("a", 0, 0, 2), figures("b", 1, 0, 1)) == []  # no computation: nobody
    assert findings(figures("a", 0, 5.0, 2), figures("b", 1, 5.1, 1)) == []  # within noise of each other


def summary_of(monkeypatch, *ranks):
    """cross_rank_summary over figures given directly (as if read from each rank's trace)."""
    from profkit import cross_rank

    monkeypatch.setattr(cross_rank, "_as_result", lambda figures: (figures, ""))
    monkeypatch.setattr(cross_rank, "rank_figures", lambda figures, name, source: figures)
    return cross_rank_summary(list(ranks), names=[r.name for r in ranks])


def test_ranks_that_all_take_the_same_time_have_no_slowest_rank(monkeypatch):
    summary = summary_of(monkeypatch, figures("a", 0, 5, 2), figures("b", 1, 5, 2), figures("c", 2, 5, 2))
    assert summary.slowest is None and summary.fastest is None
    assert summary.to_dict()["slowest"] is None and summary.to_dict()["fastest"] is None
    text = summary.text()
    assert "Every rank takes the same time per step (10.00 ms): no slowest rank." in text
    assert "Slowest rank" not in text and "straggler" not in text and "Most computation" not in text
    assert " *" not in text  # no row marked slowest


def test_tied_ranks_never_make_one_rank_both_slowest_and_fastest(monkeypatch):
    summary = summary_of(
        monkeypatch, figures("a", 0, 5, 2, step_ms=12), figures("b", 1, 5, 2, step_ms=12), figures("c", 2, 5, 2)
    )
    assert summary.slowest.name == "a" and summary.fastest.name == "c"  # the first of the tied slowest
    assert "Slowest rank (*): a at 12.00 ms per step, 20.0% over the fastest (c, 10.00 ms)." in summary.text()
    one = summary_of(monkeypatch, figures("a", 0, 5, 2, step_ms=12))
    assert one.slowest is one.fastest and one.slowest.name == "a"  # a single rank is both; nothing is claimed
    assert "Slowest rank" not in one.text()


def test_equal_step_times_still_name_a_rank_that_computes_clearly_more(monkeypatch):
    # In a synchronous job step times end up equal: the straggler shows in its figures (module docstring).
    summary = summary_of(monkeypatch, figures("a", 0, 5, 2), figures("b", 1, 9, 1))
    assert summary.slowest is None
    lines = summary.text().splitlines()
    assert "Every rank takes the same time per step (10.00 ms): no slowest rank." in lines
    assert any(line.startswith("Likely straggler: b computes the most") for line in lines)


def test_a_fastest_rank_with_no_step_time_gives_no_percentage(monkeypatch):
    summary = summary_of(monkeypatch, figures("a", 0, 5, 2, step_ms=9), figures("b", 1, 5, 2, step_ms=0))
    text = summary.text()
    assert "Slowest rank (*): a at 9.00 ms per step, against the fastest (b, 0.00 ms)." in text
    assert "0.0% over" not in text
