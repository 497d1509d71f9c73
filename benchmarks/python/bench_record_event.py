"""Cost of `with RecordEvent(name):` per block, recording and not, against a
pure-Python no-op context manager measured in the same run.

    python benchmarks/python/bench_record_event.py [--smoke] [--json]

Each figure is the median over repeats of (time of N blocks in a loop) / N,
including the loop's own cost (shown as "empty loop"), so it is what a user's
loop pays. Goals (BENCHMARKS.md): <= 400 ns recording, <= 150 ns idle.
"""

import argparse
import json
import statistics
import sys
import time

import profkit
from profkit import RecordEvent, TracerEventType, _C

RECORD, CLOSED = 2, 0


class NoopContext:
    """The cheapest context manager pure Python offers."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def empty_loop(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        pass
    return time.perf_counter_ns() - t


def noop_context(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        with NoopContext():
            pass
    return time.perf_counter_ns() - t


def record_event_block(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        with RecordEvent("train_step"):
            pass
    return time.perf_counter_ns() - t


def record_event_typed(n):
    forward = TracerEventType.Forward
    t = time.perf_counter_ns()
    for _ in range(n):
        with RecordEvent("forward", forward):
            pass
    return time.perf_counter_ns() - t


def record_event_reused(n):
    ev = RecordEvent("train_step")
    t = time.perf_counter_ns()
    for _ in range(n):
        with ev:
            pass
    return time.perf_counter_ns() - t


def begin_end_reused(n):
    ev = RecordEvent("train_step")
    begin, end = ev.begin, ev.end
    t = time.perf_counter_ns()
    for _ in range(n):
        begin()
        end()
    return time.perf_counter_ns() - t


def dataloader_range(n):
    t = time.perf_counter_ns()
    for _ in range(n):
        with profkit.dataloader_range():
            pass
    return time.perf_counter_ns() - t


CASES = [
    ("empty loop", empty_loop, False),
    ("no-op context manager (pure Python)", noop_context, False),
    ("with RecordEvent(name), idle", record_event_block, False),
    ("with RecordEvent(name, Forward), idle", record_event_typed, False),
    ("with ev (reused object), idle", record_event_reused, False),
    ("ev.begin(); ev.end(), idle", begin_end_reused, False),
    ("with dataloader_range(), idle", dataloader_range, False),
    ("with RecordEvent(name), recording", record_event_block, True),
    ("with RecordEvent(name, Forward), recording", record_event_typed, True),
    ("with ev (reused object), recording", record_event_reused, True),
    ("ev.begin(); ev.end(), recording", begin_end_reused, True),
    ("with dataloader_range(), recording", dataloader_range, True),
]


def measure(fn, recording, n, repeats):
    samples = []
    fn(min(n, 1000))  # warm up
    for _ in range(repeats):
        if recording:
            _C.set_state(RECORD)
        try:
            samples.append(fn(n) / n)
        finally:
            if recording:
                _C.set_state(CLOSED)
                _C.collect()  # drop the events; keep memory flat
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few thousand blocks: checks the script runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("-n", type=int, default=200_000, help="blocks per repeat")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    n, repeats = (2_000, 3) if args.smoke else (args.n, args.repeats)

    results = {name: measure(fn, recording, n, repeats) for name, fn, recording in CASES}
    noop = results["no-op context manager (pure Python)"]
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "blocks": n, "repeats": repeats, "ns_per_block": results}))
        return
    print(f"CPython {sys.version.split()[0]}, {n} blocks x {repeats} repeats, median ns per block (loop included)")
    print(f"{'case':<46} {'ns/block':>9} {'vs no-op CM':>12}")
    for name, ns in results.items():
        print(f"{name:<46} {ns:9.1f} {ns / noop:11.2f}x")


if __name__ == "__main__":
    main()
