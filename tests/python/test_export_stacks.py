"""Folded stacks for flame graphs (torch.profiler's export_stacks): the file
of a real run against self times computed here from ``result.events``, the
metric names, paths, errors, and ``profkit stacks``."""

import collections
import gzip
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from profkit import Profiler, RecordEvent, TracerEventType, cli, load_profiler_result

CPU = "self_cpu_time_total"
STEP = re.compile(r"ProfileStep#\d+")


def busy(seconds):
    """Spends `seconds` on the CPU (a sleep would leave the thread's time to chance)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def record(steps=3):
    """A run with two levels of RecordEvent ranges in each step; the Profiler holds the result."""
    with Profiler() as p:
        for _ in range(steps):
            with RecordEvent("outer"):
                busy(0.001)
                with RecordEvent("inner;odd\nname", TracerEventType.UserDefined):
                    busy(0.002)
                busy(0.0005)
            p.step()
    return p


def frame(name, event_type=None):
    if event_type == TracerEventType.ProfileStep and STEP.fullmatch(name):
        return "ProfileStep"
    name = name.replace(";", ":").replace("\n", " ").replace("\r", " ")
    return name or "[unnamed]"


def rounded_us(ns):
    return (ns + 500) // 1000


def stacks_of(events):
    """Each host event's stack, root first, as the file writes it."""
    stacks = []
    for i, e in enumerate(events):
        parent = e["parent"]
        own = frame(e["name"], e["type"])
        stacks.append(own if parent < 0 else stacks[parent] + ";" + own)  # parents come first
    return stacks


def expected_self_cpu(result):
    """{stack: µs} computed from the decoded events and their parents."""
    events = result.events
    instant = (events["flags"] & 1) != 0
    duration = np.where(instant, 0, events["duration_ns"]).astype(np.int64)
    children = np.zeros(len(events), dtype=np.int64)
    has_parent = events["parent"] >= 0
    np.add.at(children, events["parent"][has_parent], duration[has_parent])
    ns = collections.Counter()
    for i, stack in enumerate(stacks_of(events)):
        if not instant[i]:
            ns[stack] += max(int(duration[i]) - int(children[i]), 0)
    return {stack: rounded_us(v) for stack, v in ns.items() if rounded_us(v) > 0}


def expected_self_device(result):
    stacks = stacks_of(result.events)
    ns = collections.Counter()
    for d in result.device_events:
        under = stacks[d["launch_event"]] if d["launch_event"] >= 0 else "[GPU work with no launching call]"
        ns[under + ";" + frame(d["name"])] += int(d["duration_ns"])
    return {stack: rounded_us(v) for stack, v in ns.items() if rounded_us(v) > 0}


