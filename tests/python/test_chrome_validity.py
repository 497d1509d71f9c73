"""Recorded Chrome traces as ui.perfetto.dev and chrome://tracing read them, checked exactly.

tests/tools/check_chrome_trace.py (test_chrome_format.py) checks the Trace Event
Format on floats. This file reads every number as the decimal text the writer
put down (Perfetto's JSON tokenizer turns "12.345" into 12345 ns exactly) and
checks what a float reading can hide: times that are not whole ns, nesting to
the ns, file order within a lane (importers break start-time ties by it),
metadata given once and naming every lane, flows bound inside slices, no
NaN/Infinity. It also checks that what the file says is what was recorded: a
load of the JSON gives back every event, argument, allocation and thread name
of the live result, and a merge puts every event at its exact wall-clock time.
"""

import json
import threading
from collections import defaultdict
from decimal import Decimal

import pytest

import profkit
from profkit import RecordEvent, TracerEventType

C = profkit._C

# Names a user can give (a NUL is refused at RecordEvent): JSON's specials, C0
# controls and DEL, the JavaScript line separators, astral characters, a long one.
HOSTILE_NAMES = [
    'q"uote',
    "back\\slash\\",
    "ctl\x01\x1f\x7f\n\t\r\b\f",
    "sep\u2028\u2029",
    "uni \u2713 \u6f22 \U0001f600",
    "</script>",
    "x" * 3000 + '"\\',
]
METADATA_KEYS = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
                 "thread_sort_index": "sort_index"}


def _not_json(constant):
    raise ValueError(f"{constant} is not JSON")


def _unique_keys(pairs):
    found = dict(pairs)
    if len(found) != len(pairs):  # a reader keeps one value per key: the others are lost
        raise ValueError(f"a key given more than once in one object: {pairs!r:.300}")
    return found


