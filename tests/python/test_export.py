"""Trace files and on_trace_ready callbacks (SPEC §4)."""

import datetime
import errno
import json
import os
import pathlib
import re
import socket
import time

import pytest

import profkit
from profkit import Profiler, _C, export_chrome_tracing, export_protobuf, load_profiler_result, make_scheduler
from profkit import export_callbacks
from profkit.export_callbacks import _reserve_path, default_worker_name, trace_file_name

STAMP = r"_time_\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}_\d{6}"


@pytest.fixture
def no_rank(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    yield
    _C.set_rank(-1, -1)


def test_default_worker_name(no_rank, monkeypatch):
    base = f"host_{socket.gethostname()}pid_{os.getpid()}"
    assert default_worker_name() == base
    assert default_worker_name(rank=3) == base + "rank_3"
    monkeypatch.setenv("RANK", "5")
    assert default_worker_name() == base + "rank_5"
    assert default_worker_name(rank=2) == base + "rank_2"  # the engine's rank wins
    monkeypatch.setenv("RANK", "not-a-number")
    assert default_worker_name() == base


def test_trace_file_name():
    when = datetime.datetime(2024, 3, 5, 7, 8, 9, 123456)
    assert trace_file_name("w", ".trace.json", when) == "w_time_2024_03_05_07_08_09_123456.trace.json"


def test_export_chrome_tracing_writes_one_file_per_window(tmp_path, no_rank):
    out = tmp_path / "a" / "b"
    exporter = export_chrome_tracing(str(out))
    assert out.is_dir()  # created up front, as paddle.profiler does
    with Profiler(scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=2), on_trace_ready=exporter) as p:
        for _ in range(5):
            p.step()
    names = sorted(os.listdir(out))
    assert len(names) == 2 and len(exporter.paths) == 2  # no temporary files left behind
    pattern = re.escape(default_worker_name()) + STAMP + r"\.trace\.json"
    assert all(re.fullmatch(pattern, n) for n in names), names
    for path in exporter.paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        assert any(e.get("cat") == "ProfileStep" for e in doc["traceEvents"])


def test_export_protobuf_files_load_back(tmp_path, no_rank):
    exporter = export_protobuf(str(tmp_path), worker_name="trainer")
    with Profiler(scheduler=(1, 3), on_trace_ready=exporter) as p:
        for _ in range(4):
            p.step()
    (path,) = exporter.paths
    assert re.fullmatch(r"trainer" + STAMP + r"\.pktrace", os.path.basename(path))
    assert load_profiler_result(path).steps == [1, 2]


def test_both_files_of_a_window_share_their_stem_the_time_it_began(tmp_path, no_rank):
    chrome, binary = export_chrome_tracing(str(tmp_path)), export_protobuf(str(tmp_path))

    def slow_export(prof):
        chrome(prof)
        time.sleep(0.002)  # a stamp taken at export time would differ by now
        binary(prof)

    with Profiler(scheduler=(1, 3), on_trace_ready=slow_export) as p:
        for _ in range(4):
            p.step()
    (json_path,), (pktrace_path,) = chrome.paths, binary.paths
    stem = os.path.basename(json_path)[: -len(".trace.json")]
    assert os.path.basename(pktrace_path) == stem + ".pktrace"
    info = p.profiler_result.info
    began = datetime.datetime.fromtimestamp((info["start_ns"] + info["clock_offset_ns"]) / 1e9)
    stamped = datetime.datetime.strptime(stem.split("_time_")[1], "%Y_%m_%d_%H_%M_%S_%f")
    assert abs((stamped - began).total_seconds()) < 1e-5


def test_rank_from_the_engine_goes_into_the_file_name(tmp_path, no_rank):
    _C.set_rank(1, 4)
    exporter = export_chrome_tracing(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as p:
        p.step()
    assert os.path.basename(exporter.paths[0]).startswith(default_worker_name(rank=1) + "_time_")


def test_directory_removed_after_creation_is_created_again(tmp_path):
    out = tmp_path / "gone"
    exporter = export_chrome_tracing(str(out))
    out.rmdir()
    with Profiler(on_trace_ready=exporter) as p:
        p.step()
    assert len(os.listdir(out)) == 1


def test_unusable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError, match="cannot create the directory"):
        export_chrome_tracing(str(blocker / "sub"))


