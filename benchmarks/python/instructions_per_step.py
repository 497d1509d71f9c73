"""Instructions per training step under each profiler, counted by callgrind.

Wall-clock overheads on a shared 2-vCPU VM move by +-0.03 ms per step from
run to run (see BENCHMARKS.md, "PyTorch"), more than most changes to
profkit's hot path. Instruction counts do not: this script runs the same
PyTorch loop as vs_torch_profiler.py under valgrind's callgrind, once per
configuration, and counts the instructions (and, with --cache-sim, the
simulated L1 misses; with --branch-sim, the simulated branch
mispredictions) of the measured steps only:

- baseline: no profiler;
- clock callback: RecordFunction callbacks that only read the clock (what
  any profiler timing operators through RecordFunction pays at least);
- torch.profiler: ``activities=[CPU]``;
- profkit: a Profiler window with the PyTorch integration (native hook).

Instructions are not time -- profkit's hot path is cache misses and clock
reads more than instructions -- but they are exact and repeatable, so they
show what a change to the hot path did when timings cannot.

Needs valgrind (with its headers, valgrind/callgrind.h) and a C compiler;
without them it says so and exits 0. Reproduce:
``python benchmarks/python/instructions_per_step.py --workload mlp``
(about a minute per configuration).
"""

import argparse
import contextlib
import ctypes
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = ("baseline", "clock callback", "torch.profiler", "profkit")

# Client requests that switch callgrind's counting on and off around the
# measured steps (importing torch alone is billions of instructions).
TOGGLE_SOURCE = r"""
#include <valgrind/callgrind.h>
void pk_bench_count_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void pk_bench_count_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("measured steps"); }
"""


def missing_tools():
    """Why this machine cannot count (None when it can)."""
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def build_toggle(out_dir):
    source = os.path.join(out_dir, "toggle.c")
    library = os.path.join(out_dir, "libtoggle.so")
    with open(source, "w") as f:
        f.write(TOGGLE_SOURCE)
    done = subprocess.run(["cc", "-O2", "-shared", "-fPIC", source, "-o", library], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"cannot build the callgrind toggle (valgrind's headers missing?): {done.stderr.strip()}"
    return library, None


# ---- child: one configuration, run under callgrind ----------------------------------------
def child(args):
    import torch

    sys.path.insert(0, HERE)
    import vs_torch_profiler as bench

    import profkit
    import profkit.integrations.torch as pk_torch

    torch.set_num_threads(1)
    toggle = ctypes.CDLL(args.toggle)
    run = bench.make_workload(torch, args.workload, args.steps)
    events = None

    def measure(step_done):
        for _ in range(3):  # warm-up: allocator, kernels, first-use paths
            run(step_done)
        import gc

        gc.collect()
        gc.disable()  # a collection would land in one configuration only
        toggle.pk_bench_count_start()
        run(step_done)
        toggle.pk_bench_count_stop()
        gc.enable()

    if args.child == "baseline":
        measure(lambda: None)
    elif args.child == "clock callback":
        empty = bench.build_empty_callback(args.out_dir)
        empty.install(True)
        measure(lambda: None)
        empty.uninstall()
    elif args.child == "torch.profiler":
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU])
        prof.start()
        measure(prof.step)
        prof.stop()
    else:
        pk_torch.enable()
        with contextlib.redirect_stdout(io.StringIO()):  # the Perf Summaries
            # A first window as long as the measured one maps the record
            # chunks; the measured window reuses them, as every window after
            # the first does in a scheduled run.
            for window in ("warm-up", "measured"):
                prof = profkit.Profiler(on_trace_ready=lambda p: None)
                prof.start()
                if window == "measured":
                    measure(prof.step)
                else:
                    for _ in range(4):
                        run(prof.step)
                prof.stop()
        # The measured window ran four passes of --steps steps: three warm-up, one counted.
        events = int(prof.profiler_result.info["host_event_count"]) / (4 * args.steps)
        pk_torch.disable()
    with open(os.path.join(args.out_dir, "events.json"), "w") as f:
        json.dump({"events_per_step": events}, f)


# ---- parent: one callgrind run per configuration -------------------------------------------
def read_totals(path):
    """The event names and totals of a callgrind dump."""
    names, totals = None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("totals:", "summary:")):
                totals = [int(x) for x in line.split()[1:]]
    if names is None or totals is None:
        raise RuntimeError(f"{path}: no totals in this callgrind dump")
    return dict(zip(names, totals))


