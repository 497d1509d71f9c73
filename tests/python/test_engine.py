"""The thin binding drives the engine: record, collect, save, load, export."""

import json
import threading

import numpy as np
import pytest

import profkit
from profkit import _C, _records

from clock_helpers import CLOCKS, run_on_clock

CLOSED, READY, RECORD, RECORD_AND_RETURN = 0, 1, 2, 3
OPERATOR, PROFILE_STEP, USER_DEFINED, PYTHON_USER_DEFINED = 0, 2, 7, 14


def host_events(result):
    return _records.view(result.host_events, _records.HOST_EVENT)


def record_sample():
    _C.set_state(RECORD)
    _C.step_begin(0)
    for i in range(3):
        _C.begin_event_str("outer", PYTHON_USER_DEFINED)
        _C.begin_event(_C.intern("aten::add"), OPERATOR)
        _C.event_arg_int(_C.intern("i"), i)
        _C.end_event()
        _C.end_event()
    _C.step_end(16)
    _C.set_state(CLOSED)
    return _C.collect()


def test_package_exposes_header_and_library():
    import os

    assert os.path.isfile(os.path.join(profkit.get_include(), "profkit", "profkit.h"))
    assert os.path.isfile(profkit.get_library())
    assert _C.api_version() >> 16 == 1
    assert profkit.__version__ == _C.version()


def test_python_module_uses_the_shared_engine_library():
    # The binding must not carry its own static copy of the engine.
    import ctypes
    import os

    lib = ctypes.CDLL(profkit.get_library())
    lib.pk_get_state.restype = ctypes.c_int
    _C.set_state(READY)
    assert lib.pk_get_state() == READY
    with open(f"/proc/{os.getpid()}/maps") as maps:
        mapped = {line.split()[-1] for line in maps if "libprofkit" in line}
    assert mapped == {os.path.realpath(profkit.get_library())}


def test_record_collect_nesting_and_steps():
    result = record_sample()
    ev = host_events(result)
    names = result.strings()
    assert [names[n] for n in ev["name"]] == ["ProfileStep#0"] + ["outer", "aten::add"] * 3
    assert list(ev["depth"]) == [0] + [1, 2] * 3
    assert ev["type"][0] == PROFILE_STEP
    assert np.all(ev["start_ns"] <= ev["end_ns"])
    assert result.parent(2) == 1 and result.parent(0) is None
    info = result.info()
    assert info["first_step"] == 0 and info["step_count"] == 1
    assert info["host_event_count"] == 7
    args = _records.view(result.event_args, _records.EVENT_ARG)
    assert len(args) == 4  # num_samples on the step, i on each operator


def test_step_ends_one_step_and_begins_the_next():
    _C.set_state(RECORD)
    _C.step_begin(5)
    _C.step(32)  # ends step 5 with 32 samples, begins step 6
    _C.step(num_samples=16)  # ends step 6
    assert _C.is_recording()
    _C.set_state(CLOSED)
    assert not _C.is_recording()
    result = _C.collect()
    ev = host_events(result)
    names = result.strings()
    assert [names[n] for n in ev["name"]] == ["ProfileStep#5", "ProfileStep#6"]
    args = _records.view(result.event_args, _records.EVENT_ARG)
    assert [int(v) for v in args["value"]] == [32, 16]


@pytest.mark.parametrize(
    "args, kwargs",
    [((-1,), {}), (("8",), {}), ((2.0,), {}), ((True,), {}), ((1, 2), {}), ((), {"samples": 1}), ((1,), {"num_samples": 1})],
)
def test_step_rejects_what_is_not_one_sample_count(args, kwargs):
    with pytest.raises(TypeError, match="num_samples must be a non-negative int"):
        _C.step(*args, **kwargs)


def test_reader_time_counts_data_loading():
    before, mine = _C.reader_time_ns(), _C.thread_reader_time_ns()
    _C.data_loading_begin(_C.intern("fetch"))
    _C.data_loading_end()
    assert isinstance(before, int) and _C.reader_time_ns() > before
    assert isinstance(mine, int) and _C.thread_reader_time_ns() > mine


def test_a_threads_reader_time_is_its_own():
    import threading

    mine = _C.thread_reader_time_ns()
    process = _C.reader_time_ns()

    def fetch():
        _C.data_loading_begin(_C.intern("prefetch"))
        _C.data_loading_end()

    other = threading.Thread(target=fetch)
    other.start()
    other.join()
    assert _C.reader_time_ns() > process  # the process's total has it
    assert _C.thread_reader_time_ns() == mine  # this thread's has not


