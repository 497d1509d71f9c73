"""examples/ddp_train.py end to end: DDP on gloo with 2 processes, each
profiled, the traces merged, the cross-rank summary printed.

Runs the example as a user would (a subprocess, bounded), then checks what
it wrote: both ranks' files, their Communication events, the merged
timeline and the summaries. Skipped with the reason when torch is missing.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from profkit import SummaryView, cross_rank_summary, load_profiler_result

pytest.importorskip("torch", reason="examples/ddp_train.py needs PyTorch")
pytest.importorskip("torch.distributed", reason="examples/ddp_train.py needs torch.distributed")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddp_train.py")
COMMUNICATION = 12


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Runs the example once for the module; returns (log dir, stdout)."""
    log_dir = tmp_path_factory.mktemp("ddp") / "profiler_log"
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONWARNINGS="error")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--log-dir", str(log_dir)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, f"ddp_train.py failed:\n{done.stdout}\n{done.stderr}"
    return str(log_dir), done.stdout


def rank_files(log_dir):
    files = sorted(glob.glob(os.path.join(log_dir, "*.pktrace")), key=lambda p: "rank_1" in p)
    assert len(files) == 2, files
    return files


def test_each_rank_wrote_its_trace_with_rank_and_world_size(run):
    log_dir, _ = run
    for rank, path in enumerate(rank_files(log_dir)):
        assert re.search(rf"pid_\d+rank_{rank}_time_", os.path.basename(path))
        result = load_profiler_result(path)
        assert (result.info["rank"], result.info["world_size"]) == (rank, 2)
        assert result.steps == [3, 4, 5, 6, 7]
    assert not glob.glob(os.path.join(log_dir, "ddp_rendezvous_*"))  # the rendezvous file is cleaned up


def test_ddp_all_reduces_are_communication_events_with_bytes(run):
    log_dir, _ = run
    for path in rank_files(log_dir):
        result = load_profiler_result(path)
        events = result.events
        args = {}
        for row in result.event_args:
            args.setdefault(int(row["event"]), {})[row["key"]] = row["value"]
        launches = [args[i] for i, e in enumerate(events) if e["type"] == COMMUNICATION and e["name"] == "all_reduce"]
        assert len(launches) >= 5  # at least one bucket per recorded step
        assert all(a["bytes"] > 0 and a["dtype"] == "float32" and a["group_size"] == 2 for a in launches)
        assert {a["ddp_bucket"] for a in launches} == set(range(len({a["ddp_bucket"] for a in launches})))
        per_step = sum(a["bytes"] for a in launches) / 5
        parameters = (128 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10)
        assert per_step == parameters * 4  # every gradient all-reduced once per step
        names = [str(e["name"]) for e in events if e["type"] == COMMUNICATION]
        assert names.count("all_reduce (in flight)") == len(launches)
        assert names.count("DDP wait for all_reduce") == 5


def test_distributed_summary_of_each_rank(run):
    log_dir, stdout = run
    for path in rank_files(log_dir):
        table = load_profiler_result(path).summary_data(views=SummaryView.DistributedView)["DistributedView"]
        rows = {row[0]: row[1] for row in table.rows}
        assert rows["Communication"] > 0 and rows["Computation"] > 0 and rows["Overlap"] >= 0
        assert "Forward, Backward, Optimization and PythonOp" in table.notes[0]
    assert "--------Distributed Summary--------" in stdout


def test_merged_timeline_has_both_ranks_on_one_clock(run):
    log_dir, stdout = run
    merged = os.path.join(log_dir, "ddp_merged.trace.json")
    assert f"merged timeline: {merged}" in stdout
    with open(merged, encoding="utf-8") as f:
        doc = json.load(f)
    inputs = doc["profkit"]["merged_from"]
    assert [(i["name"], i["rank"], i["world_size"]) for i in inputs] == [("rank0", 0, 2), ("rank1", 1, 2)]
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert sorted(names.values()) == [
        f"rank0: Process {inputs[0]['pid']} (CPU) rank 0",
        f"rank1: Process {inputs[1]['pid']} (CPU) rank 1",
    ]
    base = doc["profkit"]["base_wall_ns"]
    by_pid = {i["trace_pid"]: i for i in inputs}
    for item, path in zip(inputs, rank_files(log_dir)):
        result = load_profiler_result(path)
        offset = result.info["clock_offset_ns"]
        expected = sorted((str(e["name"]), int(e["start_ns"]) + offset - base) for e in result.events)
        got = sorted((e["name"], round(e["ts"] * 1000)) for e in doc["traceEvents"]
                     if e["ph"] == "X" and e["pid"] == item["trace_pid"])
        assert got == expected
    assert set(by_pid) == {e["pid"] for e in doc["traceEvents"]}

    # Causality across processes: an all-reduce completes on one rank only after
    # the other rank has launched it, so on a common clock every in-flight end on
    # one rank comes after the matching launch on the other (1 ms of slack for
    # the wall clocks read by two processes).
    def timeline(pid, name):
        return [(e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
                if e["ph"] == "X" and e["pid"] == pid and e["name"] == name]

    p0, p1 = inputs[0]["trace_pid"], inputs[1]["trace_pid"]
    for mine, theirs in ((p0, p1), (p1, p0)):
        done = timeline(mine, "all_reduce (in flight)")
        launched = timeline(theirs, "all_reduce")
        assert len(done) == len(launched)
        for (_, end), (start, _) in zip(done, launched):
            assert end >= start - 1000.0


def test_cross_rank_summary_names_the_slowest_rank(run):
    log_dir, stdout = run
    assert "Cross-rank Summary (per step, time unit: ms)" in stdout
    rows = [line for line in stdout.splitlines() if re.match(r"rank[01]( \*)?\s+[01]/2\s+5\s", line)]
    assert len(rows) == 2
    summary = cross_rank_summary(rank_files(log_dir))
    assert f"Slowest rank (*): {summary.slowest.name}" in stdout
    assert [r.rank for r in summary.ranks] == [0, 1]
    assert all(r.comm_bytes == summary.ranks[0].comm_bytes > 0 for r in summary.ranks)


def test_too_few_steps_to_record_anything_is_a_command_line_error(tmp_path):
    # Steps 3-7 are recorded: with 3 steps nothing would be, and the merge had nothing to merge.
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--steps", "3", "--log-dir", str(tmp_path / "log")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--steps must be at least 4" in done.stderr
    assert not (tmp_path / "log").exists()  # refused before any rank started or wrote anything
