"""Throughput and memory of profkit merge on large traces.

    python benchmarks/python/bench_merge.py [--smoke] [--events N] [--json]

Records two windows of N host events each (rank 0 and rank 1 of 2; half of
them Communication events with a `bytes` argument, so the slow path of the
Chrome writer is exercised too), saves each as .pktrace and as Chrome JSON,
then merges the two ranks (a) from .pktrace files, (b) from Chrome JSON
files, and, for reference, (c) exports one window to Chrome JSON with the
engine. Each case runs in a fresh process so that its peak memory (VmHWM)
is its own. Figures: input host events per second, and the peak memory
growth over the process's state before the merge.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def record(path_stem, rank, n):
    from profkit import ProfilerResult, _C

    _C.set_rank(rank, 2)
    _C.set_state(2)
    name, comm, key = _C.intern("aten::addmm"), _C.intern("all_reduce"), _C.intern("bytes")
    begin, end, arg = _C.begin_event, _C.end_event, _C.event_arg_int
    _C.step_begin(0)
    for _ in range(n // 2):
        begin(name, 0)
        end()
        begin(comm, 12)
        arg(key, 4096)
        end()
    _C.step_end(0)
    _C.set_state(0)
    result = ProfilerResult(_C.collect())
    result.save(path_stem + ".pktrace")
    result.export_chrome_tracing(path_stem + ".trace.json")
    return len(result)


def peak_rss_kib():
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not
    inherited from the parent across exec)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover - not Linux


def run_case(case, files, out):
    """Runs in a child process: one merge (or export), timed; prints JSON."""
    import warnings

    import profkit

    before = peak_rss_kib()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the two windows do not overlap in time: expected here
        if case == "export":
            profkit.load_profiler_result(files[0]).export_chrome_tracing(out)
        else:
            profkit.merge_traces(files, out)
    seconds = time.perf_counter() - start
    after = peak_rss_kib()
    print(json.dumps({"seconds": seconds, "rss_growth_mib": (after - before) / 1024}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a small run for CI")
    parser.add_argument("--events", type=int, default=1_000_000, help="host events per rank")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--run-case", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_case:
        case, out, *files = args.run_case
        run_case(case, files, out)
        return
    n = 20_000 if args.smoke else args.events
    with tempfile.TemporaryDirectory(prefix="bench_merge_") as d:
        stems = [os.path.join(d, f"rank{r}") for r in (0, 1)]
        events = sum(record(stem, rank, n) for rank, stem in enumerate(stems))
        cases = [
            ("merge 2 x .pktrace", "merge", [s + ".pktrace" for s in stems], events),
            ("merge 2 x Chrome JSON", "merge", [s + ".trace.json" for s in stems], events),
            ("reference: export 1 x Chrome JSON", "export", [stems[0] + ".pktrace"], events // 2),
        ]
        rows = []
        for label, case, files, count in cases:
            out = os.path.join(d, "out.trace.json")
            done = subprocess.run(
                [sys.executable, __file__, "--run-case", case, out, *files], capture_output=True, text=True, check=True
            )
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            size = os.path.getsize(out)
            if case == "merge":
                with open(out, encoding="utf-8") as f:
                    json.load(f)  # the merged file is valid JSON
            rows.append(
                {
                    "case": label,
                    "events": count,
                    "seconds": round(figures["seconds"], 3),
                    "events_per_s": round(count / figures["seconds"]),
                    "output_mib": round(size / 2**20, 1),
                    "rss_growth_mib": round(figures["rss_growth_mib"], 1),
                }
            )
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(
            f"{r['case']:<36} {r['events']:>9} events  {r['seconds']:>7.3f} s  {r['events_per_s'] / 1e6:>6.2f} M events/s"
            f"  out {r['output_mib']:>7.1f} MiB  peak memory +{r['rss_growth_mib']:.1f} MiB"
        )


if __name__ == "__main__":
    main()