def count(config, args, toggle, out_dir):
    dump = os.path.join(out_dir, re.sub(r"\W", "_", config) + ".callgrind")
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={dump}",
        *(["--cache-sim=yes"] if args.cache_sim else []),
        *(["--branch-sim=yes"] if args.branch_sim else []),
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        config,
        "--workload",
        args.workload,
        "--steps",
        str(args.steps),
        "--toggle",
        toggle,
        "--out-dir",
        out_dir,
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    dumps = sorted(p for p in os.listdir(out_dir) if p.startswith(os.path.basename(dump) + "."))
    if done.returncode != 0 or not dumps:
        raise RuntimeError(f"{config}: callgrind run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    totals = read_totals(os.path.join(out_dir, dumps[-1]))
    with open(os.path.join(out_dir, "events.json")) as f:
        events = json.load(f)["events_per_step"]
    return {k: v / args.steps for k, v in totals.items()}, events


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("ops", "mlp", "cnn"), default="mlp")
    parser.add_argument("--steps", type=int, default=10, help="measured steps per configuration")
    parser.add_argument("--cache-sim", action="store_true", help="also simulate L1/LL caches (slower)")
    parser.add_argument("--branch-sim", action="store_true", help="also simulate branch prediction (slower)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--smoke", action="store_true", help="check the tools and count the baseline's one step only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--toggle", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    reason = missing_tools()
    if reason is not None:
        print(f"instructions_per_step: skipped: {reason} (apt-get install valgrind)")
        return 0
    with tempfile.TemporaryDirectory(prefix="pk_instructions_") as out_dir:
        toggle, reason = build_toggle(out_dir)
        if toggle is None:
            print(f"instructions_per_step: skipped: {reason}")
            return 0
        results = {}
        if args.smoke:
            args.steps = 1
            totals, _ = count("baseline", args, toggle, out_dir)
            print(f"instructions_per_step --smoke: baseline {totals['Ir']:,.0f} instructions in one step")
            return 0
        for config in CONFIGS:
            totals, events = count(config, args, toggle, out_dir)
            results[config] = {"per_step": totals, "events_per_step": events}
            print(f"  {config:15s} {totals['Ir']:12,.0f} instructions per step", flush=True)
    base = results["baseline"]["per_step"]["Ir"]
    added = {c: results[c]["per_step"]["Ir"] - base for c in CONFIGS[1:]}
    print(f"== {args.workload}: instructions added per step (callgrind, {args.steps} steps) ==")
    for config in CONFIGS[1:]:
        print(f"  {config:15s} {added[config]:+12,.0f}")
    ratio = added["profkit"] / added["torch.profiler"]
    print(f"  profkit / torch.profiler = {ratio:.2f}")
    events = results["profkit"]["events_per_step"]
    above_clock = added["profkit"] - added["clock callback"]
    print(
        f"  profkit above the clock-only callback: {above_clock:+,.0f} per step"
        + (f", {above_clock / events:.0f} per event ({events:.0f} events per step)" if events else "")
    )
    if args.cache_sim:
        # Simulated misses: I1mr/D1mr/D1mw first-level (instruction, data read,
        # data write), ILmr/DLmr/DLmw last-level. Between two operators a
        # framework evicts most of L1i, so a profiler's per-event code costs
        # about one instruction-cache miss per line it spans.
        kinds = [k for k in ("I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw") if k in results["baseline"]["per_step"]]
        print("  cache misses added per step (simulated): " + ", ".join(kinds))
        for config in CONFIGS[1:]:
            per_step = results[config]["per_step"]
            misses = [per_step[k] - results["baseline"]["per_step"][k] for k in kinds]
            print(f"  {config:15s} " + " ".join(f"{m:+10,.0f}" for m in misses))
        if events:
            above = [
                (results["profkit"]["per_step"][k] - results["clock callback"]["per_step"][k]) / events for k in kinds
            ]
            print("  profkit above the clock-only callback, per event: "
                  + ", ".join(f"{k} {v:+.1f}" for k, v in zip(kinds, above)))
    if args.branch_sim:
        # Simulated mispredictions: Bcm conditional, Bim indirect branches.
        print("  branch mispredictions added per step (simulated): Bcm Bim")
        base_step = results["baseline"]["per_step"]
        for config in CONFIGS[1:]:
            per_step = results[config]["per_step"]
            print(f"  {config:15s} " + " ".join(f"{per_step[k] - base_step[k]:+10,.0f}" for k in ("Bcm", "Bim")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": args.workload, "steps": args.steps, "results": results, "ratio": ratio}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