def test_same_microsecond_gets_a_distinct_name(tmp_path):
    (tmp_path / "w_time_1.trace.json").write_text("{}")
    (tmp_path / "w_time_1_1.trace.json").write_text("{}")
    path = _reserve_path(str(tmp_path), "w_time_1.trace.json", ".trace.json")
    assert path == str(tmp_path / "w_time_1_2.trace.json")
    assert os.path.getsize(path) == 0  # claimed: the next one gets _3
    assert _reserve_path(str(tmp_path), "w_time_1.trace.json", ".trace.json") == str(tmp_path / "w_time_1_3.trace.json")
    assert (tmp_path / "w_time_1.trace.json").read_text() == "{}"  # the files there are left alone


def test_two_profilers_exporting_windows_of_one_microsecond_write_two_files(tmp_path, monkeypatch):
    when = datetime.datetime(2024, 3, 5, 7, 8, 9, 123456)
    monkeypatch.setattr(export_callbacks, "_window_start_time", lambda result: when)
    first, second = export_chrome_tracing(str(tmp_path), "w"), export_chrome_tracing(str(tmp_path), "w")
    for exporter in (first, second):
        with Profiler(on_trace_ready=exporter) as p:
            with profkit.RecordEvent("work"):
                pass
            p.step()
    assert sorted(os.listdir(tmp_path)) == [
        "w_time_2024_03_05_07_08_09_123456.trace.json",
        "w_time_2024_03_05_07_08_09_123456_1.trace.json",
    ]
    assert first.paths != second.paths


class Window:
    """A Profiler as an exporter sees it: a window that began at a fixed time, exported by `write(path)`."""

    def __init__(self, write):
        info = {"rank": -1, "start_ns": 1_709_622_489_123_456_000, "clock_offset_ns": 0}
        self.profiler_result = type("Result", (), {"info": info})()
        self.write = write

    def export(self, path, format):
        self.write(path)


def write_as_the_engine_does(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)  # a rename replaces whatever is there


def test_an_export_of_the_same_microsecond_while_another_writes_gets_its_own_name(tmp_path):
    first, second = export_protobuf(str(tmp_path), "w"), export_protobuf(str(tmp_path), "w")

    def write_first(path):
        second(Window(lambda p: write_as_the_engine_does(p, "second")))  # another thread's Profiler, meanwhile
        write_as_the_engine_does(path, "first")

    first(Window(write_first))
    assert first.paths[0] != second.paths[0]
    assert [pathlib.Path(p).read_text() for p in first.paths + second.paths] == ["first", "second"]
    # The one whole first has the name; the other the next of the series.
    assert first.paths[0] == second.paths[0][: -len(".pktrace")] + "_1.pktrace"
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in first.paths + second.paths)


def test_no_file_is_under_a_trace_name_until_it_is_whole(tmp_path):
    # A crash (kill -9) in the middle of a long export left an empty file
    # under the final name, which load_profiler_result and
    # `profkit merge dir/*.trace.json` then refused.
    exporter = export_chrome_tracing(str(tmp_path), "w")
    seen_while_writing = []

    def write(path):
        write_as_the_engine_does(path, "{}")
        seen_while_writing.extend(n for n in os.listdir(tmp_path) if not n.startswith("."))

    exporter(Window(write))
    assert seen_while_writing == []
    assert os.listdir(tmp_path) == [os.path.basename(exporter.paths[0])]
    assert pathlib.Path(exporter.paths[0]).read_text() == "{}"


def test_a_write_interrupted_midway_leaves_nothing_behind(tmp_path):
    exporter = export_chrome_tracing(str(tmp_path), "w", use_gzip=True)

    def write_half(path):
        pathlib.Path(path).write_text("{\"traceEvents\": [")  # as far as a crash lets it get
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        exporter(Window(write_half))
    assert os.listdir(tmp_path) == [] and exporter.paths == []


