"""A damaged trace is refused when it is loaded, naming the file and what is
wrong; every trace profkit writes loads back.

A flipped byte in a .pktrace used to load as impossible numbers: a step
ending centuries after the recording, a span that ends before it starts,
children that outlast their parents (cpp/storage/trace_reader.cpp's checks),
or as plausible wrong ones: another name, flag or id. From schema 2 on the
file's checksum refuses any changed byte; the checks behind it, which still
guard schema 1 files, are tested on edited traces sealed again
(pktrace_bytes.sealed).
"""

import os
import struct

import numpy as np
import pytest

from profkit import (
    Profiler,
    ProfilerResult,
    ProfilerState,
    RecordEvent,
    TracerEventType,
    _C,
    export_chrome_tracing,
    export_protobuf,
    load_profiler_result,
    make_scheduler,
)
from profkit.result import EVENT_DTYPE
from pktrace_bytes import crc32c, sealed, with_byte


def small_run():
    with Profiler(scheduler=None, on_trace_ready=lambda p: None) as prof:
        for _ in range(2):
            with RecordEvent("work"):
                with RecordEvent("inner"):
                    pass
            prof.step()
    return prof.profiler_result


def assert_refused(path, *words):
    with pytest.raises(ValueError) as caught:
        load_profiler_result(path)
    message = str(caught.value)
    assert f"cannot load '{path}'" in message, message
    for word in words:
        assert word in message, message


def test_a_flipped_byte_in_an_events_end_is_refused_at_load(tmp_path):
    live = small_run()
    clean = tmp_path / "clean.pktrace"
    live.save(str(clean))
    data = clean.read_bytes()
    # The top byte of the first step's end: it ended "582 years" after the
    # span, and the next step read as nested in it.
    end = struct.pack("<Q", int(live.host_events[0]["end_ns"]))
    at = data.find(end) + 7
    flipped = tmp_path / "flipped.pktrace"
    flipped.write_bytes(with_byte(data, at, data[at] ^ 0xFF))
    assert_refused(flipped, "at nesting depth 0", "within the event before it at that depth", "(the file is corrupt)")


def test_a_span_that_ends_before_it_starts_is_refused_at_load(tmp_path):
    live = small_run()
    clean = tmp_path / "clean.pktrace"
    live.save(str(clean))
    data = clean.read_bytes()
    at = data.find(struct.pack("<Q", live.start_ns)) + 5
    flipped = tmp_path / "flipped.pktrace"
    flipped.write_bytes(with_byte(data, at, data[at] ^ 0xFF))
    assert_refused(flipped, "its recording span starts after it ends")
    # The same edit in profkit's Chrome JSON.
    text = tmp_path / "t.trace.json"
    live.export_chrome_tracing(str(text))
    edited = text.read_text().replace(f'"start_ns":{live.start_ns},', f'"start_ns":{live.end_ns + 1},')
    assert edited != text.read_text()
    text.write_text(edited)
    assert_refused(text, f'"start_ns" ({live.end_ns + 1}) is after its "end_ns" ({live.end_ns})')


def consistent(result):
    """What no recording can give: a child that ends after its parent, a span
    that ends before it starts, an event out of its thread's start order."""
    events = result.events
    parent = events["parent"]
    has = parent >= 0
    if np.any(events["end_ns"][has] > events["end_ns"][parent[has]]):
        return "a child ends after its parent"
    if result.end_ns < result.start_ns:
        return "the span ends before it starts"
    return None


def test_every_single_flipped_byte_is_refused(tmp_path):
    # Every byte of a small real trace, flipped in turn: each load is refused,
    # naming the file. Before the checksum a fifth of them loaded.
    live = small_run()
    clean = tmp_path / "clean.pktrace"
    live.save(str(clean))
    data = clean.read_bytes()
    bad = tmp_path / "flipped.pktrace"
    for at in range(len(data)):
        bad.write_bytes(with_byte(data, at, data[at] ^ 0xFF, seal=False))
        with pytest.raises(ValueError) as caught:
            load_profiler_result(bad)
        assert str(bad) in str(caught.value), f"byte {at}: {caught.value}"


def test_a_changed_name_is_refused_by_the_checksum_and_only_by_it(tmp_path):
    live = small_run()
    clean = tmp_path / "clean.pktrace"
    live.save(str(clean))
    data = clean.read_bytes()
    assert sealed(data) == data  # the engine's checksum is the standard CRC-32C at Trace.checksum
    at = data.find(b"inner")
    renamed = tmp_path / "renamed.pktrace"
    renamed.write_bytes(with_byte(data, at, ord("I"), seal=False))
    assert_refused(renamed, "its bytes changed after profkit wrote it (its checksum is CRC-32C 0x", "copy it again")
    # Sealed again, the same bytes load with the new name: nothing else could
    # have told the change apart from a real recording.
    renamed.write_bytes(with_byte(data, at, ord("I")))
    assert "Inner" in set(load_profiler_result(renamed).events["name"])
    assert crc32c(b"123456789") == 0xE3069283


