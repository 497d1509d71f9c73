#!/usr/bin/env python3
"""Overhead per kernel launch, profkit against torch.profiler, in alternating processes.

gpu_vs_torch_profiler.py compares the two in one process, where torch.profiler
must run last: Kineto keeps CUPTI attached after its first use. Here each
profiler gets its own fresh processes, one after the other, pair after pair,
the order swapped from pair to pair. Each process takes turns between its
profiler and runs without one (the launch-bound loop of
gpu_vs_torch_profiler.py) and reports the median over its rounds of
(profiler - no profiler) per launch; this script reports the median over
processes. Drift slower than one process is thus taken out, and both
profilers see the same spread of it.

Each process also times runs before its profiler's first use. On the H200,
launches without a profiler were 1.8-4.8 us slower in torch.profiler's
processes than in profkit's (in 11 pairs of 12): Kineto stays attached to
CUPTI once used, where profkit lets go when it stops. torch.profiler's
overhead, set against its own process's later runs without a profiler,
leaves that cost out; each profiler's time set against the runs before its
first use (", over the runs before its first use") counts it.

profkit processes time two configurations: GPU tracing alone through the
engine, and a profkit.Profiler with the PyTorch integration on (operators
too, as torch.profiler records them).

With --smoke, or where there is no CUDA GPU, no PyTorch or no profkit GPU
tracing, it prints one line saying why it skipped and exits 0.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_vs_torch_profiler as launches  # noqa: E402

SCRIPT = "gpu_launch_overhead_processes"
SIDES = ("profkit", "torch.profiler")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CI mode: skip (this benchmark needs a GPU)")
    p.add_argument("--pairs", type=int, default=5, help="pairs of processes (one of each profiler)")
    p.add_argument("--launches", type=int, default=20000, help="launches in the launch-bound loop")
    p.add_argument("--rounds", type=int, default=7, help="rounds in each process (medians taken)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process's one profiler
    return p.parse_args()


def profkit_configs(torch, _C, x, n):
    def gpu_tracing_alone():
        seconds, seen = launches.launch_loop_traced(torch, _C, x, n)
        if seen != n:
            raise RuntimeError(f"profkit saw {seen} of {n} kernels")
        return seconds

    launches.launch_loop_under_profkit(torch, x, n)  # the hook's build and first use, not timed
    return {
        "profkit GPU tracing": gpu_tracing_alone,
        "profkit Profiler + torch integration": lambda: launches.launch_loop_under_profkit(torch, x, n)[0],
    }


def torch_profiler_configs(torch, x, n):
    launches.launch_loop_under_torch_profiler(torch, x, n)  # its first use, not timed
    return {"torch.profiler": lambda: launches.launch_loop_under_torch_profiler(torch, x, n)}


def child(args):
    """One process, one profiler: prints its overheads as one JSON line."""
    torch, _C, _ = launches.require_gpu_tracing(False, SCRIPT)
    n = args.launches
    x = torch.zeros(1, device="cuda")
    for _ in range(3):  # CUDA context, allocator
        launches.launch_loop(torch, x, 1000)
    # Before the profiler's first use, which may leave work behind.
    before_first_use = statistics.median(launches.launch_loop(torch, x, n) for _ in range(3))
    configs = {"no profiler": lambda: launches.launch_loop(torch, x, n)}
    if args.side == "profkit":
        configs.update(profkit_configs(torch, _C, x, n))
    else:
        configs.update(torch_profiler_configs(torch, x, n))
    times = launches.take_turns(configs, args.rounds)
    profilers = [name for name in configs if name != "no profiler"]
    figures = {name: launches.overhead_ns_per_launch(times, name, n) for name in profilers}
    for name in profilers:  # what the profiler costs against a process that never used it
        over_fresh = statistics.median(times[name]) - before_first_use
        figures[f"{name}, over the runs before its first use"] = over_fresh / n * 1e9
    figures["no profiler"] = statistics.median(times["no profiler"]) / n * 1e9
    figures["no profiler, before the first use"] = before_first_use / n * 1e9
    print(json.dumps(figures))
    return 0


def run_child(args, side):
    command = [sys.executable, os.path.abspath(__file__), "--side", side,
               "--launches", str(args.launches), "--rounds", str(args.rounds)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"{SCRIPT}: the {side} process failed (exit status {done.returncode}); its output is above")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    args = parse_args()
    if args.side is not None:
        return child(args)
    torch, _, reason = launches.require_gpu_tracing(args.smoke, SCRIPT)
    device = torch.cuda.get_device_name()
    per_process = {}
    for pair in range(args.pairs):
        order = SIDES if pair % 2 == 0 else SIDES[::-1]
        for side in order:
            figures = run_child(args, side)
            # As it comes: a run cut short still leaves its processes' figures.
            print(f"pair {pair + 1}, {side}: " + ", ".join(f"{name} {ns:.0f} ns" for name, ns in figures.items()),
                  flush=True)
            for name, ns in figures.items():
                key = f"{name}, {side} processes" if name.startswith("no profiler") else name
                per_process.setdefault(key, []).append(ns)
    medians = {name: statistics.median(values) for name, values in per_process.items()}
    print(f"device: {device}, torch {torch.__version__}, {reason}")
    print(f"{args.pairs} pairs of processes, {args.rounds} rounds x {args.launches} launches in each")
    for name, values in per_process.items():
        plain = name.startswith("no profiler") or name.endswith("first use")
        what = "ns a launch" if plain else "ns a launch over no profiler"
        print(f"  {name}: median {medians[name]:.0f} {what} (processes: {', '.join(f'{v:.0f}' for v in values)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "torch": torch.__version__, "profkit_gpu": reason, "pairs": args.pairs,
                       "rounds": args.rounds, "launches": args.launches, "per_process_ns": per_process,
                       "median_ns": medians}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