_CLOCK_CHILD = r"""
import json, time
from profkit import _C, _records
_C.set_state(2)
before = _C.now_ns()
outer, inner = _C.intern("outer"), _C.intern("inner")
for _ in range(3):
    _C.begin_event(outer, 0)
    _C.begin_event(inner, 0)
    time.sleep(0.002)
    _C.end_event()
    _C.end_event()
after = _C.now_ns()
_C.set_state(0)
ev = _records.view(_C.collect().host_events, _records.HOST_EVENT)
print(json.dumps({"before": before, "after": after, "events": [[int(e["start_ns"]), int(e["end_ns"]), int(e["depth"])] for e in ev]}))
"""


@pytest.mark.parametrize("clock", CLOCKS)
def test_events_are_timed_on_either_clock(clock):
    # PROFKIT_CLOCK=monotonic makes the engine read CLOCK_MONOTONIC instead of
    # the TSC: every event then takes the general recording path (the inline
    # one reads the TSC only), and its times must be as right as the TSC's.
    out = run_on_clock(_CLOCK_CHILD, clock)
    events = out["events"]
    assert [depth for _, _, depth in events] == [0, 1] * 3
    for start, end, depth in events:
        assert out["before"] <= start <= end <= out["after"]
        assert end - start >= 2_000_000  # each span holds a 2 ms sleep
    for (outer_start, outer_end, _), (inner_start, inner_end, _) in zip(events[::2], events[1::2]):
        assert outer_start <= inner_start <= inner_end <= outer_end


def test_save_and_load_give_the_same_events(tmp_path):
    result = record_sample()
    path = str(tmp_path / "run.pktrace")
    result.save(path)
    loaded = _C.load(path)
    assert np.array_equal(host_events(loaded), host_events(result))
    assert loaded.strings() == result.strings()
    assert loaded.threads() == result.threads()
    assert loaded.info() == result.info()


def test_columns_outlive_their_result():
    view = host_events(record_sample())  # the Result object is gone here
    assert len(view) == 7 and view["end_ns"].max() > 0


def test_events_from_many_threads():
    _C.set_state(RECORD)

    def work(k):
        _C.set_thread_name(f"worker-{k}")
        for _ in range(500):
            _C.begin_event_str("w", USER_DEFINED)
            _C.end_event()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _C.set_state(CLOSED)
    result = _C.collect()
    workers = [t for t in result.threads() if t["name"].startswith("worker-")]
    assert sorted(t["name"] for t in workers) == [f"worker-{k}" for k in range(4)]
    assert all(t["event_count"] == 500 for t in workers)


HOSTILE = [
    'quote " and backslash \\',
    "newline\n tab\t bell\x07 escape\x1b del\x7f",  # names are C strings: no NUL
    "unicode é € 😀 ‮right-to-left",
    "</script><script>alert(1)</script>",
    "{\"json\": [1, 2]}",
]


