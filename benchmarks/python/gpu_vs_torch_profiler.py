#!/usr/bin/env python3
"""profkit's GPU tracing next to torch.profiler, on a real NVIDIA GPU.

1. Launch-bound loop: N tiny kernel launches (``x.add_(1)`` on one element),
   timed without a profiler, under profkit and under torch.profiler (CPU +
   CUDA activities). profkit runs two ways: GPU tracing alone through the
   engine (CUDA runtime calls and kernels), and as users run it, a
   ``profkit.Profiler`` with the PyTorch integration on (operators too, as
   torch.profiler records them). The configurations take turns, round after
   round, and each one's overhead per launch is the median over rounds of its
   time less the same round's run without a profiler (goal: profkit's <=
   torch.profiler's). Checks that profkit saw every launch.
2. A real PyTorch CUDA workload (a small conv net's training steps): the same
   steps under profkit and under torch.profiler; compares the number of
   kernels and the total kernel time, and counts the kernels profkit tied to
   the operator that launched them. A kernel that is not tied is listed with
   the call that launched it according to torch.profiler.

profkit runs first: torch.profiler (Kineto) keeps CUPTI attached after its
first use, and only one CUPTI subscriber may trace a process at a time. So
torch.profiler's rounds come after profkit's, each with its own runs without
a profiler. Those runs pay for Kineto's lasting attach too (1.8-4.8 us a
launch on an H200), which torch.profiler's figure here thus leaves out;
gpu_launch_overhead_processes.py sets each profiler against a fresh process.

With --smoke, or where there is no CUDA GPU, no PyTorch, or no profkit GPU
tracing, it prints one line saying why it skipped and exits 0.
"""

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time

CLOSED, READY, RECORD = 0, 1, 2
KERNEL = 4
OPERATOR = 0
NO_EVENT = 2**64 - 1


def skip(reason, script="gpu_vs_torch_profiler"):
    print(f"{script}: skipped: {reason}")
    sys.exit(0)


def require_gpu_tracing(smoke, script="gpu_vs_torch_profiler"):
    """torch, profkit's _C and the tracer's description of what it found; or a
    one-line skip (exit 0) in CI mode or where GPU tracing cannot run."""
    if smoke:
        skip("--smoke: this benchmark needs an NVIDIA GPU, PyTorch with CUDA and profkit GPU tracing", script)
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed", script)
    if not torch.cuda.is_available():
        skip("no CUDA GPU (torch.cuda.is_available() is False)", script)
    from profkit import _C

    available, reason = _C.gpu_available()
    if not available:
        skip("profkit GPU tracing is unavailable: " + reason, script)
    return torch, _C, reason


def arm(_C, driver=""):
    """READY with $PROFKIT_CUPTI_DRIVER set to `driver` while the tracer arms
    (it reads the variable then), and as it was afterwards."""
    before = os.environ.get("PROFKIT_CUPTI_DRIVER")
    os.environ["PROFKIT_CUPTI_DRIVER"] = driver
    try:
        _C.set_state(READY)
    finally:
        if before is None:
            del os.environ["PROFKIT_CUPTI_DRIVER"]
        else:
            os.environ["PROFKIT_CUPTI_DRIVER"] = before


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CI mode: skip (this benchmark needs a GPU)")
    p.add_argument("--launches", type=int, default=20000, help="launches in the launch-bound loop")
    p.add_argument("--rounds", type=int, default=9, help="rounds of the launch-bound loop (medians taken)")
    p.add_argument("--steps", type=int, default=10, help="training steps of the workload that are profiled")
    p.add_argument("--json", help="also write the figures to this file")
    return p.parse_args()


def launch_loop(torch, x, n):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def launch_loop_traced(torch, _C, x, n, driver=""):
    """The launch loop under profkit's GPU tracing alone, through the engine
    ($PROFKIT_CUPTI_DRIVER as `driver` while it arms): (seconds, kernels seen)."""
    _C.set_gpu_tracing(True)
    arm(_C, driver)
    launch_loop(torch, x, 100)  # arming's first launches, not timed
    _C.set_state(RECORD)
    seconds = launch_loop(torch, x, n)
    _C.set_state(CLOSED)
    seen = kernels_in_profkit_result(_C.collect())[0]
    _C.set_gpu_tracing(False)
    return seconds, seen


def launch_loop_under_profkit(torch, x, n):
    """The launch loop under a profkit.Profiler with the PyTorch integration on,
    as users run it: (seconds, kernels seen)."""
    import profkit
    from profkit.integrations import torch as pk_torch

    with pk_torch.enable():
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            seconds = launch_loop(torch, x, n)
    return seconds, kernels_in_profkit_result(prof.profiler_result.raw)[0]


