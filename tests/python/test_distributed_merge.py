"""profkit merge: traces of several processes on one wall-clock timeline.

No torch needed: the "processes" are recording windows of this process (as
.pktrace files, or Chrome JSON whose metadata is edited to stand for other
processes with known clock offsets), so the arithmetic is checked exactly.
"""

import errno
import gzip
import json
import os
import pathlib
import re
import subprocess
import sys
import tracemalloc
import warnings

import pytest

from profkit import ProfilerResult, ProfilerWarning, RecordEvent, _C, cli, cross_rank_summary, merge_traces
from profkit._merge_sources import Source, looks_like_json, looks_like_pktrace
from profkit import _merge_writing
from profkit._merge_writing import _LINE, _LINES, _ONE_LINE, without_possessives
from profkit.merge import MergeError, parse_merge_inputs

FOOTER = '\n],\n"displayTimeUnit":"ms",\n"profkit":'


@pytest.fixture(autouse=True)
def no_rank():
    yield
    _C.set_rank(-1, -1)


def record_window(rank=-1, world=-1, events=True):
    """One recording window of this process, as rank `rank` of `world`."""
    _C.set_rank(rank, world)
    _C.set_state(2)
    if events:
        _C.step_begin(0)
        with RecordEvent("all_reduce", 12):
            _C.event_arg_int(_C.intern("bytes"), 4096)
        with RecordEvent("aten::mm", 0):
            pass
        _C.step_end(0)
    _C.set_state(0)
    return ProfilerResult(_C.collect())


def saved(result, path):
    result.save(str(path))
    return str(path)


def exported(result, path):
    result.export_chrome_tracing(str(path))
    return str(path)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def x_events(doc, pid):
    return sorted((e["name"], round(e["ts"] * 1000)) for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid)


def process_names(doc):
    return {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}


def sort_indexes(doc):
    return {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e.get("name") == "process_sort_index"}


def edit_metadata(source, target, **changes):
    """A copy of a profkit Chrome trace with its top-level metadata changed."""
    with open(source, encoding="utf-8") as f:
        text = f.read()
    cut = text.rindex(FOOTER) + len(FOOTER)
    meta = json.loads(text[cut:].rstrip()[:-1])
    meta.update(changes)
    with open(target, "w", encoding="utf-8") as f:
        f.write(text[:cut] + json.dumps(meta, separators=(",", ":")) + "}\n")
    return str(target)


def first_wall_ns(result):
    info = result.info
    return int(min(info["start_ns"], int(result.host_events["start_ns"].min()))) + info["clock_offset_ns"]


def expected_events(result, base_wall_ns):
    """(name, ts in ns) of each host event, placed on the merged timeline."""
    offset = result.info["clock_offset_ns"]
    return sorted((str(e["name"]), int(e["start_ns"]) + offset - base_wall_ns) for e in result.events)


def test_pktrace_windows_land_on_one_wall_clock_timeline(tmp_path):
    r0, r1 = record_window(0, 2), record_window(1, 2)
    out = tmp_path / "merged.trace.json"
    with pytest.warns(ProfilerWarning, match="do not overlap"):  # two windows of one process, one after the other
        report = merge_traces({"trainer0": saved(r0, tmp_path / "r0.pktrace"), "trainer1": saved(r1, tmp_path / "r1.pktrace")}, out)
    doc = load(out)
    pid = os.getpid()
    a, b = report.inputs
    assert (a.name, a.rank, a.world_size, a.trace_pid, a.format) == ("trainer0", 0, 2, pid, "pktrace")
    assert (b.name, b.rank, b.trace_pid) == ("trainer1", 1, 4194305)  # same OS pid: moved where no pid can be
    assert process_names(doc) == {pid: f"trainer0: Process {pid} (CPU) rank 0", 4194305: f"trainer1: Process {pid} (CPU) rank 1"}
    assert sort_indexes(doc) == {pid: 0, 4194305: 1000}
    base = min(first_wall_ns(r0), first_wall_ns(r1))
    assert report.base_wall_ns == base == doc["profkit"]["base_wall_ns"]
    assert x_events(doc, pid) == expected_events(r0, base)
    assert x_events(doc, 4194305) == expected_events(r1, base)
    assert b.shift_ns == first_wall_ns(r1) - base > 0
    assert [m["name"] for m in doc["profkit"]["merged_from"]] == ["trainer0", "trainer1"]
    assert report.events == len(doc["traceEvents"])
    assert sorted(os.listdir(tmp_path)) == ["merged.trace.json", "r0.pktrace", "r1.pktrace"]  # no temporaries left


