#!/usr/bin/env python3
"""profkit's GPU tracing next to torch.profiler, on a real NVIDIA GPU.

1. Launch-bound loop: N tiny kernel launches (``x.add_(1)`` on one element),
   timed without a profiler, under profkit and under torch.profiler (CPU +
   CUDA activities). profkit runs twice: GPU tracing alone through the
   engine (CUDA runtime calls and kernels), and as users run it, a
   ``profkit.Profiler`` with the PyTorch integration on (operators too, the
   same as torch.profiler records). Reports the overhead per launch of each
   (goal: profkit's <= torch.profiler's) and checks that profkit saw every
   launch.
2. A real PyTorch CUDA workload (a small conv net's training steps): the same
   steps under profkit and under torch.profiler; compares the number of
   kernels and the total kernel time, and counts the kernels profkit tied to
   the operator that launched them.

profkit runs first: torch.profiler (Kineto) keeps CUPTI attached after its
first use, and only one CUPTI subscriber may trace a process at a time.

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


def skip(reason):
    print(f"gpu_vs_torch_profiler: skipped: {reason}")
    sys.exit(0)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CI mode: skip (this benchmark needs a GPU)")
    p.add_argument("--launches", type=int, default=20000, help="launches in the launch-bound loop")
    p.add_argument("--repeats", type=int, default=5, help="repeats of each timing (median taken)")
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


def kernels_in_profkit_result(result):
    from profkit import _records

    events = _records.view(result.device_events, _records.DEVICE_EVENT)
    kernels = events[events["type"] == KERNEL]
    return len(kernels), int((kernels["end_ns"] - kernels["start_ns"]).sum())


def kernels_under_operators(result):
    """Kernels whose launching runtime call sits inside an operator, and
    for the others, how many of each (kernel, what encloses its launch)."""
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
        around = "no launch" if launch == NO_EVENT else "nothing"
        if parent is not None:
            around = f"type {int(host[parent]['type'])} {strings[host[parent]['name']]}"
        others[f"{strings[kernel['name']][:60]} <- {around}"] += 1
    return tied, dict(others)


def profkit_as_users_run_it(torch, x, n, repeats, step, steps):
    """The launch loop and the workload under ``profkit.Profiler`` with the
    PyTorch integration: operators, CUDA runtime calls and GPU activity."""
    import profkit
    from profkit.integrations import torch as pk_torch

    times, counts = [], []
    with pk_torch.enable():
        with profkit.Profiler(on_trace_ready=lambda p: None):
            launch_loop(torch, x, 1000)  # the hook's and CUPTI's first use
        for _ in range(repeats):
            with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
                times.append(launch_loop(torch, x, n))
            counts.append(kernels_in_profkit_result(prof.profiler_result.raw)[0])
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
    result = prof.profiler_result.raw
    kernels, _ = kernels_in_profkit_result(result)
    tied, others = kernels_under_operators(result)
    return times, counts, kernels, tied, others


def kernels_in_torch_trace(prof):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "torch_trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    kernels = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return len(kernels), int(sum(float(e.get("dur", 0)) for e in kernels) * 1000)


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


def main():
    args = parse_args()
    if args.smoke:
        skip("--smoke: this benchmark needs an NVIDIA GPU, PyTorch with CUDA and profkit GPU tracing")
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    if not torch.cuda.is_available():
        skip("no CUDA GPU (torch.cuda.is_available() is False)")
    from profkit import _C

    available, reason = _C.gpu_available()
    if not available:
        skip("profkit GPU tracing is unavailable: " + reason)

    n = args.launches
    x = torch.zeros(1, device="cuda")
    step = make_workload(torch)
    for _ in range(3):  # CUDA context, cuDNN autotuning, allocator
        launch_loop(torch, x, 1000)
        step()
    torch.cuda.synchronize()
    figures = {"device": torch.cuda.get_device_name(), "launches": n, "profkit_gpu": reason}

    baseline = statistics.median(launch_loop(torch, x, n) for _ in range(args.repeats))

    # ---- profkit ----
    _C.set_gpu_tracing(True)
    _C.set_state(READY)
    launch_loop(torch, x, 1000)  # CUPTI's first-use cost, absorbed while armed
    profkit_times, profkit_counts = [], []
    for _ in range(args.repeats):
        _C.set_state(RECORD)
        profkit_times.append(launch_loop(torch, x, n))
        _C.set_state(READY)
        count, _ = kernels_in_profkit_result(_C.collect())
        profkit_counts.append(count)
    for _ in range(args.steps):  # the workload, same steps as torch.profiler's below
        step()
    torch.cuda.synchronize()
    _C.set_state(RECORD)
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    _C.set_state(CLOSED)
    profkit_kernels, profkit_kernel_ns = kernels_in_profkit_result(_C.collect())
    _C.set_gpu_tracing(False)
    torch.cuda.synchronize()  # the next CUDA call lets CUPTI detach
    after = statistics.median(launch_loop(torch, x, n) for _ in range(args.repeats))
    full_times, full_counts, full_kernels, full_tied, full_others = profkit_as_users_run_it(
        torch, x, n, args.repeats, step, args.steps
    )

    # ---- torch.profiler ----
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities):
        launch_loop(torch, x, 1000)  # its first-use cost too
    torch_times = []
    for _ in range(args.repeats):
        with profile(activities=activities):
            torch_times.append(launch_loop(torch, x, n))
    with profile(activities=activities) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    torch_kernels, torch_kernel_ns = kernels_in_torch_trace(prof)

    per_launch = lambda t: (t - baseline) / n * 1e9  # noqa: E731
    figures.update(
        {
            "baseline_ns_per_launch": baseline / n * 1e9,
            "profkit_overhead_ns_per_launch": per_launch(statistics.median(profkit_times)),
            "torch_profiler_overhead_ns_per_launch": per_launch(statistics.median(torch_times)),
            "after_profkit_overhead_ns_per_launch": per_launch(after),
            "profkit_profiler_overhead_ns_per_launch": per_launch(statistics.median(full_times)),
            "profkit_kernels_seen_per_loop": profkit_counts,
            "profkit_profiler_kernels_seen_per_loop": full_counts,
            "profkit_profiler_workload_kernels": full_kernels,
            "profkit_profiler_workload_kernels_under_operators": full_tied,
            "profkit_profiler_workload_kernels_elsewhere": full_others,
            "workload_steps": args.steps,
            "profkit_kernels": profkit_kernels,
            "torch_profiler_kernels": torch_kernels,
            "profkit_kernel_ms": profkit_kernel_ns / 1e6,
            "torch_profiler_kernel_ms": torch_kernel_ns / 1e6,
        }
    )
    print(f"device: {figures['device']}")
    print(f"launch-bound loop, {n} launches: {figures['baseline_ns_per_launch']:.0f} ns per launch without a profiler")
    print(f"  overhead per launch: profkit GPU tracing {figures['profkit_overhead_ns_per_launch']:.0f} ns, "
          f"profkit Profiler + torch integration {figures['profkit_profiler_overhead_ns_per_launch']:.0f} ns, "
          f"torch.profiler {figures['torch_profiler_overhead_ns_per_launch']:.0f} ns, "
          f"after profkit stopped {figures['after_profkit_overhead_ns_per_launch']:.0f} ns")
    print(f"  kernels profkit saw per loop: {profkit_counts}, with the Profiler {full_counts} (expected {n} each)")
    print(f"workload, {args.steps} training steps: kernels profkit {profkit_kernels} / torch.profiler {torch_kernels}; "
          f"kernel time profkit {figures['profkit_kernel_ms']:.3f} ms / torch.profiler "
          f"{figures['torch_profiler_kernel_ms']:.3f} ms")
    print(f"  with profkit.Profiler + torch integration: {full_kernels} kernels, {full_tied} under the operator "
          "that launched them")
    for kernel, count in full_others.items():
        print(f"    not under an operator: {count} x {kernel}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    ok = (
        all(c == n for c in profkit_counts + full_counts)
        and profkit_kernels == torch_kernels == full_kernels
        and full_tied == full_kernels
    )
    if not ok:
        print("MISMATCH: profkit did not see the same kernels as torch.profiler / as were launched")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