def launch_loop_under_torch_profiler(torch, x, n):
    """The launch loop under torch.profiler (CPU + CUDA activities): seconds."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        return launch_loop(torch, x, n)


def take_turns(configs, rounds):
    """Runs each configuration once per round, the order rotating from round
    to round; returns each one's times."""
    names = list(configs)
    times = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(configs[name]())
    return times


def overhead_ns_per_launch(times, name, n):
    """The median over rounds of (this configuration - no profiler), per launch."""
    return statistics.median((t - base) / n * 1e9 for t, base in zip(times[name], times["no profiler"]))


def kernels_in_profkit_result(result):
    from profkit import _records

    events = _records.view(result.device_events, _records.DEVICE_EVENT)
    kernels = events[events["type"] == KERNEL]
    return len(kernels), int((kernels["end_ns"] - kernels["start_ns"]).sum())


def kernels_under_operators(result):
    """Kernels whose launching runtime call sits inside an operator, and for
    the others, how many of each kernel name by what encloses its launch."""
    from profkit import _records

    host = _records.view(result.host_events, _records.HOST_EVENT)
    events = _records.view(result.device_events, _records.DEVICE_EVENT)
    strings = result.strings()
    tied, others = 0, collections.Counter()
    for kernel in events[events["type"] == KERNEL]:
        launch = int(kernel["launch_event"])
        parent = None if launch == NO_EVENT else result.parent(launch)
        if parent is not None and host[parent]["type"] == OPERATOR:
            tied += 1
            continue
        around = "no launch captured" if launch == NO_EVENT else "launched outside any event"
        if parent is not None:
            around = f"launched in a type-{int(host[parent]['type'])} event {strings[host[parent]['name']]}"
        others[(strings[kernel["name"]], around)] += 1
    return tied, others


def torch_trace(prof):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "torch_trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f).get("traceEvents", [])


