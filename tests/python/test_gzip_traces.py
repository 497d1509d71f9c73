"""Traces compressed with gzip: written when the name ends in .gz, loaded by their content.

torch.profiler's tensorboard_trace_handler(use_gzip=True) writes
.pt.trace.json.gz and ui.perfetto.dev opens it as it is; profkit writes and
reads both of its formats that way (python/profkit/_gzip_files.py).
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings

import numpy as np
import pytest

from profkit import (
    Profiler,
    ProfilerWarning,
    RecordEvent,
    TracerEventType,
    _gzip_files,
    cli,
    export_chrome_tracing,
    load_profiler_result,
)
from profkit.merge import MergeError, merge_traces
from profkit.result import EVENT_DTYPE


def record():
    with Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(3):
            with RecordEvent("forward", TracerEventType.Forward):
                with RecordEvent("inner"):
                    pass
            prof.step()
    return prof.profiler_result


def assert_same_events(a, b):
    assert len(a) == len(b) > 0
    for field in EVENT_DTYPE.names:
        assert np.array_equal(a.events[field], b.events[field]), field


def only_files(directory):
    """The directory's entries: a write must leave no temporary behind."""
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("name", ["run.pktrace.gz", "run.trace.json.gz"])
def test_a_name_ending_in_gz_writes_the_format_before_it_compressed(tmp_path, name):
    live = record()
    path = tmp_path / name
    live.save(str(path))
    assert only_files(tmp_path) == [name]
    data = gzip.decompress(path.read_bytes())
    if name.endswith(".trace.json.gz"):
        doc = json.loads(data)
        assert sum(1 for e in doc["traceEvents"] if e.get("name") == "forward") == 3
    else:
        assert b"PKTR" in data[:16]  # the FlatBuffers file identifier
    loaded = load_profiler_result(path)
    assert loaded.path == str(path)
    assert_same_events(loaded, live)


def test_export_chrome_tracing_to_a_gz_name_compresses_and_keeps_its_options(tmp_path):
    live = record()
    live.export_chrome_tracing(tmp_path / "t.trace.json.gz", label_durations=True)
    doc = json.loads(gzip.decompress((tmp_path / "t.trace.json.gz").read_bytes()))
    names = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"]
    assert any(n.startswith("forward[") for n in names), names  # the duration appended


def test_a_gzipped_trace_loads_whatever_its_name(tmp_path):
    live = record()
    live.save(str(tmp_path / "plain.pktrace"))
    live.export_chrome_tracing(str(tmp_path / "plain.trace.json"))
    for plain in ("plain.pktrace", "plain.trace.json"):
        packed = tmp_path / (plain + ".shared")  # gzipped to be shared, not named .gz
        packed.write_bytes(gzip.compress((tmp_path / plain).read_bytes()))
        assert_same_events(load_profiler_result(packed), live)
        assert_same_events(load_profiler_result(os.fsencode(packed)), live)


def test_a_damaged_gzip_trace_is_a_clear_error(tmp_path):
    live = record()
    live.save(str(tmp_path / "t.pktrace.gz"))
    data = (tmp_path / "t.pktrace.gz").read_bytes()
    truncated = tmp_path / "truncated.pktrace.gz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cannot load '.*truncated\.pktrace\.gz': its gzip compression is damaged"):
        load_profiler_result(truncated)
    not_a_trace = tmp_path / "notes.txt.gz"
    not_a_trace.write_bytes(gzip.compress(b"just some text, not a trace"))
    with pytest.raises(ValueError) as caught:
        load_profiler_result(not_a_trace)
    # The engine's message names the file given, not the decompressed copy.
    assert "notes.txt.gz (decompressed)" in str(caught.value) and "gunzipped" not in str(caught.value)


def test_a_trace_gzipped_twice_is_named_so(tmp_path):
    live = record()
    live.save(str(tmp_path / "t.pktrace"))
    twice = tmp_path / "twice.pktrace.gz"
    twice.write_bytes(gzip.compress(gzip.compress((tmp_path / "t.pktrace").read_bytes())))
    with pytest.raises(ValueError, match=r"'.*twice\.pktrace\.gz': it is gzip-compressed twice; decompress it once"):
        load_profiler_result(twice)