def test_chrome_inputs_shift_by_their_clock_offsets(tmp_path):
    r0 = record_window(0, 2)
    a = exported(r0, tmp_path / "a.trace.json")
    meta = load(a)["profkit"]
    # "Another process" whose window began 2.5 us later on the wall clock.
    b = edit_metadata(a, tmp_path / "b.trace.json", rank=1, span_index=99, base_wall_ns=meta["base_wall_ns"] + 2500)
    out = tmp_path / "m.trace.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = merge_traces([a, b], out)
    doc = load(out)
    pid = os.getpid()
    assert [i.name for i in report.inputs] == ["rank0", "rank1"]  # default names from the ranks
    assert [i.shift_ns for i in report.inputs] == [0, 2500]
    first = x_events(doc, pid)
    assert first == [(name, ts) for name, ts in x_events(load(a), pid)]
    assert x_events(doc, 4194305) == [(name, ts + 2500) for name, ts in first]
    assert process_names(doc)[4194305] == f"rank1: Process {pid} (CPU) rank 0"  # the label text is the file's own


def write_chrome(path, pid, rank, base_wall_ns, extra_meta=None):
    """A small Chrome trace in profkit's layout: a launch, its kernel, a flow arrow."""
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"Process {pid} (CPU)"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "process_name", "pid": pid + 10000000, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid + 10000000, "tid": 0, "args": {"sort_index": 1}},
        {"ph": "X", "cat": "CudaRuntime", "name": "cudaLaunchKernel", "ts": 1.0, "dur": 1.0, "pid": pid,
         "tid": 1000000000 + pid, "args": {"id": 5, "pid": 9, "ts": 3}},
        {"ph": "X", "cat": "Kernel", "name": "k", "ts": 2.5, "dur": 1.0, "pid": pid + 10000000, "tid": 7,
         "args": {"correlation id": 1}},
        {"ph": "s", "cat": "ac2g", "name": "launch", "id": 1, "ts": 1.0, "pid": pid, "tid": 1000000000 + pid},
        {"ph": "f", "bp": "e", "cat": "ac2g", "name": "launch", "id": 1, "ts": 2.5, "pid": pid + 10000000, "tid": 7},
    ]
    meta = {"hostname": "h", "pid": pid, "rank": rank, "world_size": 2, "span_index": 0, "base_ns": 100,
            "base_wall_ns": base_wall_ns, "start_ns": 100, "end_ns": 10000, "clock_offset_ns": base_wall_ns - 100,
            "host_event_count": 1, "device_event_count": 1, "devices": [], "metadata": {}}
    meta.update(extra_meta or {})

    def line(e):
        text = json.dumps(e, separators=(",", ":"))
        return text.replace('"ts":1.0,', '"ts":1.000,').replace('"ts":2.5,', '"ts":2.500,').replace('"dur":1.0,', '"dur":1.000,')

    with open(path, "w", encoding="utf-8") as f:
        f.write('{"traceEvents":[\n' + ",\n".join(line(e) for e in events) + FOOTER + json.dumps(meta) + "}\n")
    return str(path)