def kernels_in_torch_trace(trace):
    kernels = [e for e in trace if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return len(kernels), int(sum(float(e.get("dur", 0)) for e in kernels) * 1000)


def torch_launch_calls(trace):
    """Kernel name -> Counter of the CUDA calls torch.profiler says launched it."""
    calls = {
        e.get("args", {}).get("correlation"): e["name"]
        for e in trace
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
    }
    launched_by = collections.defaultdict(collections.Counter)
    for e in trace:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            launched_by[e["name"]][calls.get(e.get("args", {}).get("correlation"), "none")] += 1
    return launched_by


def make_workload(torch):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 10),
    ).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(64, 3, 32, 32, device="cuda")
    target = torch.randint(0, 10, (64,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    return step


def run_steps(torch, step, steps):
    for _ in range(steps):
        step()
    torch.cuda.synchronize()


def profkit_rounds(torch, x, n, rounds, step, steps):
    """profkit's turns against runs without a profiler, and its workload windows."""
    import profkit
    from profkit import _C
    from profkit.integrations import torch as pk_torch

    seen = {"GPU tracing": [], "GPU tracing, no driver calls": [], "Profiler": []}

    def counted(seen_as, run):
        seconds, kernels = run()
        seen[seen_as].append(kernels)
        return seconds

    configs = {
        "no profiler": lambda: launch_loop(torch, x, n),
        "profkit GPU tracing": lambda: counted("GPU tracing", lambda: launch_loop_traced(torch, _C, x, n)),
        # What asking CUPTI for the driver's launch calls costs (on CUDA 13.0
        # they wrote no record: BENCHMARKS.md, "GPU tracing").
        "profkit GPU tracing, no driver calls": lambda: counted(
            "GPU tracing, no driver calls", lambda: launch_loop_traced(torch, _C, x, n, driver="0")
        ),
        "profkit Profiler + torch integration": lambda: counted(
            "Profiler", lambda: launch_loop_under_profkit(torch, x, n)
        ),
    }
    launch_loop_under_profkit(torch, x, n)  # the hook's build and first use, not timed
    times = take_turns(configs, rounds)

    _C.set_gpu_tracing(True)
    _C.set_state(RECORD)
    run_steps(torch, step, steps)
    _C.set_state(CLOSED)
    gpu_alone = kernels_in_profkit_result(_C.collect())
    _C.set_gpu_tracing(False)
    with pk_torch.enable():
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            run_steps(torch, step, steps)
    result = prof.profiler_result.raw
    return times, seen, gpu_alone, kernels_in_profkit_result(result), kernels_under_operators(result)


def torch_profiler_rounds(torch, x, n, rounds, step, steps):
    from torch.profiler import ProfilerActivity, profile

    launch_loop_under_torch_profiler(torch, x, 1000)  # its first use, not timed
    configs = {
        "no profiler": lambda: launch_loop(torch, x, n),
        "torch.profiler": lambda: launch_loop_under_torch_profiler(torch, x, n),
    }
    times = take_turns(configs, rounds)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run_steps(torch, step, steps)
    return times, torch_trace(prof)


def main():
    args = parse_args()
    torch, _C, reason = require_gpu_tracing(args.smoke)

    n = args.launches
    x = torch.zeros(1, device="cuda")
    step = make_workload(torch)
    for _ in range(3):  # CUDA context, cuDNN autotuning, allocator
        launch_loop(torch, x, 1000)
        step()
    torch.cuda.synchronize()
    before = statistics.median(launch_loop(torch, x, n) for _ in range(3))

    profkit_times, seen, gpu_alone, with_profiler, (tied, untied) = profkit_rounds(
        torch, x, n, args.rounds, step, args.steps
    )
    torch_times, trace = torch_profiler_rounds(torch, x, n, args.rounds, step, args.steps)
    torch_kernels = kernels_in_torch_trace(trace)
    launched_by = torch_launch_calls(trace)

    figures = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "profkit_gpu": reason,
        "launches": n,
        "rounds": args.rounds,
        "ns_per_launch_before_any_profiler": before / n * 1e9,
        "ns_per_launch_no_profiler_beside_profkit": statistics.median(profkit_times["no profiler"]) / n * 1e9,
        "ns_per_launch_no_profiler_beside_torch_profiler": statistics.median(torch_times["no profiler"]) / n * 1e9,
        "overhead_ns_per_launch": {
            "profkit GPU tracing": overhead_ns_per_launch(profkit_times, "profkit GPU tracing", n),
            "profkit GPU tracing, no driver calls": overhead_ns_per_launch(
                profkit_times, "profkit GPU tracing, no driver calls", n
            ),
            "profkit Profiler + torch integration": overhead_ns_per_launch(
                profkit_times, "profkit Profiler + torch integration", n
            ),
            "torch.profiler": overhead_ns_per_launch(torch_times, "torch.profiler", n),
        },
        "kernels_profkit_saw_per_loop": seen,
        "workload_steps": args.steps,
        "workload_kernels": {
            "profkit GPU tracing": gpu_alone[0],
            "profkit Profiler + torch integration": with_profiler[0],
            "torch.profiler": torch_kernels[0],
        },
        "workload_kernel_ms": {
            "profkit GPU tracing": gpu_alone[1] / 1e6,
            "profkit Profiler + torch integration": with_profiler[1] / 1e6,
            "torch.profiler": torch_kernels[1] / 1e6,
        },
        "workload_kernels_under_their_operator": tied,
        "workload_kernels_not_under_an_operator": [
            {"kernel": name, "profkit": around, "count": count, "torch.profiler launch": dict(launched_by.get(name, {}))}
            for (name, around), count in untied.items()
        ],
    }
    print(f"device: {figures['device']}, torch {figures['torch']}")
    print(f"launch-bound loop, {n} launches, {args.rounds} rounds: without a profiler "
          f"{figures['ns_per_launch_no_profiler_beside_profkit']:.0f} ns per launch beside profkit's rounds, "
          f"{figures['ns_per_launch_no_profiler_beside_torch_profiler']:.0f} ns beside torch.profiler's "
          f"({figures['ns_per_launch_before_any_profiler']:.0f} ns before any profiler)")
    for name, ns in figures["overhead_ns_per_launch"].items():
        print(f"  overhead per launch, {name}: {ns:.0f} ns")
    print(f"  kernels profkit saw per loop: {seen} (expected {n} each)")
    print(f"workload, {args.steps} training steps:")
    for name, count in figures["workload_kernels"].items():
        print(f"  {name}: {count} kernels, {figures['workload_kernel_ms'][name]:.3f} ms of kernel time")
    print(f"  {tied} of profkit's kernels sit under the operator that launched them")
    for row in figures["workload_kernels_not_under_an_operator"]:
        print(f"    not under an operator: {row['count']} x {row['kernel'][:80]}: {row['profkit']}; "
              f"torch.profiler's launch: {row['torch.profiler launch']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    counts = figures["workload_kernels"].values()
    ok = all(c == n for per_loop in seen.values() for c in per_loop) and len(set(counts)) == 1
    if not ok:
        print("MISMATCH: profkit did not see every launch, or the profilers saw different kernels")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