def test_a_failed_compressed_write_leaves_nothing_behind(tmp_path):
    live = record()
    with pytest.raises(FileNotFoundError, match=r"cannot write '.*missing/t\.trace\.json\.gz'"):
        live.save(str(tmp_path / "missing" / "t.trace.json.gz"))
    (tmp_path / "t.pktrace.gz").mkdir()  # the rename into place fails: a directory holds the name
    with pytest.raises(IsADirectoryError, match=r"cannot write '.*t\.pktrace\.gz'"):
        live.save(str(tmp_path / "t.pktrace.gz"))
    assert only_files(tmp_path) == ["t.pktrace.gz"]
    assert only_files(tmp_path / "t.pktrace.gz") == []


def test_the_export_callback_writes_gzipped_chrome_json_when_asked(tmp_path):
    exporter = export_chrome_tracing(str(tmp_path), worker_name="w", use_gzip=True)
    assert repr(exporter) == f"export_chrome_tracing({str(tmp_path)!r}, worker_name='w', use_gzip=True)"
    with Profiler(on_trace_ready=exporter) as prof:
        with RecordEvent("forward", TracerEventType.Forward):
            pass
        prof.step()
    (path,) = exporter.paths
    assert path.startswith(str(tmp_path / "w_time_")) and path.endswith(".trace.json.gz")
    assert only_files(tmp_path) == [os.path.basename(path)]
    with open(path, "rb") as f:
        doc = json.loads(gzip.decompress(f.read()))
    assert any(e.get("name") == "forward" for e in doc["traceEvents"])
    assert [e["name"] for e in load_profiler_result(path).events if e["name"] == "forward"] == ["forward"]
    with pytest.raises(TypeError, match="use_gzip must be True or False"):
        export_chrome_tracing(str(tmp_path), use_gzip="yes")