def test_pids_flow_ids_and_only_our_fields_are_remapped(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    b = write_chrome(tmp_path / "b.trace.json", 7, 1, 1_000_500, {"hostname": "other-host"})  # same pid elsewhere
    out = tmp_path / "m.trace.json"
    merge_traces({"a": a, "b": b}, out)
    doc = load(out)
    assert process_names(doc) == {7: "a: Process 7 (CPU)", 10000007: "a: GPU 0", 4194305: "b: Process 7 (CPU)",
                                  14194305: "b: GPU 0"}
    assert sort_indexes(doc) == {7: 0, 10000007: 1, 4194305: 1000, 14194305: 1001}
    flows = sorted((e["ph"], e["id"], e["pid"], e["ts"]) for e in doc["traceEvents"] if e["ph"] in "sf")
    assert flows == [("f", 1, 10000007, 2.5), ("f", 2, 14194305, 3.0), ("s", 1, 7, 1.0), ("s", 2, 4194305, 1.5)]
    launches = [e for e in doc["traceEvents"] if e["name"] == "cudaLaunchKernel"]
    assert [e["args"] for e in launches] == [{"id": 5, "pid": 9, "ts": 3}] * 2  # arguments are left alone
    assert [e["ts"] for e in launches] == [1.0, 1.5]
    merge_traces({"a": a, "b": b}, out, include_flows=False)
    assert not [e for e in load(out)["traceEvents"] if e["ph"] in "sf"]


def test_a_chrome_trace_in_another_layout_is_parsed_whole(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    pretty = tmp_path / "pretty.trace.json"
    pretty.write_text(json.dumps(load(a), indent=2))  # re-saved by some tool: one event per line no more
    b = write_chrome(tmp_path / "b.trace.json", 8, 1, 1_000_000)
    merge_traces([str(pretty), b], tmp_path / "one.trace.json")
    merge_traces([a, b], tmp_path / "two.trace.json")
    assert load(tmp_path / "one.trace.json")["traceEvents"] == load(tmp_path / "two.trace.json")["traceEvents"]


def test_inputs_as_dict_pairs_and_name_equals_file(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    b = write_chrome(tmp_path / "b.trace.json", 8, 1, 1_000_000)
    out = tmp_path / "m.trace.json"
    assert [i.name for i in merge_traces([("x", a), f"y={b}"], out).inputs] == ["x", "y"]
    assert [i.name for i in merge_traces({"p": a, "q": b}, out).inputs] == ["p", "q"]
    c = write_chrome(tmp_path / "c.trace.json", 9, -1, 1_000_000, {"world_size": -1})
    assert [i.name for i in merge_traces([a, c], out).inputs] == ["rank0", "c"]  # unknown rank: the file's name
    assert parse_merge_inputs(["n=x.pktrace", a]) == [("n", "x.pktrace"), (None, a)]


def put(path, data):
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: str(d / "missing.pktrace"), r"cannot read '.*missing.pktrace': No such file"),
        (lambda d: str(d), r"is a directory"),
        (lambda d: put(d / "empty.pktrace", b""), r"'.*empty.pktrace' is empty"),
        (lambda d: put(d / "junk.pktrace", b"\x00junk" * 10), r"cannot read '.*junk.pktrace' as a profkit trace"),
        (lambda d: put(d / "other.json", b'{"traceEvents": []}'), r"'.*other.json' is JSON but not a trace written by profkit"),
        (lambda d: put(d / "notrace.json", b'{"a": 1}'), r"not a Chrome trace"),
        (lambda d: put(d / "bad.json", b'{"traceEvents": ['), r"'.*bad.json' is neither a profkit .pktrace file nor valid JSON"),
    ],
)
def test_unreadable_inputs_are_errors_naming_the_file(tmp_path, make, message):
    good = write_chrome(tmp_path / "good.trace.json", 7, 0, 1_000_000)
    bad = make(tmp_path)
    with pytest.raises(MergeError, match=message):
        merge_traces([good, bad], tmp_path / "m.trace.json")
    assert not (tmp_path / "m.trace.json").exists()


def test_inputs_that_are_not_a_collection_are_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="merge: inputs must be .* not NoneType"):
        merge_traces(None, tmp_path / "m.trace.json")  # type: ignore[arg-type]


def test_cross_rank_summary_wants_a_list_not_one_path(tmp_path):
    # A single path used to be read one character at a time.
    for single in (str(tmp_path / "rank0.pktrace"), tmp_path / "rank0.pktrace", None):
        with pytest.raises(TypeError, match="sources must be a list of traces, one per rank"):
            cross_rank_summary(single)  # type: ignore[arg-type]