def read_exact(path):
    """The document with every fraction as a Decimal (no float rounding); NaN/Infinity and
    keys repeated in an object refused."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")  # strict: a stray byte is an error
    return json.loads(text, parse_float=Decimal, parse_constant=_not_json, object_pairs_hook=_unique_keys)


def _integer(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _ns(v):
    """A µs value as whole ns, or None when it is not a number with at most 3 fraction digits."""
    if not (_integer(v) or isinstance(v, Decimal)):
        return None
    ns = Decimal(v) * 1000
    return int(ns) if ns == ns.to_integral_value() else None


def strict_problems(doc):
    """Every rule of the Trace Event Format (as Perfetto's JSON importer applies it) the document breaks."""
    found = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["the top level must be an object with a traceEvents array"]
    lanes = defaultdict(list)  # (pid, tid) -> [(start ns, end ns, index)], file order
    metadata = defaultdict(list)
    flows = defaultdict(lambda: defaultdict(list))
    used_lanes, used_pids = set(), set()
    for i, e in enumerate(doc["traceEvents"]):
        where = f"event {i} ({str(e)[:100]})"
        ph = e.get("ph")
        if ph not in ("X", "i", "M", "s", "f", "C"):
            found.append(f"{where}: unexpected phase")
            continue
        if not isinstance(e.get("name"), str):
            found.append(f"{where}: name must be a string")
        # Perfetto reads pid and tid as uint32 and drops an event whose ids do not fit.
        if not all(_integer(e.get(k)) and 0 <= e[k] <= 0xFFFFFFFF for k in ("pid", "tid")):
            found.append(f"{where}: pid and tid must be integers in [0, 2^32)")
            continue
        lane = (e["pid"], e["tid"])
        if ph == "M":
            key = METADATA_KEYS.get(e["name"])
            value = e.get("args", {}).get(key) if key else None
            if key is None or not (isinstance(value, str) if key == "name" else _integer(value)):
                found.append(f"{where}: bad metadata event")
            thread_level = e["name"].startswith("thread")
            metadata[(e["name"], e["pid"], e["tid"] if thread_level else None)].append(value)
            continue
        ts = _ns(e.get("ts"))
        if ts is None or ts < 0:
            found.append(f"{where}: ts must be a non-negative number of whole ns")
            continue
        if ph == "X":
            dur = _ns(e.get("dur"))
            if dur is None or dur < 0:
                found.append(f"{where}: dur must be a non-negative number of whole ns")
                continue
            lanes[lane].append((ts, ts + dur, i, True))
            used_lanes.add(lane)
            used_pids.add(e["pid"])
        elif ph == "i":
            scope = e.get("s")
            if scope not in ("t", "p", "g"):
                found.append(f"{where}: an instant needs scope t, p or g")
            if scope == "t":
                lanes[lane].append((ts, ts, i, False))
                used_lanes.add(lane)
                used_pids.add(e["pid"])
        elif ph == "C":
            series = e.get("args")
            if not isinstance(series, dict) or not series or not all(
                _integer(v) or isinstance(v, Decimal) for v in series.values()
            ):
                found.append(f"{where}: a counter needs numeric args")
            used_pids.add(e["pid"])
        else:
            if not _integer(e.get("id")):
                found.append(f"{where}: a flow event needs an integer id")
                continue
            if ph == "f" and e.get("bp") != "e":
                found.append(f"{where}: a flow end must bind to its enclosing slice (bp 'e')")
            flows[(e.get("cat"), e.get("name"), e["id"])][ph].append((lane, ts, i))

    for key, values in metadata.items():
        if len(values) != 1:
            found.append(f"metadata {key} given {len(values)} times: {values}")
    named_lanes = {(pid, tid) for (what, pid, tid) in metadata if what == "thread_name"}
    named_pids = {pid for (what, pid, _) in metadata if what == "process_name"}
    found += [f"lane {lane} has slices but no thread_name" for lane in sorted(used_lanes - named_lanes)]
    found += [f"process {pid} has events but no process_name" for pid in sorted(used_pids - named_pids)]

    for lane, spans in lanes.items():
        # Slices in file order, which is how importers break ties between
        # equal start times: each must come after the slice enclosing it.
        # Instants (zero-length slices) are sorted in by time, after the
        # slices that start with them, as a stable sort by time puts them.
        slices = [s for s in spans if s[3]]
        if any(b[0] < a[0] for a, b in zip(slices, slices[1:])):
            found.append(f"lane {lane}: slices are not in start order in the file")
        open_ends = []
        for start, end, index, _ in sorted(spans, key=lambda s: (s[0], not s[3])):
            # Pop what has ended; a zero-length slice at a slice's very end is still inside it.
            while open_ends and (open_ends[-1] < start or (open_ends[-1] == start and end > start)):
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                found.append(f"event {index}: overlaps its enclosing slice on lane {lane} by {end - open_ends[-1]} ns")
            if end > start:
                open_ends.append(end)

    def enclosing(lane, ts, end_inclusive):
        return any(
            s <= ts and (ts < e or (end_inclusive and ts <= e)) for s, e, _, is_slice in lanes.get(lane, ()) if is_slice
        )

    for flow_id, ends in flows.items():
        if len(ends.get("s", ())) != 1 or len(ends.get("f", ())) != 1 or len(ends) != 2:
            found.append(f"flow {flow_id}: needs exactly one start and one end, has {dict(ends)}")
            continue
        (s_lane, s_ts, s_index), (f_lane, f_ts, f_index) = ends["s"][0], ends["f"][0]
        # Perfetto binds a flow start to the slice open on its track, and ends
        # one (bp "e") in the slice enclosing its time.
        if not enclosing(s_lane, s_ts, False):
            found.append(f"flow {flow_id}: its start (event {s_index}) is inside no slice of lane {s_lane}")
        if not enclosing(f_lane, f_ts, True):
            found.append(f"flow {flow_id}: its end (event {f_index}) is inside no slice of lane {f_lane}")
        if f_ts < s_ts:
            found.append(f"flow {flow_id}: ends before it starts (Perfetto drops it)")
    return found


def check(path):
    problems = strict_problems(read_exact(path))
    assert problems == [], "\n".join(problems[:20])


# ---- recordings ----------------------------------------------------------------------
def _worker(k):
    C.set_thread_name(HOSTILE_NAMES[k % len(HOSTILE_NAMES)])
    for i in range(12):
        with RecordEvent(f"worker{k}", TracerEventType.UserDefined):
            with RecordEvent(HOSTILE_NAMES[i % len(HOSTILE_NAMES)], TracerEventType.OperatorInner):
                pass
            with RecordEvent("py", TracerEventType.PythonUserDefined):
                pass


HOSTILE_METADATA_KEY = 'model "x"\\'


def record_busy_window():
    """Threads, both layers, hostile names in events, arguments, thread names and
    metadata, instants, allocations, and ranges that cross step boundaries (so
    the overlap lanes are used)."""
    C.set_metadata(HOSTILE_METADATA_KEY, "v\u2028\x01")
    try:
        return _record_busy_steps()
    finally:
        C.set_metadata(HOSTILE_METADATA_KEY, None)  # engine-wide: later tests' windows must not carry it


def _record_busy_steps():
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        crossing = []
        for step in range(4):
            threads = [threading.Thread(target=_worker, args=(k,)) for k in range(3)]
            for t in threads:
                t.start()
            with RecordEvent("forward", TracerEventType.Forward):
                for name in HOSTILE_NAMES:
                    with RecordEvent(name, TracerEventType.Operator):
                        C.event_arg_str(C.intern("input_shapes"), name)
                        C.event_arg_int(C.intern('key "\\'), -(2**63))
                        C.instant_event(C.intern(name), int(TracerEventType.UserDefined))
                        C.record_memory(-1, 2**64 - 1 - step, 4096, 4096 * (step + 1), 2**63)
            if step == 1:  # begun in step 1, ended in step 2: crosses the step boundary
                crossing = [RecordEvent("across steps", TracerEventType.PythonUserDefined),
                            RecordEvent("across steps (C++)", TracerEventType.UserDefined)]
                for r in crossing:
                    r.begin()
            if step == 2:
                for r in reversed(crossing):
                    r.end()
            with profkit.dataloader_range():
                pass
            for t in threads:
                t.join()
            prof.step(num_samples=2)
    return prof.profiler_result


@pytest.fixture(scope="module")
def busy_window():
    return record_busy_window()


def assert_same_result(loaded, live):
    """Every host event, argument, allocation, thread and figure of `live`, exactly, in `loaded`."""
    a, b = loaded.events, live.events
    assert len(a) == len(b)
    for field in ("name", "type", "tid", "thread", "start_ns", "end_ns", "depth", "flags", "parent"):
        assert a[field].tolist() == b[field].tolist(), field
    assert loaded.event_args.tolist() == live.event_args.tolist()
    assert loaded.memory_events.tobytes() == live.memory_events.tobytes()
    assert loaded.threads == live.threads
    assert loaded.info == live.info
    assert loaded.metadata == live.metadata
    assert loaded.device_events.tolist() == live.device_events.tolist()


@pytest.mark.parametrize("labels", [False, True])
def test_a_busy_window_is_valid_and_loads_back_exactly(busy_window, tmp_path, labels):
    path = tmp_path / "busy.trace.json"
    busy_window.export_chrome_tracing(str(path), label_durations=labels)
    check(path)
    doc = read_exact(path)
    lanes = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert any("overlapping" in name for name in lanes)  # the crossing range has a lane of its own
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert set(HOSTILE_NAMES) <= names or labels
    assert_same_result(profkit.load_profiler_result(str(path)), busy_window)


def test_each_time_in_the_file_is_the_recorded_time_less_the_stated_base(busy_window, tmp_path):
    path = tmp_path / "busy.trace.json"
    busy_window.export_chrome_tracing(str(path))
    doc = read_exact(path)
    base = doc["profkit"]["base_ns"]
    assert doc["profkit"]["base_wall_ns"] - base == busy_window.info["clock_offset_ns"]
    written = sorted(
        (e["name"], base + _ns(e["ts"]), base + _ns(e["ts"]) + _ns(e.get("dur", 0)))
        for e in doc["traceEvents"]
        if e["ph"] in ("X", "i") and e.get("cat") != "Memory"
    )
    ev = busy_window.events
    recorded = sorted((str(n), int(s), int(t)) for n, s, t in zip(ev["name"], ev["start_ns"], ev["end_ns"]))
    assert written == recorded
    allocations = sorted(base + _ns(e["ts"]) for e in doc["traceEvents"] if e["name"] == "[memory]")
    assert allocations == sorted(int(t) for t in busy_window.memory_events["time_ns"])


def test_a_merge_puts_every_event_at_its_exact_wall_clock_time(busy_window, tmp_path):
    first_json = tmp_path / "first.trace.json"
    busy_window.export_chrome_tracing(str(first_json))
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with RecordEvent(HOSTILE_NAMES[0], TracerEventType.UserDefined):
            C.record_memory(-1, 16, 64, 64, 64)
    second = tmp_path / "second.pktrace"
    second_json = tmp_path / "second.trace.json"
    prof.profiler_result.save(str(second))
    prof.profiler_result.export_chrome_tracing(str(second_json))
    merged = tmp_path / "merged.trace.json"
    with pytest.warns(profkit.ProfilerWarning, match="do not overlap"):  # two windows, one after the other
        profkit.merge_traces({"a": str(first_json), "b": str(second)}, str(merged))
    check(merged)
    doc = read_exact(merged)
    base = doc["profkit"]["base_wall_ns"]
    pid_of = {entry["name"]: entry["trace_pid"] for entry in doc["profkit"]["merged_from"]}
    assert pid_of["a"] != pid_of["b"]  # one OS pid, two processes in the timeline

    def wall_times(d, wall_base, pids):
        return sorted(
            (e["ph"], e["name"], wall_base + _ns(e["ts"]), _ns(e.get("dur", 0)), json.dumps(e.get("args"), default=str))
            for e in d["traceEvents"]
            if e["ph"] != "M" and e["pid"] % profkit_device_stride() in pids
        )

    for name, original in (("a", first_json), ("b", second_json)):
        source = read_exact(original)
        want = wall_times(source, source["profkit"]["base_wall_ns"], {source["profkit"]["pid"]})
        assert wall_times(doc, base, {pid_of[name]}) == want, name


def test_an_argument_key_given_again_on_an_event_keeps_every_value(tmp_path):
    # The engine keeps every argument; JSON readers keep one value per key.
    # Before, the file said {"dup": -5, "dup": 9223372036854775807} and a
    # viewer showed only the last.
    def body():
        with RecordEvent("op", TracerEventType.Operator):
            key = C.intern("dup")
            C.event_arg_int(key, -5)
            C.event_arg_int(key, 2**63 - 1)
            C.event_arg_str(key, "text")
            C.event_arg_int(C.intern("dup#2"), 7)  # the program's own "dup#2"

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        body()
    path = tmp_path / "dup.trace.json"
    prof.profiler_result.export_chrome_tracing(str(path))
    check(path)  # read_exact refuses a repeated key
    (op,) = [e for e in read_exact(path)["traceEvents"] if e.get("name") == "op"]
    assert list(op["args"].items()) == [("dup", -5), ("dup#2", 2**63 - 1), ("dup#3", "text"), ("dup#2#2", 7)]


def profkit_device_stride():
    return 10_000_000  # kDeviceProcessStride: GPU d of pid p is p + stride * (d + 1)


def test_gpu_work_overlapping_on_its_stream_gets_lanes_that_nest(tmp_path):
    """Programmatic dependent launch (Hopper) starts a kernel before the one
    ahead of it on its stream ends; Perfetto drops or misplaces slices that
    overlap on one lane. GPU records come from a profkit JSON here (no GPU
    needed): a recording's file with two such kernels added."""
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with RecordEvent("host", TracerEventType.UserDefined):
            pass
    host_only = tmp_path / "host.trace.json"
    prof.profiler_result.export_chrome_tracing(str(host_only))
    with open(host_only) as f:
        doc = json.load(f)
    gpu_pid = doc["profkit"]["pid"] + profkit_device_stride()

    def kernel(name, ts, dur, correlation):
        return {"ph": "X", "cat": "Kernel", "name": name, "ts": ts, "dur": dur, "pid": gpu_pid, "tid": 7,
                "args": {"device": 0, "stream": 7, "context": 1, "correlation id": correlation}}

    # "secondary" starts inside "primary" and outlives it; "after" follows both.
    doc["traceEvents"] += [kernel("primary", 10.0, 10.0, 1), kernel("secondary", 15.0, 10.0, 2),
                           kernel("after", 30.0, 1.0, 3)]
    doc["profkit"]["device_event_count"] = 3
    with_gpu = tmp_path / "gpu_in.trace.json"
    with open(with_gpu, "w") as f:
        json.dump(doc, f)
    loaded = profkit.load_profiler_result(str(with_gpu))
    out = tmp_path / "gpu.trace.json"
    loaded.export_chrome_tracing(str(out))
    check(out)
    written = read_exact(out)["traceEvents"]
    lanes = {e["name"]: e["tid"] for e in written if e.get("cat") == "Kernel"}
    assert lanes["primary"] == lanes["after"] == 7 and lanes["secondary"] != 7
    names = {e["tid"]: e["args"]["name"] for e in written if e["name"] == "thread_name" and e["pid"] == gpu_pid}
    assert names[lanes["secondary"]] == "Stream 7 (overlapping)"
    again = profkit.load_profiler_result(str(out))  # every record back on its stream
    assert again.device_events[["name", "start_ns", "end_ns", "stream"]].tolist() == \
        loaded.device_events[["name", "start_ns", "end_ns", "stream"]].tolist()


def test_torch_training_steps_with_memory_make_a_valid_trace(pk_torch, tmp_path):
    torch = pytest.importorskip("torch")
    nn = torch.nn
    pk_torch.enable(record_shapes=True)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(12, 3, 8, 8), torch.randint(0, 5, (12,)))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    with profkit.Profiler(scheduler=(1, 3), profile_memory=True, on_trace_ready=lambda p: None) as prof:
        for x, y in loader:
            with torch.profiler.record_function('rf "quoted" \\'):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step(num_samples=len(y))
    live = prof.profiler_result
    assert len(live.memory_events) > 0 and "backward" in set(live.events["name"].tolist())
    path = tmp_path / "torch.trace.json"
    live.export_chrome_tracing(str(path))
    check(path)
    assert_same_result(profkit.load_profiler_result(str(path)), live)