def test_the_command_line_reads_and_writes_gzipped_traces(tmp_path, capsys):
    live = record()
    source = tmp_path / "run.trace.json.gz"
    live.save(str(source))
    assert cli.main(["summary", str(source)]) == 0
    assert "Steps: 3 (all)" in capsys.readouterr().out  # the loaded trace's three steps
    assert cli.main(["export", str(source)]) == 0  # the default output: plain, the other format
    assert_same_events(load_profiler_result(tmp_path / "run.pktrace"), live)
    assert cli.main(["export", str(source), "-o", str(tmp_path / "again.pktrace.gz")]) == 0
    assert (tmp_path / "again.pktrace.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert_same_events(load_profiler_result(tmp_path / "again.pktrace.gz"), live)


def test_merge_takes_gzipped_inputs_and_writes_a_gzipped_timeline(tmp_path):
    first, second = record(), record()
    plain, packed = tmp_path / "a.trace.json", tmp_path / "b.pktrace.gz"
    first.save(str(plain))
    second.save(str(packed))
    reference = tmp_path / "reference.trace.json"
    with warnings.catch_warnings():
        # The two windows are one process's, one after the other: merge says they do not overlap.
        warnings.simplefilter("ignore", ProfilerWarning)
        merge_traces([str(plain), str(packed)], reference)
        report = merge_traces([str(plain), str(packed)], tmp_path / "m.trace.json.gz")
    assert [m.path for m in report.inputs] == [str(plain), str(packed)]
    merged = json.loads(gzip.decompress((tmp_path / "m.trace.json.gz").read_bytes()))
    assert merged == json.loads(reference.read_text())
    forwards = [e for e in merged["traceEvents"] if e.get("name") == "forward"]
    assert len(forwards) == 6 and len({e["pid"] for e in forwards}) == 2  # three from each process
    # Nothing left behind: no decompressed copy, no temporary beside the output.
    assert only_files(tmp_path) == ["a.trace.json", "b.pktrace.gz", "m.trace.json.gz", "reference.trace.json"]
    assert not [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("profkit-merge-")]


def test_merge_names_a_damaged_gzip_input(tmp_path):
    live = record()
    live.save(str(tmp_path / "a.trace.json"))
    damaged = tmp_path / "b.trace.json.gz"
    damaged.write_bytes(gzip.compress(b'{"traceEvents": []}')[:-12])  # the end cut off
    with pytest.raises(MergeError, match=r"cannot decompress '.*b\.trace\.json\.gz' \(gzip-compressed\)"):
        merge_traces([str(tmp_path / "a.trace.json"), str(damaged)], tmp_path / "m.trace.json")
    assert not (tmp_path / "m.trace.json").exists()
    # A gzip that decompresses to no trace: the input's error, and its decompressed copy removed.
    not_a_trace = tmp_path / "c.pktrace.gz"
    not_a_trace.write_bytes(gzip.compress(b"not a trace at all, just some bytes that are long enough"))
    with pytest.raises(MergeError, match=r"cannot read '.*c\.pktrace\.gz' as a profkit trace"):
        merge_traces([str(tmp_path / "a.trace.json"), str(not_a_trace)], tmp_path / "m.trace.json")
    assert not [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("profkit-merge-")]
    with pytest.raises(MergeError, match=r"named \.pktrace"):
        merge_traces([str(tmp_path / "a.trace.json")], tmp_path / "m.pktrace.gz")


def load_in_child(path, copy, temporary_directory):
    """load_profiler_result(path).save(copy) in a child process (a wait for
    a second writer of a FIFO fails the test instead of hanging it) whose
    temporary directory is `temporary_directory`."""
    code = "import sys, profkit; profkit.load_profiler_result(sys.argv[1]).save(sys.argv[2])"
    env = dict(os.environ, TMPDIR=str(temporary_directory))
    return subprocess.run(
        [sys.executable, "-c", code, str(path), str(copy)], capture_output=True, text=True, timeout=60, env=env
    )


@pytest.mark.parametrize("name", ["t.pktrace", "t.trace.json", "t.pktrace.gz", "t.trace.json.gz"])
def test_a_trace_read_from_a_fifo_loads_compressed_or_not(tmp_path, name):
    # `profkit info <(cat t.pktrace.gz)`: a gzipped trace through a pipe was
    # "not a profkit trace (no 'PKTR' file identifier)".
    live = record()
    source = tmp_path / name
    live.save(str(source))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as out:
            out.write(source.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    try:
        done = load_in_child(fifo, tmp_path / "copy.pktrace", temporary)
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # a writer still waiting for a reader goes on
        writer.join(timeout=30)
    assert done.returncode == 0, done.stderr
    assert_same_events(load_profiler_result(tmp_path / "copy.pktrace"), live)
    assert only_files(temporary) == []  # the copy read from the FIFO is gone


@pytest.mark.parametrize("command", ["info", "summary"])
def test_the_command_line_reads_a_gzipped_trace_from_its_standard_input(tmp_path, command):
    # `gzip -c t.trace.json | profkit summary /dev/stdin`
    live = record()
    for name in ("t.pktrace.gz", "t.trace.json.gz"):
        live.save(str(tmp_path / name))
        done = subprocess.run(
            [sys.executable, "-m", "profkit", command, "/dev/stdin"],
            input=(tmp_path / name).read_bytes(),
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr.decode()
        steps = live.info["step_count"]
        assert (f"({steps} steps)" if command == "info" else "ProfileStep  ").encode() in done.stdout
        assert b"forward" in done.stdout.lower()


def test_damaged_or_foreign_data_from_a_pipe_names_the_pipe(tmp_path):
    live = record()
    live.save(str(tmp_path / "t.pktrace.gz"))
    cases = [
        ((tmp_path / "t.pktrace.gz").read_bytes()[:200], "its gzip compression is damaged"),
        (gzip.compress(b"just some text, not a trace"), "not a profkit trace (no 'PKTR' file identifier)"),
        (b"just some text, not a trace", "not a profkit trace (no 'PKTR' file identifier)"),
        (b"", "the file is empty (0 bytes)"),
    ]
    for data, words in cases:
        done = subprocess.run(
            [sys.executable, "-m", "profkit", "info", "/dev/stdin"], input=data, capture_output=True, timeout=60
        )
        assert done.returncode == 1
        message = done.stderr.decode()
        assert "cannot load '/dev/stdin" in message and words in message, message
        assert ".copy" not in message and "gunzipped" not in message, message


class KeptTemporaries:
    """The decompressed copies _gzip_files makes, kept (not removed) to be measured."""

    def __init__(self, monkeypatch):
        self.paths = []
        monkeypatch.setattr(_gzip_files, "remove_quietly", self.paths.append)

    def largest(self):
        return max(os.path.getsize(p) for p in self.paths)

    def remove(self):
        for p in self.paths:
            os.remove(p)


def test_a_gz_of_something_else_is_refused_from_its_first_bytes(tmp_path, monkeypatch):
    # 64 MiB of zeros in 64 KiB of gzip was decompressed in full into the
    # temporary directory before the engine said it is not a trace.
    packed = tmp_path / "zeros.pktrace.gz"
    with gzip.open(packed, "wb", compresslevel=1) as f:
        for _ in range(64):
            f.write(bytes(1 << 20))
    kept = KeptTemporaries(monkeypatch)
    try:
        with pytest.raises(ValueError, match=r"zeros\.pktrace\.gz \(decompressed\)': it is not a profkit trace"):
            load_profiler_result(packed)
        assert kept.largest() <= 4096
    finally:
        kept.remove()


def test_a_gz_that_goes_on_past_its_trace_is_refused_where_the_trace_ends(tmp_path, monkeypatch):
    live = record()
    live.save(str(tmp_path / "t.pktrace"))
    trace = (tmp_path / "t.pktrace").read_bytes()
    padded = tmp_path / "padded.pktrace.gz"
    with gzip.open(padded, "wb", compresslevel=1) as f:
        f.write(trace)
        for _ in range(64):
            f.write(bytes(1 << 20))
    huge = tmp_path / "huge.pktrace.gz"  # a header that says 4 GiB
    huge.write_bytes(gzip.compress(b"\xff\xff\xff\xff" + trace[4:]))
    kept = KeptTemporaries(monkeypatch)
    try:
        past_the_end = rf"padded\.pktrace\.gz': it goes on past the end of the {len(trace)}-byte"
        with pytest.raises(ValueError, match=past_the_end):
            load_profiler_result(padded)
        assert kept.largest() <= len(trace)
        with pytest.raises(ValueError, match=r"huge\.pktrace\.gz': its \.pktrace header gives a size of 4294967299"):
            load_profiler_result(huge)
    finally:
        kept.remove()


@pytest.mark.parametrize(
    "name, compressed, fmt", [("c.Json.GZ", True, "json"), ("c.PKTRACE.Gz", True, "pb"), ("c.JSON", False, "json")]
)
def test_suffixes_are_matched_in_any_case(tmp_path, name, compressed, fmt):
    # c.Json.GZ was written as an uncompressed .pktrace.
    live = record()
    path = tmp_path / name
    live.save(str(path))
    data = path.read_bytes()
    assert (data[:2] == b"\x1f\x8b") == compressed
    plain = gzip.decompress(data) if compressed else data
    assert plain.lstrip().startswith(b"{") if fmt == "json" else plain[8:12] == b"PKTR"
    assert_same_events(load_profiler_result(path), live)


def test_the_command_lines_outputs_go_by_their_suffix_in_any_case(tmp_path):
    live = record()
    source = tmp_path / "run.pktrace"
    live.save(str(source))
    assert cli.main(["export", str(source), "-o", str(tmp_path / "a.PKTRACE")]) == 0
    assert (tmp_path / "a.PKTRACE").read_bytes()[8:12] == b"PKTR"
    assert cli.main(["export", str(source), "-o", str(tmp_path / "b.Trace.Json.GZ")]) == 0
    assert gzip.decompress((tmp_path / "b.Trace.Json.GZ").read_bytes()).startswith(b"{")
    assert cli.main(["export", str(tmp_path / "b.Trace.Json.GZ")]) == 0  # the default output: the other format
    assert_same_events(load_profiler_result(tmp_path / "b.pktrace"), live)
    assert cli.main(["merge", str(source), "-o", str(tmp_path / "m.PKTRACE")]) == 2