def test_chrome_export_is_valid_json_for_hostile_names(tmp_path):
    _C.set_state(RECORD)
    for name in HOSTILE:
        _C.begin_event_str(name, USER_DEFINED)
        _C.end_event()
    # Invalid UTF-8 can only come from C callers; pass raw bytes through intern.
    _C.set_state(CLOSED)
    result = _C.collect()
    path = tmp_path / "hostile.trace.json"
    result.export_chrome(str(path))
    doc = json.loads(path.read_text(encoding="utf-8"))
    names = {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert names == set(HOSTILE)
    cats = {e["cat"] for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert cats == {"UserDefined"}
    assert doc["profkit"]["host_event_count"] == len(HOSTILE)
    assert doc["profkit"]["pid"] > 0


def test_invalid_utf8_from_c_callers_is_replaced(tmp_path):
    import ctypes

    lib = ctypes.CDLL(profkit.get_library())
    lib.pk_begin_event_str.argtypes = [ctypes.c_char_p, ctypes.c_int]
    _C.set_state(RECORD)
    lib.pk_begin_event_str(b"bad \xff\xfe bytes \xc0\xaf", USER_DEFINED)
    _C.end_event()
    _C.set_state(CLOSED)
    result = _C.collect()
    path = tmp_path / "bad.trace.json"
    result.export_chrome(str(path))
    doc = json.loads(path.read_bytes().decode("utf-8"))  # strict decoding succeeds
    (name,) = [e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"]
    assert name == "bad \ufffd\ufffd bytes \ufffd\ufffd"


def test_a_name_cut_short_reads_the_same_in_events_and_chrome_json(tmp_path):
    # One U+FFFD per maximal ill-formed subpart, in the engine's JSON as in
    # Python's decode(errors="replace") that .events uses.
    import ctypes

    lib = ctypes.CDLL(profkit.get_library())
    lib.pk_begin_event_str.argtypes = [ctypes.c_char_p, ctypes.c_int]
    _C.set_state(RECORD)
    lib.pk_begin_event_str(b"trunc\xe2\x82 and \xf0\x9f\x98", USER_DEFINED)
    _C.end_event()
    _C.set_state(CLOSED)
    result = profkit.ProfilerResult(_C.collect())
    path = tmp_path / "cut.trace.json"
    result.export_chrome_tracing(path)
    (in_json,) = [e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert list(result.events["name"]) == [in_json] == ["trunc\ufffd and \ufffd"]


def test_text_with_a_lone_surrogate_is_recorded_with_the_replacement_character(tmp_path):
    # Every text entry point treats a lone surrogate (no UTF-8 form; what
    # os.fsdecode makes of bytes that are not UTF-8) as RecordEvent does:
    # U+FFFD in its place. Before, each raised pybind11's "incompatible
    # function arguments" TypeError (from inside the torch fallback's or
    # dataloader_range's intern, too).
    _C.set_metadata("model \udcff", "v\ud800")
    try:
        _C.set_state(RECORD)

        def work():
            _C.set_thread_name("worker \udfff")
            _C.begin_event(_C.intern("op \udcff"), USER_DEFINED)
            _C.event_arg_str(_C.intern("key \ud800"), "value \udcff")
            _C.end_event()
            _C.begin_event_str("str \ud800", USER_DEFINED)
            _C.end_event()

        t = threading.Thread(target=work)
        t.start()
        t.join()
        with profkit.dataloader_range("load \udcff"):
            pass
        _C.set_state(CLOSED)
        result = profkit.ProfilerResult(_C.collect())
    finally:
        _C.set_metadata("model \udcff", None)
    assert sorted(result.events["name"]) == ["load \ufffd", "op \ufffd", "str \ufffd"]
    assert [(a["key"], a["value"]) for a in result.event_args] == [("key \ufffd", "value \ufffd")]
    assert "worker \ufffd" in [t["name"] for t in result.threads]
    assert result.metadata["model \ufffd"] == "v\ufffd"
    assert _C.name_string(_C.intern("x\udcff")) == "x\ufffd"
    # What pybind11 took before still goes through as it did: bytes as they
    # are, and anything else than str or bytes is a TypeError.
    assert _C.name_string(_C.intern(b"raw")) == "raw"
    with pytest.raises(TypeError):
        _C.intern(3)
    path = tmp_path / "surrogates.trace.json"
    result.export_chrome_tracing(path)
    doc = json.loads(path.read_bytes().decode("utf-8"))  # strict decoding succeeds
    assert {"op \ufffd", "str \ufffd"} <= {e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"}


def test_bad_files_raise_clear_python_errors(tmp_path):
    missing = tmp_path / "missing.pktrace"
    with pytest.raises(FileNotFoundError, match="missing.pktrace"):
        _C.load(str(missing))
    empty = tmp_path / "empty.pktrace"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        _C.load(str(empty))
    good = tmp_path / "good.pktrace"
    record_sample().save(str(good))
    data = good.read_bytes()
    truncated = tmp_path / "truncated.pktrace"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        _C.load(str(truncated))
    chrome = tmp_path / "x.trace.json"
    chrome.write_text('{"traceEvents": []}')
    with pytest.raises(ValueError, match="not one profkit wrote"):
        _C.load(str(chrome))
    with pytest.raises(FileNotFoundError, match="cannot create"):
        record_sample().save(str(tmp_path / "no" / "dir" / "x.pktrace"))
    for bad_state in (7, -1):
        with pytest.raises(ValueError, match="not a pk_state"):
            _C.set_state(bad_state)
    with pytest.raises(RuntimeError, match="no step is open"):
        _C.step_end(0)


@pytest.mark.parametrize(
    "call, what",
    [
        (lambda: profkit.dataloader_range("load\0x").__enter__(), "name"),
        (lambda: _C.intern("a\0b"), "name"),
        (lambda: _C.begin_event_str("a\0b", 0), "event name"),
        (lambda: _C.event_arg_str(_C.intern("k"), "v\0w"), "argument value"),
        (lambda: _C.set_thread_name("worker\0x"), "thread name"),
        (lambda: _C.set_metadata("model\0x", "m"), "metadata key"),
        (lambda: _C.set_metadata("model", "res\0net"), "metadata value"),
    ],
)
def test_text_with_a_nul_character_is_refused_not_cut_short(call, what):
    # The engine's C strings end at a NUL: "load\0x" would become "load".
    with pytest.raises(ValueError, match=f"{what} .* contains a NUL character"):
        call()