def test_a_merged_timeline_is_not_an_input(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    merge_traces([a], tmp_path / "m.trace.json")
    with pytest.raises(MergeError, match="already a merged timeline"):
        merge_traces([a, str(tmp_path / "m.trace.json")], tmp_path / "again.trace.json")
    with pytest.raises(MergeError, match="is also an input"):
        merge_traces([a], a)


def test_an_output_named_pktrace_is_refused_in_any_case(tmp_path):
    # A merged timeline is Chrome JSON; a .pktrace name misleads loaders and
    # people. ".PKTRACE" went through: save() reads suffixes in any case.
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    for name in ("m.pktrace", "m.PKTRACE", "m.Pktrace.gz"):
        with pytest.raises(MergeError, match="named .pktrace, but a merged timeline is Chrome trace JSON"):
            merge_traces([a], tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == ["a.trace.json"]


def test_an_output_that_is_a_directory_is_an_error_naming_it(tmp_path, capsys):
    # It used to fail at the rename, naming a temporary file the user never chose.
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    with pytest.raises(MergeError, match=r"the output '.*' is a directory; name the merged file"):
        merge_traces([a], tmp_path)
    assert cli.main(["merge", str(a), "-o", str(tmp_path)]) == 2  # a usage error, refused before anything is read
    err = capsys.readouterr().err
    assert "is a directory" in err and ".tmp" not in err
    assert sorted(os.listdir(tmp_path)) == ["a.trace.json"]  # no temporary files left


def test_mismatched_inputs_are_errors_or_warnings(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    same_rank = write_chrome(tmp_path / "b.trace.json", 8, 0, 1_000_000)
    other_world = write_chrome(tmp_path / "c.trace.json", 9, 1, 1_000_000, {"world_size": 4})
    out = tmp_path / "m.trace.json"
    with pytest.raises(MergeError, match=r"'.*a.trace.json' and '.*b.trace.json' both claim rank 0 of world size 2"):
        merge_traces([a, same_rank], out)
    with pytest.raises(MergeError, match=r"different world sizes: '.*a.trace.json' \(world size 2\), '.*c.trace.json' \(world size 4\)"):
        merge_traces([a, other_world], out)
    with pytest.raises(MergeError, match="same recording window"):
        merge_traces({"x": a, "y": a}, out)
    assert not out.exists()
    with pytest.warns(ProfilerWarning, match="both claim rank 0"):
        report = merge_traces([a, same_rank], out, strict=False)
    assert [i.name for i in report.inputs] == ["rank0", "rank0-2"]
    assert load(out)["profkit"]["warnings"] == report.warnings


def test_names_must_be_unique_and_non_empty(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    b = write_chrome(tmp_path / "b.trace.json", 8, 1, 1_000_000)
    with pytest.raises(MergeError, match="'x' is given to more than one input"):
        merge_traces([("x", a), ("x", b)], tmp_path / "m.trace.json")
    with pytest.raises(MergeError, match="empty NAME"):
        merge_traces([f"={a}"], tmp_path / "m.trace.json")
    with pytest.raises(MergeError, match="no inputs"):
        merge_traces([], tmp_path / "m.trace.json")


def test_an_input_without_events_is_a_warning(tmp_path):
    full = saved(record_window(0, 2), tmp_path / "full.pktrace")
    empty = saved(record_window(1, 2, events=False), tmp_path / "empty.pktrace")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = merge_traces([full, empty], tmp_path / "m.trace.json")
    messages = [str(w.message) for w in caught if issubclass(w.category, ProfilerWarning)]
    assert any("empty.pktrace' has no events" in m for m in messages), messages
    assert report.inputs[1].event_count == 0
    assert "rank1: Process" in json.dumps(load(tmp_path / "m.trace.json"))


def run_cli(*args):
    done = subprocess.run([sys.executable, "-m", "profkit", *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_merging_onto_a_link_replaces_the_file_it_names_and_keeps_the_link(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    (tmp_path / "old.trace.json").write_text("old")
    link = tmp_path / "latest.trace.json"
    link.symlink_to("old.trace.json")
    merge_traces([a], link)
    assert link.is_symlink() and os.readlink(link) == "old.trace.json"
    assert process_names(load(tmp_path / "old.trace.json"))  # the merged timeline, through the link
    assert sorted(os.listdir(tmp_path)) == ["a.trace.json", "latest.trace.json", "old.trace.json"]


def test_cli_merge_to_standard_output_keeps_its_note_off_the_trace(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    for output in ("-", "/dev/stdout"):
        code, stdout, stderr = run_cli("merge", a, "-o", output)
        assert code == 0 and stderr.startswith("wrote /dev/stdout: 1 process (")
        assert process_names(json.loads(stdout))  # the whole of stdout is the trace
        assert sorted(os.listdir(tmp_path)) == ["a.trace.json"]  # no scratch or temporary left


def test_cli_merge(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    b = write_chrome(tmp_path / "b.trace.json", 8, 1, 1_000_000)
    out = tmp_path / "m.trace.json"
    code, stdout, stderr = run_cli("merge", f"trainer0={a}", f"pserver0={b}", "-o", str(out))
    assert (code, stderr) == (0, "")
    assert stdout.startswith(f"wrote {out}: 2 processes (trainer0, pserver0), 16 trace events")
    assert set(process_names(load(out)).values()) >= {"trainer0: Process 7 (CPU)", "pserver0: Process 8 (CPU)"}

    code, stdout, stderr = run_cli("merge", a, str(tmp_path / "nope.pktrace"), "-o", str(out))
    assert code == 1 and stdout == ""
    assert stderr.startswith("profkit: error: merge: cannot read '") and "nope.pktrace" in stderr
    assert stderr.count("\n") == 1

    code, stdout, stderr = run_cli("merge", a, a.replace("a.trace", "b.trace"), str(a), "-o", str(out))
    assert code == 1 and "same recording window" in stderr
    same = write_chrome(tmp_path / "s.trace.json", 9, 0, 1_000_000)
    code, stdout, stderr = run_cli("merge", a, same, "-o", str(out), "--allow-mismatch")
    assert code == 0 and stderr.startswith("profkit: warning: ") and "both claim rank 0" in stderr
    assert run_cli("merge", a)[0] == 2  # -o is required


def test_cli_summary_ranks(tmp_path, capsys):
    r0 = saved(record_window(0, 2), tmp_path / "r0.pktrace")
    r1 = saved(record_window(1, 2), tmp_path / "r1.pktrace")
    assert cli.main(["summary", "--ranks", r0, r1]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Cross-rank Summary (per step, time unit: ms)")
    lines = out.splitlines()
    assert any(line.startswith("rank0") and " 0/2 " in line for line in lines)
    assert any(line.startswith("rank1") and " 1/2 " in line for line in lines)
    assert "Slowest rank (*):" in out
    assert cli.main(["summary", "--ranks", f"a={r0}", f"b={r1}", "--json", "--time-unit", "us"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in data["ranks"]] == ["a", "b"]
    assert data["ranks"][0]["comm_bytes"] == 4096 and data["ranks"][0]["steps"] == 1
    assert cli.main(["summary", r0, r1]) == 2  # several files need --ranks
    assert "--ranks" in capsys.readouterr().err


def test_cli_summary_ranks_reads_gzipped_traces_and_refuses_what_it_cannot_tell_apart(tmp_path, capsys):
    # The only command that refused gzip-compressed traces ("no 'PKTR' file
    # identifier"), although the README says the command line reads them.
    r0 = saved(record_window(0, 2), tmp_path / "r0.pktrace")
    r1 = saved(record_window(1, 2), tmp_path / "r1.pktrace")
    with open(r0, "rb") as f, gzip.open(str(tmp_path / "r0.pktrace.gz"), "wb") as g:
        g.write(f.read())
    ProfilerResult(_C.load(r1.encode())).export_chrome_tracing(str(tmp_path / "r1.trace.json.gz"))
    assert cli.main(["summary", "--ranks", r0, r1, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    gzipped = [str(tmp_path / "r0.pktrace.gz"), str(tmp_path / "r1.trace.json.gz")]
    assert cli.main(["summary", "--ranks", *gzipped, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    keep = ("name", "rank", "steps", "step_ns", "communication_ns", "comm_bytes")
    assert [{k: r[k] for k in keep} for r in got["ranks"]] == [{k: r[k] for k in keep} for r in plain["ranks"]]
    # Two rows of one name: "slowest rank: x ... fastest (x)".
    assert cli.main(["summary", "--ranks", f"x={r0}", f"x={r1}"]) == 1
    assert "the name 'x' is given to more than one trace" in capsys.readouterr().err
    # A malformed NAME=FILE is a command-line error, named for the command.
    assert cli.main(["summary", "--ranks", "a=", r1]) == 2
    assert "summary --ranks: 'a=' has no FILE" in capsys.readouterr().err
    assert cli.main(["merge", "=" + r0, r1, "-o", str(tmp_path / "m.trace.json")]) == 2
    assert "merge: " in capsys.readouterr().err and not (tmp_path / "m.trace.json").exists()
    # A missing file is named once, with its errno kept.
    assert cli.main(["summary", "--ranks", r0, str(tmp_path / "nope.pktrace")]) == 1
    err = capsys.readouterr().err
    assert err.count("nope.pktrace") == 1 and "No such file or directory" in err, err
    with pytest.raises(FileNotFoundError) as caught:
        cross_rank_summary([str(tmp_path / "nope.pktrace")])
    assert caught.value.errno == errno.ENOENT


@pytest.mark.parametrize(
    "option", [["--views", "OperatorView"], ["--sorted-by", "CPUAvg"], ["--no-op-detail"], ["--thread-sep"],
               ["--row-limit", "3"]]
)
def test_cli_summary_ranks_refuses_the_tables_options(tmp_path, capsys, option):
    r0 = saved(record_window(0, 2), tmp_path / "r0.pktrace")
    r1 = saved(record_window(1, 2), tmp_path / "r1.pktrace")
    # The cross-rank view has no tables to apply them to: refused, not ignored.
    assert cli.main(["summary", "--ranks", r0, r1, *option]) == 2
    captured = capsys.readouterr()
    assert option[0] in captured.err and "--time-unit and --json" in captured.err and captured.out == ""


# ---- which file is what ----------------------------------------------------------


def pktrace_whose_size_prefix_is(path, prefix):
    """A real .pktrace whose first two bytes are `prefix` (little-endian size):
    its one event's name is grown until the file has the size that gives them."""
    wanted = int.from_bytes(prefix, "little") + 4  # + the prefix itself
    n = wanted - 1000
    for _ in range(50):
        _C.set_rank(0, 1)
        _C.set_state(2)
        with RecordEvent("x" * n, 7):
            pass
        _C.set_state(0)
        ProfilerResult(_C.collect()).save(str(path))
        size = os.path.getsize(path)
        if size == wanted:
            return str(path)
        n += wanted - size
    pytest.fail(f"could not make a .pktrace of {wanted} bytes (last {size})")


def test_a_pktrace_whose_size_prefix_reads_as_blank_and_brace_is_a_pktrace(tmp_path):
    # bytes.lstrip() takes \x0c as a blank: this file used to be taken for JSON.
    path = pktrace_whose_size_prefix_is(tmp_path / "ff.pktrace", b"\x0c{")
    with open(path, "rb") as f:
        assert f.read(2) == b"\x0c{"
    report = merge_traces([path], tmp_path / "m.trace.json")
    assert report.inputs[0].format == "pktrace"
    assert any(e["name"].startswith("xxx") for e in load(tmp_path / "m.trace.json")["traceEvents"])


@pytest.mark.parametrize(
    "head, pktrace, json_",
    [
        (b"\x0c{\x00\x00\x28\x00\x00\x00PKTR", True, False),  # size-prefixed: the identifier at 8..12
        (b"\x28\x00\x00\x00PKTR", True, False),  # no size prefix: at 4..8
        (b"\x0c{\x00\x00\x28\x00\x00\x00ABCD", False, False),  # \x0c is not JSON whitespace
        (b'\xef\xbb\xbf\r\n  \t{"traceEvents"', False, True),  # a byte order mark, blank lines, indentation
        (b"\n[", False, True),
    ],
)
def test_formats_are_told_by_the_identifier_then_json_whitespace(head, pktrace, json_):
    assert (looks_like_pktrace(head), looks_like_json(head)) == (pktrace, json_)


def test_a_pretty_printed_trace_with_a_byte_order_mark_is_merged(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    bom = tmp_path / "bom.trace.json"
    bom.write_bytes(b"\xef\xbb\xbf\n" + json.dumps(load(a), indent=2).encode())
    merge_traces([str(bom)], tmp_path / "one.trace.json")
    merge_traces([a], tmp_path / "two.trace.json")
    assert load(tmp_path / "one.trace.json")["traceEvents"] == load(tmp_path / "two.trace.json")["traceEvents"]


# ---- damaged inputs ----------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, line, problem",
    [
        ('"dur":1.000,', '"dur":1.2.3,', 6, r"is not valid JSON \(Expecting ',' delimiter"),
        ('"args":{"id":5,', '"args":{"id":5,,', 6, "is not valid JSON"),  # past "args": copied, not read
        ('"args":{"id":5,', '"args":{"id":NaN,', 6, r"is not valid JSON \(NaN is not a JSON number"),
        ('"args":{"correlation id":1}}', '"args":{"correlation id":1}', 7, "is not valid JSON"),  # cut short
        ('"name":"k"', '"name":"k\x01"', 7, "is not valid JSON"),  # a raw control character in a string
        ('"ts":1.000,"pid"', '"ts":1e3,"pid"', 8, r"cannot be read"),  # a number the rewriter cannot shift
    ],
)
def test_a_damaged_chrome_line_is_an_error_naming_the_file_and_line(tmp_path, old, new, line, problem):
    good = write_chrome(tmp_path / "good.trace.json", 7, 0, 1_000_000)
    text = (tmp_path / "good.trace.json").read_text()
    lines = text.split("\n")
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    (tmp_path / "bad.trace.json").write_text("\n".join(lines))
    # Later in time than `good`: its events are shifted, so every line is rewritten.
    bad = edit_metadata(tmp_path / "bad.trace.json", tmp_path / "bad.trace.json", rank=1, pid=8,
                        base_wall_ns=1_000_500)
    with pytest.raises(MergeError, match=rf"'.*bad.trace.json' line {line} {problem}.*damaged"):
        merge_traces([good, bad], tmp_path / "m.trace.json")
    assert sorted(os.listdir(tmp_path)) == ["bad.trace.json", "good.trace.json"]  # no output, no temporaries


def test_the_line_check_without_possessive_quantifiers_judges_every_line_alike(tmp_path):
    # Python 3.9 and 3.10 have no possessive quantifiers or atomic groups:
    # there the merge checks lines with plain ones (without_possessives).
    # Both forms must accept and refuse the same lines, so that the merge
    # behaves alike on every Python (this test compares them on 3.11+).
    _C.set_state(2)
    _C.step_begin(0)
    with RecordEvent('quote " backslash \\ tab \t é', 0):
        _C.event_arg_int(_C.intern("bytes"), -4096)
        _C.event_arg_str(_C.intern("shapes"), "[[2, 3], []]")
    _C.step_end(0)
    _C.set_state(0)
    texts = [exported(ProfilerResult(_C.collect()), tmp_path / "a.trace.json"),
             write_chrome(tmp_path / "b.trace.json", 7, 0, 1_000_000)]
    good = [line.rstrip(",") for path in texts for line in pathlib.Path(path).read_text(encoding="utf-8").split("\n")
            if line.startswith('{"ph"')]
    damaged = [line.replace(old, new, 1) for line in good
               for old, new in [(":", "::"), ('"', ""), ("}", ""), (",", ",,"), ("0", "0.0.0"), (".", "e"),
                                ('"name":"', '"name":"\x01')]
               if old in line]
    plain_line = re.compile(without_possessives(_LINE))
    assert good and len(damaged) > len(good)
    assert all(_ONE_LINE.fullmatch(line) for line in good)
    for line in good + damaged:
        assert bool(plain_line.fullmatch(line)) == bool(_ONE_LINE.fullmatch(line)), line
    plain_block = re.compile(without_possessives(_LINES.pattern))
    for block in [",\n".join(good), ",\n".join(good + damaged[:1]), ",\n".join(damaged[-1:] + good)]:
        assert bool(plain_block.fullmatch(block)) == bool(_LINES.fullmatch(block))


@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_chrome_inputs_read_in_any_block_size_merge_alike(tmp_path, monkeypatch, block):
    # Chrome inputs are read in blocks of _LINE_BLOCK bytes cut at line ends.
    # Blocks smaller than a line (one split over many reads), and lines
    # split anywhere, must give the same merged events and the same line
    # number for a damaged line.
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    b = write_chrome(tmp_path / "b.trace.json", 8, 1, 1_000_500)  # later: every line of b is rewritten
    merge_traces([a, b], tmp_path / "whole.trace.json")
    monkeypatch.setattr(_merge_writing, "_LINE_BLOCK", block)
    merge_traces([a, b], tmp_path / "blocks.trace.json")
    assert load(tmp_path / "blocks.trace.json")["traceEvents"] == load(tmp_path / "whole.trace.json")["traceEvents"]
    text = pathlib.Path(b).read_text(encoding="utf-8")
    pathlib.Path(b).write_text(text.replace('"name":"k"', '"name":"k\x01"', 1), encoding="utf-8")
    with pytest.raises(MergeError, match=r"'.*b.trace.json' line 7 is not valid JSON"):
        merge_traces([a, b], tmp_path / "bad.trace.json")


def test_a_chrome_line_that_is_not_utf8_is_an_error_naming_the_line(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    data = (tmp_path / "a.trace.json").read_bytes()
    (tmp_path / "a.trace.json").write_bytes(data.replace(b'"name":"k"', b'"name":"k\xff"', 1))
    with pytest.raises(MergeError, match=r"'.*a.trace.json' line 7 is not valid UTF-8.*damaged"):
        merge_traces([a], tmp_path / "m.trace.json")
    assert os.listdir(tmp_path) == ["a.trace.json"]


def test_valid_json_in_a_layout_profkit_does_not_write_is_copied(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    text = (tmp_path / "a.trace.json").read_text()
    unusual = '"args":{"id":5, "nested":{"list":[1,{"x":null}],"s":"\\u00e9 \\"q\\""},"neg":-1.5e-3,'
    (tmp_path / "a.trace.json").write_text(text.replace('"args":{"id":5,', unusual, 1))
    merge_traces([a], tmp_path / "m.trace.json")
    launch = next(e for e in load(tmp_path / "m.trace.json")["traceEvents"] if e["name"] == "cudaLaunchKernel")
    assert launch["args"] == {"id": 5, "nested": {"list": [1, {"x": None}], "s": 'é "q"'}, "neg": -1.5e-3, "pid": 9,
                              "ts": 3}


def test_a_ts_just_before_args_is_shifted_whole(tmp_path):
    # Valid JSON in another key order: "ts" last before "args" used to lose its last digit.
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    text = (tmp_path / "a.trace.json").read_text()
    ours = '"ts":1.000,"dur":1.000,"pid":7,"tid":1000000007,"args"'
    assert ours in text
    (tmp_path / "b.trace.json").write_text(text.replace(ours, '"dur":1.000,"pid":7,"tid":1000000007,"ts":1.234,"args"'))
    b = edit_metadata(tmp_path / "b.trace.json", tmp_path / "b.trace.json", rank=1, pid=8, base_wall_ns=1_000_500)
    merge_traces([a, b], tmp_path / "m.trace.json")
    launches = [e for e in load(tmp_path / "m.trace.json")["traceEvents"] if e["name"] == "cudaLaunchKernel"]
    assert [e["ts"] for e in launches] == [1.0, 1.734]


def test_a_chrome_trace_in_another_layout_is_not_kept_after_opening(tmp_path):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    doc = load(a)
    kernel = next(e for e in doc["traceEvents"] if e["name"] == "k")
    doc["traceEvents"].extend(dict(kernel, ts=3.0 + i) for i in range(20000))
    pretty = tmp_path / "pretty.trace.json"
    pretty.write_text(json.dumps(doc, indent=1))
    tracemalloc.start()
    try:
        sources = [Source(None, str(pretty)) for _ in range(3)]
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Each document is parsed to read its facts and dropped: only the facts stay.
    assert kept < peak / 10, (kept, peak)
    assert all(s.layout is None and s.pids == [7, 10000007] for s in sources)
    report = merge_traces([str(pretty)], tmp_path / "m.trace.json")
    assert report.inputs[0].lines == len(doc["traceEvents"])
    assert load(tmp_path / "m.trace.json")["traceEvents"][8:] == doc["traceEvents"][8:]  # events past the metadata


# ---- names that are not UTF-8 ------------------------------------------------------


def not_utf8_path(directory, result):
    """`result` saved under a file name that is not UTF-8 ('caf\\xe9'), as Python
    sees such a name: with surrogate escapes."""
    plain = saved(result, directory / "plain.pktrace")
    path = os.fsdecode(os.fsencode(str(directory)) + b"/caf\xe9.pktrace")
    try:
        os.rename(plain, path)
    except OSError as e:  # pragma: no cover - a file system that wants UTF-8 names
        pytest.skip(f"this file system refuses a name that is not UTF-8: {e}")
    return path


def test_a_file_name_that_is_not_utf8_is_read(tmp_path):
    path = not_utf8_path(tmp_path, record_window(-1, -1))
    report = merge_traces([path], tmp_path / "m.trace.json")
    assert report.inputs[0].name == "caf\ufffd" and report.inputs[0].path == path
    doc = load(tmp_path / "m.trace.json")
    assert doc["profkit"]["merged_from"][0]["path"].endswith("caf\ufffd.pktrace")
    assert "caf\ufffd: Process" in json.dumps(doc, ensure_ascii=False)
    summary = cross_rank_summary([path])
    assert summary.ranks[0].name == "caf\ufffd" and summary.ranks[0].steps == 1
    summary.text().encode("utf-8")  # printable


# ---- command line ------------------------------------------------------------------


def test_cli_merge_refuses_a_pktrace_output(tmp_path, capsys):
    a = write_chrome(tmp_path / "a.trace.json", 7, 0, 1_000_000)
    assert cli.main(["merge", a, "-o", str(tmp_path / "m.pktrace")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("profkit: error: merge writes Chrome trace JSON") and ".trace.json" in err
    with pytest.raises(MergeError, match=r"named \.pktrace.*name it \.trace\.json"):
        merge_traces([a], tmp_path / "m.pktrace")
    assert not (tmp_path / "m.pktrace").exists()


def test_cli_summary_ranks_keeps_the_names_given(tmp_path, capsys):
    r0 = saved(record_window(0, 2), tmp_path / "r0.pktrace")
    r1 = saved(record_window(1, 2), tmp_path / "r1.pktrace")
    assert cli.main(["summary", "--ranks", f"x={r0}", r1, "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["ranks"]] == ["x", "rank1"]
    assert cli.main(["summary", "--ranks", r0, r0]) == 0  # one rank twice: a one-line warning
    err = capsys.readouterr().err
    assert err.startswith("profkit: warning: ") and "both claim rank 0 of world size 2" in err and err.count("\n") == 1


def test_gpu_process_ids_of_every_device_fit_32_bits_and_stay_apart():
    # merge finds a .pktrace's GPU processes by the Chrome export's rule
    # (chrome_trace.h): past device 428 the plain stride passed 2^32.
    from profkit._merge_sources import device_pid

    host = 2**22  # the largest Linux pid
    pids = [device_pid(host, d) for d in range(2**16)]
    assert max(pids) < 2**32 and len(set(pids)) == len(pids) and min(pids) > host
    assert device_pid(7, 0) == 10000007 and device_pid(7, 428) == 7 + 429 * 10_000_000  # the documented stride