# ---- the checker itself --------------------------------------------------------------
def _doc(*events):
    meta = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
    ]
    return {"traceEvents": meta + list(events)}


def _slice(ts, dur, **extra):
    return dict({"ph": "X", "name": "a", "cat": "Operator", "pid": 1, "tid": 1, "ts": Decimal(ts), "dur": Decimal(dur)},
                **extra)


def test_the_strict_checker_catches_what_a_float_reading_hides():
    assert strict_problems(_doc(_slice("10.000", "5.000"), _slice("10.000", "5.000"))) == []
    # 1 ns past its parent: a float reading of large times rounds it away.
    big = "9007199254740.990"
    assert any("overlaps" in p for p in strict_problems(_doc(_slice(big, "0.010"), _slice(big, "0.011"))))
    assert any("overlaps" in p for p in strict_problems(_doc(_slice("1.000", "1.000"), _slice("1.999", "0.002"))))
    assert any("whole ns" in p for p in strict_problems(_doc(_slice("1.0005", "1.000"))))
    assert any("not in start order" in p for p in strict_problems(_doc(_slice("2.000", "1.000"), _slice("1.000", "5.000"))))
    assert any("given 2 times" in p for p in strict_problems(
        _doc({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "again"}})))
    assert any("no thread_name" in p for p in strict_problems(_doc(_slice("1.000", "1.000", tid=2))))
    assert any("[0, 2^32)" in p for p in strict_problems(_doc(_slice("1.000", "1.000", tid=2**32))))
    flow = {"name": "launch", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1}
    start = dict(flow, ph="s", ts=Decimal("1.500"))
    outside = dict(flow, ph="f", bp="e", ts=Decimal("9.000"))
    assert any("inside no slice" in p for p in strict_problems(_doc(_slice("1.000", "1.000"), start, outside)))
    assert strict_problems(_doc(_slice("1.000", "1.000"), _slice("9.000", "1.000"), start, outside)) == []
    assert any("one start and one end" in p for p in strict_problems(_doc(_slice("1.000", "1.000"), start)))
    with pytest.raises(ValueError):
        json.loads('{"traceEvents": [{"ts": NaN}]}', parse_constant=_not_json)