def read_stacks(path):
    """{stack: value} of a folded-stacks file, checking each line's form and the order."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert text == "".join(line + "\n" for line in lines)  # every line ends, none is blank
    stacks = [line.rsplit(" ", 1)[0] for line in lines]
    assert stacks == sorted(stacks, key=lambda s: s.encode()) and len(set(stacks)) == len(stacks)
    values = {}
    for line in lines:
        stack, value = line.rsplit(" ", 1)
        assert re.fullmatch(r"[1-9]\d*", value), line
        values[stack] = int(value)
    return values


def test_a_run_gives_each_ranges_self_time_under_its_enclosing_ranges(tmp_path):
    p = record()
    result = p.profiler_result
    path = tmp_path / "run.stacks"
    p.export_stacks(str(path))
    got = read_stacks(path)
    assert got == expected_self_cpu(result)
    # Three steps, three pairs of ranges: one line each, whatever the step.
    inner = "ProfileStep;outer;inner:odd name"
    assert inner in got and "ProfileStep;outer" in got
    assert not any("ProfileStep#" in stack for stack in got)
    # The inner ranges' line is their whole time (nothing nested in them).
    inner_ns = sum(int(e["duration_ns"]) for e in result.events if e["name"] == "inner;odd\nname")
    assert got[inner] == rounded_us(inner_ns)
    # Every nanosecond of the steps is some stack's: the values add up to
    # the steps' time, give or take half a µs per stack (rounded, or left out).
    steps_ns = sum(int(e["duration_ns"]) for e in result.events if e["parent"] < 0)
    assert abs(sum(got.values()) - steps_ns / 1000) <= 0.5 * len(set(stacks_of(result.events)))


def test_the_device_metric_has_both_torch_names(tmp_path):
    p = record(steps=1)
    result = p.profiler_result
    for metric in ("self_cuda_time_total", "self_device_time_total"):
        result.export_stacks(tmp_path / f"{metric}.stacks", metric=metric)
        assert read_stacks(tmp_path / f"{metric}.stacks") == expected_self_device(result)
    assert (tmp_path / "self_cuda_time_total.stacks").read_bytes() == (
        tmp_path / "self_device_time_total.stacks"
    ).read_bytes()


@pytest.mark.parametrize("metric", ["cpu_time_total", "self_cpu_time", "SELF_CPU_TIME_TOTAL", "", 0, 1, None])
def test_an_unknown_metric_is_a_value_error_naming_the_valid_ones(tmp_path, metric):
    result = record(steps=1).profiler_result
    with pytest.raises(ValueError, match="'self_cpu_time_total', 'self_device_time_total', 'self_cuda_time_total'"):
        result.export_stacks(tmp_path / "x.stacks", metric=metric)
    assert os.listdir(tmp_path) == []


def test_pathlib_and_str_paths_give_the_same_file(tmp_path):
    result = record(steps=1).profiler_result
    result.export_stacks(tmp_path / "a.stacks")
    result.export_stacks(str(tmp_path / "b.stacks"), CPU)
    assert (tmp_path / "a.stacks").read_bytes() == (tmp_path / "b.stacks").read_bytes() != b""


def test_a_gz_name_is_written_compressed_as_every_output(tmp_path):
    # The library wrote plain text under the .gz name (only the CLI compressed).
    result = record(steps=1).profiler_result
    result.export_stacks(tmp_path / "a.stacks")
    result.export_stacks(tmp_path / "a.stacks.gz")
    packed = (tmp_path / "a.stacks.gz").read_bytes()
    assert packed[:2] == b"\x1f\x8b" and gzip.decompress(packed) == (tmp_path / "a.stacks").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.stacks", "a.stacks.gz"]  # no temporary left


def test_a_missing_directory_is_file_not_found_and_leaves_nothing(tmp_path):
    result = record(steps=1).profiler_result
    with pytest.raises(FileNotFoundError, match="cannot create"):
        result.export_stacks(tmp_path / "missing" / "x.stacks")
    with pytest.raises(TypeError):
        result.export_stacks(42)
    assert os.listdir(tmp_path) == []


def test_profiler_export_stacks_needs_a_collected_window(tmp_path):
    p = Profiler()
    with pytest.raises(RuntimeError, match=r"Profiler.export_stacks\(\): no trace has been collected yet"):
        p.export_stacks(tmp_path / "x.stacks")
    assert os.listdir(tmp_path) == []


def test_a_saved_trace_gives_the_same_stacks(tmp_path):
    p = record()
    p.export_stacks(tmp_path / "live.stacks")
    p.export(str(tmp_path / "run.pktrace"), format="pb")
    p.export(str(tmp_path / "run.trace.json"))
    for saved in ("run.pktrace", "run.trace.json"):
        loaded = load_profiler_result(tmp_path / saved)
        loaded.export_stacks(tmp_path / "loaded.stacks")
        assert (tmp_path / "loaded.stacks").read_bytes() == (tmp_path / "live.stacks").read_bytes()
        assert read_stacks(tmp_path / "loaded.stacks") == expected_self_cpu(loaded)


# ---- profkit stacks --------------------------------------------------------------
def run(*args):
    """The command line in a subprocess: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "profkit", *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def trace(tmp_path):
    p = record()
    path = tmp_path / "run.pktrace"
    p.export(str(path), format="pb")
    return path


def test_cli_writes_beside_the_trace_by_default_and_says_how_to_view_it(trace, tmp_path):
    code, out, err = run("stacks", str(trace))
    written = tmp_path / "run.stacks"
    assert code == 0 and err == ""
    assert f"wrote {written}" in out
    assert f"flamegraph.pl --countname us. {written} > {tmp_path / 'run.svg'}" in out
    assert "speedscope.app" in out
    loaded = load_profiler_result(trace)
    assert read_stacks(written) == expected_self_cpu(loaded)


def test_cli_output_and_metric(trace, tmp_path, capsys):
    out = tmp_path / "flame input.txt"
    assert cli.main(["stacks", str(trace), "-o", str(out), "--metric", "self_cuda_time_total"]) == 0
    assert "'" + str(out) + "'" in capsys.readouterr().out  # quoted for the shell: the name has a space
    assert read_stacks(out) == expected_self_device(load_profiler_result(trace))
    assert cli.main(["stacks", str(trace), "-o", str(out), "--metric", CPU]) == 0
    assert read_stacks(out) == expected_self_cpu(load_profiler_result(trace))


def test_cli_default_output_of_a_chrome_trace(trace, tmp_path):
    json_path = tmp_path / "other.trace.json"
    load_profiler_result(trace).export_chrome_tracing(json_path)
    assert cli.main(["stacks", str(json_path)]) == 0
    assert (tmp_path / "other.stacks").read_bytes() == _stacks_of(trace, tmp_path)


def _stacks_of(trace, tmp_path):
    load_profiler_result(trace).export_stacks(tmp_path / "direct.stacks")
    return (tmp_path / "direct.stacks").read_bytes()


def test_cli_errors(trace, tmp_path):
    code, out, err = run("stacks", str(trace), "--metric", "cpu")
    assert code == 2 and out == ""
    assert err.startswith("profkit: error:") and "invalid choice: 'cpu'" in err and len(err.splitlines()) == 1
    code, out, err = run("stacks", str(tmp_path / "missing.pktrace"))
    assert code == 1 and out == "" and "missing.pktrace" in err and len(err.splitlines()) == 1
    code, out, err = run("stacks", str(trace), "-o", str(tmp_path / "no" / "such" / "x.stacks"))
    assert code == 1 and out == "" and f"the directory '{tmp_path / 'no' / 'such'}' does not exist" in err
    assert sorted(os.listdir(tmp_path)) == ["run.pktrace"]