def windows_of_a_scheduled_run(tmp_path, with_stack):
    """A run of three back-to-back windows, with events inside steps, Python
    calls recorded whole (with_stack) and instants from the engine; every
    window saved as .pktrace and Chrome JSON."""
    pktraces = export_protobuf(str(tmp_path / "pb"))
    chrome = export_chrome_tracing(str(tmp_path / "json"))

    def on_trace_ready(prof):
        pktraces(prof)
        chrome(prof)

    def leaf(k):
        return k * 2

    def branch(k):
        return leaf(k) + leaf(k + 1)

    mark = _C.intern("mark")
    with Profiler(
        scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=3),
        on_trace_ready=on_trace_ready,
        with_stack=with_stack,
    ) as prof:
        for step in range(6):
            with RecordEvent("forward", TracerEventType.Forward):
                with RecordEvent("op", TracerEventType.Operator):
                    branch(step)
                _C.instant_event(mark, int(TracerEventType.UserDefined))
            prof.step()
    return pktraces.paths, chrome.paths


def assert_loads_back(pb, js, tmp_path):
    a, b = load_profiler_result(pb), load_profiler_result(js)
    assert consistent(a) is None and consistent(b) is None
    assert len(a) == len(b) > 0
    for field in ("start_ns", "end_ns", "depth", "type"):
        assert np.array_equal(a.events[field], b.events[field]), field
    # What was loaded saves and loads again, the same.
    again = tmp_path / "again.pktrace"
    a.save(str(again))
    c = load_profiler_result(again)
    for field in EVENT_DTYPE.names:
        assert np.array_equal(a.events[field], c.events[field]), field
    return a


@pytest.mark.parametrize("with_stack", [False, True])
def test_every_window_of_a_scheduled_run_loads_back(tmp_path, with_stack):
    pktraces, chrome = windows_of_a_scheduled_run(tmp_path, with_stack)
    assert len(pktraces) == len(chrome) == 3
    for pb, js in zip(pktraces, chrome):
        assert_loads_back(pb, js, tmp_path)


def test_events_open_across_a_collect_load_back(tmp_path):
    # Collected while recording goes on, an open event comes with the next
    # result, starting before that result's span.
    _C.set_state(ProfilerState.RECORD.value)
    outer = RecordEvent("across a collect", TracerEventType.UserDefined)
    outer.begin()
    with RecordEvent("before"):
        pass
    first = ProfilerResult(_C.collect())
    with RecordEvent("after"):
        pass
    outer.end()
    _C.set_state(ProfilerState.CLOSED.value)
    second = ProfilerResult(_C.collect())
    assert "across a collect" not in list(first.events["name"])
    carried = second.events[second.events["name"] == "across a collect"]
    assert len(carried) == 1 and carried["start_ns"][0] < second.start_ns
    for k, result in enumerate((first, second)):
        pb, js = tmp_path / f"{k}.pktrace", tmp_path / f"{k}.trace.json"
        result.save(str(pb))
        result.export_chrome_tracing(str(js))
        assert_loads_back(pb, js, tmp_path)


def test_a_torch_run_loads_back(tmp_path, pk_torch):
    from torch_helpers import make_loader, train

    # Operators recorded whole (record_function ranges), nested by time.
    prof = train(make_loader(n=16), scheduler=make_scheduler(closed=0, ready=0, record=2, repeat=2), record_shapes=True)
    live = prof.profiler_result
    path = tmp_path / "torch.pktrace"
    live.save(str(path))
    loaded = load_profiler_result(path)
    assert consistent(loaded) is None
    assert len(loaded) == len(live) > 0
    for field in EVENT_DTYPE.names:
        assert np.array_equal(loaded.events[field], live.events[field]), field
    json_path = tmp_path / "torch.trace.json"
    live.export_chrome_tracing(str(json_path))
    assert len(load_profiler_result(json_path)) == len(live)


def test_a_file_that_reports_size_zero_is_read_not_called_empty():
    # procfs reports st_size 0 for files that hold bytes: the engine said
    # "the file is empty (0 bytes)" without reading it.
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(ValueError) as caught:
        load_profiler_result("/proc/self/status")
    assert "not a profkit trace (no 'PKTR' file identifier)" in str(caught.value)
    assert "empty" not in str(caught.value)


def test_a_loaded_time_chrome_json_cannot_hold_names_the_file_it_came_from(tmp_path):
    # An event's end past INT64_MAX ns loads (pk_complete_event takes any
    # times, and the file keeps them), but Chrome JSON cannot hold it: the
    # export's refusal says which trace it is about.
    _C.set_state(ProfilerState.RECORD.value)
    with RecordEvent("only"):
        pass
    _C.set_state(ProfilerState.CLOSED.value)
    live = ProfilerResult(_C.collect())
    assert len(live) == 1
    clean = tmp_path / "clean.pktrace"
    live.save(str(clean))
    data = clean.read_bytes()
    at = data.find(struct.pack("<Q", int(live.host_events[0]["end_ns"]))) + 7
    late = tmp_path / "late.pktrace"
    late.write_bytes(with_byte(data, at, 0xFF))
    loaded = load_profiler_result(late)
    assert int(loaded.host_events[0]["end_ns"]) > 2**63
    with pytest.raises(ValueError) as caught:
        loaded.export_chrome_tracing(str(tmp_path / "late.trace.json"))
    assert "past the 9223372036854775807 ns" in str(caught.value)
    assert f"(in the trace loaded from '{late}')" in str(caught.value)
