#!/usr/bin/env python3
"""What Profiler(with_stack=True) adds to each Python call, next to cProfile.

Times a loop of calls to an empty Python function, and a loop of calls to a
built-in (``len``), inside a profkit recording window with and without
with_stack, and under the standard library's cProfile (the profiler a Python
user knows, which observes calls the same way: a C profile function).
Configurations are interleaved round by round; per-call figures are medians
over rounds of (loop time / calls), and the cost is the paired difference
from the plain window of the same round.

    python benchmarks/python/with_stack_cost.py [--rounds 15] [--calls 200000]
    python benchmarks/python/with_stack_cost.py --smoke   # CI: checks it runs
"""

import argparse
import contextlib
import cProfile
import io
import statistics
import sys
import time


def empty():
    pass


def python_calls(n):
    for _ in range(n):
        empty()


def builtin_calls(n):
    t = ()
    for _ in range(n):
        len(t)


def in_profkit_window(profkit, loop, n, with_stack):
    """ns per call of loop(n) inside one profkit recording window; and the events it recorded."""
    prof = profkit.Profiler(on_trace_ready=lambda p: None, timer_only=False, with_stack=with_stack)
    with contextlib.redirect_stdout(io.StringIO()):  # the Perf Summary
        prof.start()
        t0 = time.perf_counter_ns()
        loop(n)
        t1 = time.perf_counter_ns()
        prof.stop()
    return (t1 - t0) / n, len(prof.profiler_result.events)


def under_cprofile(loop, n):
    profile = cProfile.Profile()
    profile.enable()
    t0 = time.perf_counter_ns()
    loop(n)
    t1 = time.perf_counter_ns()
    profile.disable()
    return (t1 - t0) / n


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--calls", type=int, default=200_000, help="calls per loop")
    p.add_argument("--smoke", action="store_true", help="CI mode: a tiny run that checks everything works")
    args = p.parse_args()
    if args.smoke:
        args.rounds, args.calls = 2, 2000
    import profkit

    print(f"with_stack_cost: Python {sys.version.split()[0]}, {args.calls} calls a loop, {args.rounds} rounds")
    for label, loop in (("Python function", python_calls), ("built-in function", builtin_calls)):
        plain, traced, cprof = [], [], []
        events = 0
        for _ in range(args.rounds):
            base, _ = in_profkit_window(profkit, loop, args.calls, False)
            with_stack, events = in_profkit_window(profkit, loop, args.calls, True)
            plain.append(base)
            traced.append(with_stack - base)
            cprof.append(under_cprofile(loop, args.calls) - base)
        # One event per call, plus the window's own (steps).
        if events < args.calls:
            raise SystemExit(f"with_stack recorded {events} events for {args.calls} calls: some calls were lost")
        print(
            f"  {label:17s} call {statistics.median(plain):6.1f} ns; "
            f"with_stack +{statistics.median(traced):6.1f} ns; cProfile +{statistics.median(cprof):6.1f} ns"
        )


if __name__ == "__main__":
    main()
