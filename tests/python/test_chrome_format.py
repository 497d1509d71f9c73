"""Traces written from Python follow the Trace Event Format (tests/tools/check_chrome_trace.py)."""

import importlib.util
import json
import os
import threading

import profkit
from profkit import RecordEvent, TracerEventType

_CHECKER = os.path.join(os.path.dirname(__file__), "..", "tools", "check_chrome_trace.py")
_spec = importlib.util.spec_from_file_location("check_chrome_trace", _CHECKER)
checker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checker)


def record_busy_trace(path, **export_options):
    """Nested ranges on two layers and two threads, instants and memory via the engine, args, steps."""

    def worker():
        for _ in range(20):
            with RecordEvent("worker range", TracerEventType.UserDefined):
                with RecordEvent("inner", TracerEventType.OperatorInner):
                    pass

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for step in range(3):
            t = threading.Thread(target=worker)
            t.start()
            with RecordEvent("forward", TracerEventType.Forward):
                with RecordEvent("aten::linear", TracerEventType.Operator):
                    profkit._C.event_arg_str(profkit._C.intern("input_shapes"), "[[2, 3]]")
                    profkit._C.instant_event(profkit._C.intern("marker"), int(TracerEventType.UserDefined))
                    profkit._C.record_memory(-1, 0x1000 + step, 4096, 4096 * (step + 1), 0)  # a counter sample
            with profkit.dataloader_range():
                pass
            t.join()
            prof.step(num_samples=2)
    prof.profiler_result.export_chrome_tracing(str(path), **export_options)


def test_recorded_traces_follow_the_format(tmp_path):
    plain = tmp_path / "plain.trace.json"
    labelled = tmp_path / "labelled.trace.json"
    record_busy_trace(plain)
    record_busy_trace(labelled, label_durations=True)
    assert checker.check_file(str(plain)) == []
    assert checker.check_file(str(labelled)) == []
    with open(plain) as f:
        counters = [e for e in json.load(f)["traceEvents"] if e["ph"] == "C"]
    assert [(e["name"], e["args"]["Allocated"]) for e in counters] == [("Memory (CPU)", 4096 * n) for n in (1, 2, 3)]


def test_the_checker_catches_what_importers_reject():
    def doc(*events):
        return {"traceEvents": list(events)}

    good = {"ph": "X", "name": "a", "cat": "Operator", "pid": 1, "tid": 1, "ts": 0.0, "dur": 10.0}
    assert list(checker.problems(doc(good))) == []
    crossing = dict(good, name="b", ts=5.0, dur=10.0)  # overlaps "a" without nesting
    assert any("without nesting" in p for p in checker.problems(doc(good, crossing)))
    assert any("dur" in p for p in checker.problems(doc({k: v for k, v in good.items() if k != "dur"})))
    assert any("pid" in p for p in checker.problems(doc(dict(good, pid="1"))))
    lonely_flow = {"ph": "s", "name": "f", "cat": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 1.0}
    assert any("one start and one end" in p for p in checker.problems(doc(good, lonely_flow)))
    unbound = {"ph": "f", "name": "f", "cat": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 2.0}
    assert any("bp" in p for p in checker.problems(doc(good, lonely_flow, unbound)))
    assert any("metadata" in p for p in checker.problems(doc({"ph": "M", "name": "thread_name", "pid": 1,
                                                                "tid": 1, "args": {}})))
    counter = {"ph": "C", "name": "Memory (CPU)", "cat": "Memory", "pid": 1, "tid": 0, "ts": 1.0,
               "args": {"Allocated": 4096}}
    assert list(checker.problems(doc(counter))) == []
    assert any("counter" in p for p in checker.problems(doc(dict(counter, args={"Allocated": "4096"}))))
    assert any("counter" in p for p in checker.problems(doc({k: v for k, v in counter.items() if k != "args"})))
    assert list(checker.problems(json.loads('{"traceEvents": {}}')))
