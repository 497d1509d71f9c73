"""Cost of Profiler.step() when it crosses no window boundary (goal <= 5 us),
and, for reference, when every step ends a window.

    python benchmarks/python/bench_step.py [--smoke] [--json]

Median over repeats of (time of N steps) / N, loop included.
"""

import argparse
import contextlib
import io
import json
import statistics
import sys
import time

from profkit import Profiler, ProfilerState


def steps(prof, n, num_samples):
    step = prof.step
    t = time.perf_counter_ns()
    for _ in range(n):
        step(num_samples)
    return time.perf_counter_ns() - t


def measure(make_profiler, n, repeats, num_samples=None):
    samples = []
    for _ in range(repeats):
        prof = make_profiler()
        with contextlib.redirect_stdout(io.StringIO()):  # the Perf Summary
            prof.start()
            try:
                samples.append(steps(prof, n, num_samples) / n)
            finally:
                prof.stop()
    return statistics.median(samples)


def ignore(prof):
    pass


def _closed_after_first_step(step):
    return ProfilerState.RECORD_AND_RETURN if step == 0 else ProfilerState.CLOSED


CASES = [
    ("step(), RECORD -> RECORD (scheduler=None)", lambda: Profiler(on_trace_ready=ignore), None),
    ("step(32), RECORD -> RECORD", lambda: Profiler(on_trace_ready=ignore), 32),
    (
        "step(), CLOSED -> CLOSED",
        lambda: Profiler(scheduler=_closed_after_first_step, on_trace_ready=ignore),
        None,
    ),
    ("step(), timer_only=True", lambda: Profiler(timer_only=True), None),
    (
        "step(), every step returns a window (reference)",
        lambda: Profiler(scheduler=lambda s: ProfilerState.RECORD_AND_RETURN, on_trace_ready=ignore),
        None,
    ),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few hundred steps: checks the script runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("-n", type=int, default=20_000, help="steps per repeat")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    n, repeats = (300, 2) if args.smoke else (args.n, args.repeats)

    results = {}
    for name, make, samples in CASES:
        count = n if "returns a window" not in name else max(n // 20, 10)
        results[name] = measure(make, count, repeats, samples)
    if args.json:
        print(json.dumps({"python": sys.version.split()[0], "steps": n, "repeats": repeats, "ns_per_step": results}))
        return
    print(f"CPython {sys.version.split()[0]}, {n} steps x {repeats} repeats, median per step")
    for name, ns in results.items():
        print(f"{name:<50} {ns / 1000:8.2f} us")


if __name__ == "__main__":
    main()