def test_without_hard_links_the_trace_is_renamed_into_a_claimed_name(tmp_path, monkeypatch):
    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    (tmp_path / "w_time_2024_03_05_07_08_09_123456.pktrace").write_text("taken")
    exporter = export_protobuf(str(tmp_path), "w")
    exporter(Window(lambda p: write_as_the_engine_does(p, "mine")))
    assert os.path.basename(exporter.paths[0]) == "w_time_2024_03_05_07_08_09_123456_1.pktrace"
    assert sorted(os.listdir(tmp_path)) == ["w_time_2024_03_05_07_08_09_123456.pktrace", os.path.basename(exporter.paths[0])]
    assert pathlib.Path(exporter.paths[0]).read_text() == "mine"


def test_a_failed_export_leaves_no_file_and_frees_its_name(tmp_path):
    exporter = export_protobuf(str(tmp_path), "w")

    def fail(path):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        exporter(Window(fail))
    assert os.listdir(tmp_path) == [] and exporter.paths == []
    exporter(Window(lambda p: write_as_the_engine_does(p, "ok")))
    assert [os.path.basename(p) for p in exporter.paths] == [os.listdir(tmp_path)[0]]
    assert not exporter.paths[0].endswith("_1.pktrace")


def test_on_trace_ready_is_called_once_per_window():
    calls = []
    with Profiler(scheduler=make_scheduler(closed=1, ready=1, record=2, repeat=3), on_trace_ready=calls.append) as p:
        for _ in range(15):
            p.step()
    assert len(calls) == 3 and all(c is p for c in calls)


def test_profiler_export_formats(tmp_path):
    with Profiler(on_trace_ready=lambda prof: None) as p:
        with profkit.RecordEvent("work"):
            pass
        p.step()
    p.export(str(tmp_path / "t.trace.json"))
    p.export(str(tmp_path / "t.pktrace"), format="pb")
    doc = json.loads((tmp_path / "t.trace.json").read_text())
    assert {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"} == {"ProfileStep#0", "ProfileStep#1", "work"}
    assert load_profiler_result(tmp_path / "t.pktrace").steps == [0, 1]
    with pytest.raises(ValueError, match="format must be 'json' or 'pb'"):
        p.export(str(tmp_path / "t.xml"), format="xml")
    with pytest.raises(FileNotFoundError, match="cannot create"):
        p.export(str(tmp_path / "missing" / "t.json"))
    assert sorted(os.listdir(tmp_path)) == ["t.pktrace", "t.trace.json"]


def test_exporter_repr(tmp_path):
    assert repr(export_protobuf(str(tmp_path), "w")) == f"export_protobuf({str(tmp_path)!r}, worker_name='w')"


@pytest.mark.parametrize("factory", [export_chrome_tracing, export_protobuf])
def test_a_worker_name_that_is_not_a_file_name_part_is_refused_at_once(factory, tmp_path):
    for bad in ("a/b", "", "x\0y"):
        with pytest.raises(ValueError, match="worker_name .* must be a non-empty file name part"):
            factory(str(tmp_path), worker_name=bad)
    with pytest.raises(TypeError, match="worker_name must be a str, not int"):
        factory(str(tmp_path), worker_name=3)


def test_dir_name_may_be_bytes_like_every_other_path(tmp_path):
    exporter = export_protobuf(os.fsencode(tmp_path / "bytes_dir"))
    assert exporter.dir_name == str(tmp_path / "bytes_dir") and os.path.isdir(exporter.dir_name)
    with pytest.raises(TypeError, match="dir_name must be a path, not int"):
        export_chrome_tracing(3)
    for empty in ("", b""):
        with pytest.raises(ValueError, match=r"dir_name must not be empty \('\.' is the current directory\)"):
            export_protobuf(empty)


def lanes_nest_properly(doc):
    """Every (pid, tid) lane's complete events nest: none outlives the slice it starts in."""
    by_lane = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            # In whole ns, as viewers read them: µs floats summed would round
            # one step's end past the next one's start.
            start, end = round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)
            by_lane.setdefault((e["pid"], e["tid"]), []).append((start, -end))
    for events in by_lane.values():
        open_ends = []
        for start, minus_end in sorted(events):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and open_ends[-1] < -minus_end:
                return False
            open_ends.append(-minus_end)
    return True


def test_a_range_that_crosses_a_step_gets_a_lane_of_its_own_and_loads_back(tmp_path):
    """Prefetching the next batch: a RecordEvent begun in one step and ended in
    the next. Viewers draw a lane as nested slices, so it moves to the
    thread's overlap lane; loading maps that lane back to the thread."""
    exporter = export_chrome_tracing(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as prof:
        pending = None
        for _ in range(4):
            if pending is not None:
                pending.end()
            pending = profkit.RecordEvent("prefetch")
            pending.begin()
            time.sleep(0.001)
            prof.step()
        pending.end()
    (path,) = exporter.paths
    with open(path) as f:
        doc = json.load(f)
    assert lanes_nest_properly(doc)
    tid = next(e["tid"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfileStep#"))
    prefetch_lanes = {e["tid"] for e in doc["traceEvents"] if e.get("name") == "prefetch"}
    assert prefetch_lanes == {tid + 2_000_000_000}
    labels = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert labels[tid + 2_000_000_000].endswith(f"(Python, overlapping) [{tid}]")
    live, loaded = prof.profiler_result, load_profiler_result(path)
    assert loaded.threads == live.threads
    assert len(loaded) == len(live)


def test_a_write_error_names_the_trace_file_and_what_to_do(tmp_path):
    # The engine names the file it wrote: the hidden temporary, gone by then.
    exporter = export_chrome_tracing(str(tmp_path), "w")

    def full(path):
        raise OSError(errno.ENOSPC, f"cannot write '{path}': No space left on device")

    with pytest.raises(OSError) as caught:
        exporter(Window(full))
    message = str(caught.value)
    assert caught.value.errno == errno.ENOSPC
    assert "w_time_2024_03_05_07_08_09_123456.trace.json" in message and ".profkit-partial" not in message
    assert "prof.export(path)" in message
    assert os.listdir(tmp_path) == []


def test_temporaries_are_unique_beyond_the_pid_and_thread(tmp_path, monkeypatch):
    # Containers sharing a log directory all run as pid 1, and may have the
    # same thread ids: each write still needs a name of its own.
    names = []
    exporter = export_chrome_tracing(str(tmp_path), "w")
    for _ in range(2):
        exporter(Window(lambda p: (names.append(p), write_as_the_engine_does(p, "{}"))))
    assert len(set(names)) == 2


def test_a_relative_directory_is_kept_where_it_was_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exporter = export_chrome_tracing("log", "w")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    exporter(Window(lambda p: write_as_the_engine_does(p, "{}")))
    assert os.path.dirname(exporter.paths[0]) == str(tmp_path / "log")
    assert os.path.exists(exporter.paths[0]) and not (tmp_path / "elsewhere" / "log").exists()


def test_a_directory_that_is_a_file_is_named_so(tmp_path):
    blocker = tmp_path / "log"
    blocker.write_text("x")
    with pytest.raises(NotADirectoryError, match="exists and is not a directory"):
        export_chrome_tracing(str(blocker))


def test_a_worker_name_too_long_for_a_file_name_is_refused_up_front(tmp_path):
    with pytest.raises(ValueError, match="worker_name is too long"):
        export_chrome_tracing(str(tmp_path), "w" * 220)
    fits = export_chrome_tracing(str(tmp_path), "w" * 200, use_gzip=True)
    fits(Window(lambda p: write_as_the_engine_does(p, "{}")))
    assert len(fits.paths) == 1


def test_a_gzip_output_with_a_name_near_the_limit_is_written(tmp_path):
    with Profiler(on_trace_ready=lambda p: None) as p:
        p.step()
    long_name = str(tmp_path / ("x" * 240 + ".trace.json.gz"))
    p.profiler_result.save(long_name)
    assert load_profiler_result(long_name).info["step_count"] >= 1
    assert os.listdir(tmp_path) == [os.path.basename(long_name)]
