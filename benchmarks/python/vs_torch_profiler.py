#!/usr/bin/env python3
"""profkit next to torch.profiler on the CPU: step-time overhead, trace size, export time.

The same PyTorch training loop (a DataLoader over an in-memory dataset, the
model, the loss, backward, an SGD step) runs in one process under:

- nothing (the baseline),
- torch.profiler (``activities=[CPU]``), the same number of steps,
- profkit with its PyTorch integration (operator events from the native
  hook, Forward/Backward/Optimization/Dataloader events),
- profkit enabled but outside a recording window (what it costs between windows),
- with ``--floor``, an empty RecordFunction callback: what torch itself spends
  once anything observes its operators, the floor under both profilers; and
  a callback that only reads the clock at each begin and end: the least any
  profiler timing operators through RecordFunction can cost.

Configurations are interleaved round by round, in a rotating order (the
machine may be shared); each round runs ``--steps`` steps per configuration,
each configuration after a ``gc.collect()`` so that Python's garbage
collections fall at the same points of every configuration's steps.
A round's step time is the median of its steps. Overhead is paired: a
configuration's step time minus the baseline's in the same round, so slow
drifts of the machine's speed cancel; the figures are medians over rounds.
Each round also writes each profiler's trace: torch.profiler's
``export_chrome_trace`` against profkit's ``.pktrace`` save and Chrome JSON
export (and each one's stop/collect time); those figures are medians too.
It also times writing the Chrome JSON's bytes alone to a new file: the file
system's share of that export, which no JSON writer can go below.

Workloads: ``mlp`` (a training step on small matrices: dominated by
per-operator cost, where a profiler's overhead shows), ``cnn`` (the small
CIFAR-shaped CNN of examples/train_cifar_like.py, compute-bound) and ``ops``
(1000 tiny ``torch.add`` calls per "step", no autograd, no DataLoader: the
per-operator cost alone).

Goals: profkit's overhead <= 1/2 of torch.profiler's; its trace files <= 1/5
the size; export >= 10x faster.

    python benchmarks/python/vs_torch_profiler.py [--workload ops|mlp|cnn|all] [--rounds 21] [--floor] [--json F]
    python benchmarks/python/vs_torch_profiler.py --profile-memory   # both also record every allocation
    python benchmarks/python/vs_torch_profiler.py --with-flops       # both also count FLOPs
    python benchmarks/python/vs_torch_profiler.py --with-stack       # both also record Python calls
    python benchmarks/python/vs_torch_profiler.py --smoke    # CI: a few steps, checks it runs

Without PyTorch it prints why it skipped and exits 0.
"""

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time


def skip(reason):
    print(f"vs_torch_profiler: skipped: {reason}")
    sys.exit(0)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CI mode: tiny run that checks everything works")
    p.add_argument("--workload", choices=("ops", "mlp", "cnn", "all"), default="all")
    p.add_argument("--rounds", type=int, default=21, help="interleaved rounds (median taken)")
    p.add_argument("--steps", type=int, default=20, help="recorded steps per configuration and round")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: less noise)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--verbose", action="store_true", help="also print each round's step time")
    p.add_argument("--backend", choices=("native", "python"), default="native", help="profkit's operator recorder")
    p.add_argument(
        "--profile-memory",
        action="store_true",
        help="both profilers also record torch's allocations and frees (profile_memory=True)",
    )
    p.add_argument(
        "--with-flops",
        action="store_true",
        help="both profilers also count operators' FLOPs (with_flops=True)",
    )
    p.add_argument(
        "--with-stack",
        action="store_true",
        help="both profilers also record the Python calls (with_stack=True)",
    )
    p.add_argument(
        "--floor",
        action="store_true",
        help="also time an empty RecordFunction callback (torch's own cost of being observed; compiles ~5 s)",
    )
    return p.parse_args()


# ---- workloads ---------------------------------------------------------------------------
def time_steps(batches, train_step, step_done):
    """Runs ``train_step(batch)`` then ``step_done()`` for each batch; returns each step's seconds.

    Fetching the batch is part of its step, as in a training loop."""
    times = []
    start = time.perf_counter()
    for batch in batches:
        train_step(batch)
        step_done()
        now = time.perf_counter()
        times.append(now - start)
        start = now
    return times


def make_ops_loop(torch, steps):
    """1000 tiny additions per step, no autograd: nothing but per-operator cost."""
    a, b = torch.randn(4), torch.randn(4)

    def additions(_):
        c = a
        for _ in range(1000):
            c = torch.add(c, b)

    def run(step_done):
        return time_steps(range(steps), additions, step_done)

    return run


def make_workload(torch, kind, steps):
    nn = torch.nn
    torch.manual_seed(0)
    if kind == "ops":
        return make_ops_loop(torch, steps)
    if kind == "mlp":
        width, batch = 64, 16
        layers = []
        for _ in range(6):
            layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
        model = nn.Sequential(*layers, nn.Linear(width, 10))
        images = torch.randn(batch * steps, width)
    else:
        batch = 32
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )
        images = torch.randn(batch * steps, 3, 32, 32)
    labels = torch.randint(0, 10, (len(images),))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels), batch_size=batch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def train_step(batch):
        x, y = batch
        loss = loss_fn(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def run(step_done):
        """One pass over the loader (``steps`` steps); returns each step's seconds."""
        return time_steps(loader, train_step, step_done)

    return run


# ---- one round of each configuration ----------------------------------------------------
def run_baseline(run):
    return statistics.median(run(lambda: None)), None


def run_torch_profiler(torch, run, out_dir, **options):
    """One round under torch.profiler; ``options`` (profile_memory, with_flops, with_stack) go to it."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], **options)
    prof.start()
    times = run(prof.step)
    t0 = time.perf_counter()
    prof.stop()
    stopped = time.perf_counter() - t0
    path = os.path.join(out_dir, "torch_profiler.trace.json")
    t0 = time.perf_counter()
    prof.export_chrome_trace(path)
    exported = time.perf_counter() - t0
    return statistics.median(times), {
        "stop_s": stopped,
        "export_json_s": exported,
        "json_bytes": os.path.getsize(path),
        "events": sum(1 for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"),
    }


def run_profkit(pk_torch, profkit, run, out_dir, **options):
    """One round under profkit; ``options`` (profile_memory, with_flops, with_stack) go to its Profiler."""
    prof = profkit.Profiler(on_trace_ready=lambda p: None, **options)
    with contextlib.redirect_stdout(io.StringIO()):  # the Perf Summary
        prof.start()
        times = run(prof.step)
        t0 = time.perf_counter()
        prof.stop()
        stopped = time.perf_counter() - t0
    result = prof.profiler_result
    pktrace = os.path.join(out_dir, "profkit.pktrace")
    chrome = os.path.join(out_dir, "profkit.trace.json")
    t0 = time.perf_counter()
    result.save(pktrace)
    saved = time.perf_counter() - t0
    t0 = time.perf_counter()
    result.export_chrome_tracing(chrome)
    exported = time.perf_counter() - t0
    with open(chrome, "rb") as f:
        written = time_file_write(f.read(), os.path.join(out_dir, "write_floor.json"))
    return statistics.median(times), {
        "stop_s": stopped,
        "save_pktrace_s": saved,
        "export_json_s": exported,
        "write_json_bytes_s": written,
        "pktrace_bytes": os.path.getsize(pktrace),
        "json_bytes": os.path.getsize(chrome),
        "events": int(result.info["host_event_count"]),
    }


def time_file_write(data, path):
    """Seconds to write ``data`` to a new file renamed over ``path``, as profkit's exports write.

    The file system's share of an export: the kernel allocates and fills a
    page-cache page per 4 kB (and frees the replaced file's), which no
    formatter can go below. On the 2-vCPU VM it is most of the Chrome JSON
    export's time."""
    temp = path + ".tmp"
    t0 = time.perf_counter()
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)
    return time.perf_counter() - t0


EMPTY_CALLBACK_SOURCE = r"""
// at::RecordFunction callbacks for the two reference configurations:
// - install(False): callbacks that do nothing -- what torch itself spends per
//   operator once any profiler observes operators (the floor under both
//   torch.profiler's overhead and profkit's);
// - install(True): callbacks that only read the clock profkit reads (the TSC
//   on x86) at each begin and end, into a per-thread ring -- the least any
//   profiler that times operators through RecordFunction can cost.
#include <ATen/record_function.h>
#include <Python.h>
#include <chrono>
#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
namespace {
at::CallbackHandle handle = 0;
thread_local uint64_t ring[1024];
thread_local unsigned next = 0;
inline uint64_t now() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return std::chrono::steady_clock::now().time_since_epoch().count();
#endif
}
std::unique_ptr<at::ObserverContext> start(const at::RecordFunction&) { return nullptr; }
void end(const at::RecordFunction&, at::ObserverContext*) {}
std::unique_ptr<at::ObserverContext> start_clock(const at::RecordFunction&) {
  ring[next++ % 1024] = now();
  return nullptr;
}
void end_clock(const at::RecordFunction&, at::ObserverContext*) { ring[next++ % 1024] = now(); }
// One callback for both scopes, registered as profkit's hook registers its
// own: thread-locally, on the thread that runs the loop (torch's work per
// operator grows with the number of callbacks, and a global one makes every
// ThreadLocalStateGuard copy the global list).
PyObject* install(PyObject*, PyObject* clock) {
  const bool read_clock = PyObject_IsTrue(clock) == 1;
  auto callback = read_clock ? at::RecordFunctionCallback(start_clock, end_clock) : at::RecordFunctionCallback(start, end);
  handle = at::addThreadLocalCallback(callback.scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  Py_RETURN_NONE;
}
PyObject* uninstall(PyObject*, PyObject*) {
  if (handle) at::removeCallback(handle);
  handle = 0;
  Py_RETURN_NONE;
}
PyMethodDef methods[] = {{"install", install, METH_O, ""}, {"uninstall", uninstall, METH_NOARGS, ""},
                         {nullptr, nullptr, 0, nullptr}};
PyModuleDef module = {PyModuleDef_HEAD_INIT, "pk_bench_empty_callback", "", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};
}  // namespace
PyMODINIT_FUNC PyInit_pk_bench_empty_callback(void) { return PyModule_Create(&module); }
"""


def build_empty_callback(out_dir):
    from torch.utils import cpp_extension

    source = os.path.join(out_dir, "empty_callback.cpp")
    try:
        with open(source) as f:
            unchanged = f.read() == EMPTY_CALLBACK_SOURCE
    except OSError:
        unchanged = False
    if not unchanged:  # rewriting it would make the build start over (it goes by modification times)
        with open(source, "w") as f:
            f.write(EMPTY_CALLBACK_SOURCE)
    build = os.path.join(out_dir, "empty_callback_build")
    os.makedirs(build, exist_ok=True)
    # TLS descriptors, as profkit's hook and engine use: in a dlopen'd module
    # the default model calls __tls_get_addr on every access of the ring,
    # ~30 instructions a time, which the least-possible reference must not pay.
    cflags = ["-O2"] + (["-mtls-dialect=gnu2"] if platform.machine() in ("x86_64", "AMD64") else [])
    return cpp_extension.load(name="pk_bench_empty_callback", sources=[source], extra_cflags=cflags, build_directory=build)


def run_empty_callback(empty, run, read_clock=False):
    empty.install(read_clock)
    try:
        return statistics.median(run(lambda: None)), None
    finally:
        empty.uninstall()


def run_profkit_idle(run):
    return statistics.median(run(lambda: None)), None  # enabled, no window open


def benchmark(torch, profkit, pk_torch, kind, args, out_dir, empty=None):
    run = make_workload(torch, kind, args.steps)
    for _ in range(2):  # warm-up: allocator, oneDNN primitives, both profilers' first use
        run(lambda: None)
    options = {"profile_memory": args.profile_memory, "with_flops": args.with_flops, "with_stack": args.with_stack}
    run_torch_profiler(torch, run, out_dir, **options)
    pk_torch.enable(backend=args.backend)
    run_profkit(pk_torch, profkit, run, out_dir, **options)
    pk_torch.disable()

    names = ("baseline", "torch.profiler", "profkit", "profkit idle")
    if empty is not None:
        names += ("empty callback", "clock callback")
    steps = {name: [] for name in names}
    details = {}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]  # rotate: no configuration always first
        for name in order:
            # Every configuration starts from the same collected heap, so
            # Python's cyclic GC (whose collections cost up to milliseconds
            # with torch loaded) runs at the same points of each one's steps
            # instead of wherever the previous configuration left its counters.
            gc.collect()
            if name == "baseline":
                step, detail = run_baseline(run)
            elif name == "torch.profiler":
                step, detail = run_torch_profiler(torch, run, out_dir, **options)
            elif name == "profkit":
                pk_torch.enable(backend=args.backend)
                try:
                    step, detail = run_profkit(pk_torch, profkit, run, out_dir, **options)
                finally:
                    pk_torch.disable()
            elif name == "empty callback":
                step, detail = run_empty_callback(empty, run)
            elif name == "clock callback":
                step, detail = run_empty_callback(empty, run, read_clock=True)
            else:
                pk_torch.enable(backend=args.backend)
                try:
                    step, detail = run_profkit_idle(run)
                finally:
                    pk_torch.disable()
            steps[name].append(step)
            if detail is not None:
                details.setdefault(name, []).append(detail)
    med = {name: statistics.median(v) for name, v in steps.items()}
    # Overhead per round against the same round's baseline (run next to it):
    # slow drifts of the machine's speed cancel out.
    paired = {
        name: statistics.median(p - b for p, b in zip(steps[name], steps["baseline"]))
        for name in names
        if name != "baseline"
    }

    ratio_low, ratio_high = ratio_interval(
        [p - b for p, b in zip(steps["profkit"], steps["baseline"])],
        [t - b for t, b in zip(steps["torch.profiler"], steps["baseline"])],
    )

    def median_detail(name, key):
        return statistics.median(d[key] for d in details[name])

    figures = {
        "workload": kind,
        "profile_memory": args.profile_memory,
        "with_flops": args.with_flops,
        "with_stack": args.with_stack,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "step_ms": {name: med[name] * 1e3 for name in names},
        "step_ms_per_round": {name: [round(v * 1e3, 4) for v in steps[name]] for name in names},
        "overhead_ms": {name: paired[name] * 1e3 for name in paired},
        "ratio_interval_95": [ratio_low, ratio_high],
        "torch.profiler": {k: median_detail("torch.profiler", k) for k in details["torch.profiler"][0]},
        "profkit": {k: median_detail("profkit", k) for k in details["profkit"][0]},
    }
    return figures


def ratio_interval(profkit_overheads, torch_overheads, resamples=2000, seed=0):
    """A 95 % bootstrap interval for median(profkit) / median(torch.profiler) over rounds.

    Rounds are resampled whole (each keeps its two paired overheads), so the
    interval shows how much the ratio moves with which rounds the machine's
    noise happened to hit; a run's ratio alone does not say that.
    """
    pairs = list(zip(profkit_overheads, torch_overheads))
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        sample = [rng.choice(pairs) for _ in pairs]
        torch_median = statistics.median(t for _, t in sample)
        if torch_median > 0:
            ratios.append(statistics.median(p for p, _ in sample) / torch_median)
    if len(ratios) < resamples // 2:
        return float("nan"), float("nan")
    ratios.sort()
    return ratios[int(0.025 * (len(ratios) - 1))], ratios[int(0.975 * (len(ratios) - 1))]


def times(ratio, better, worse):
    """``ratio`` (torch.profiler's over profkit's) in words: "12.3x faster", or "0.79x, slower"."""
    return f"{ratio:.1f}x {better}" if ratio >= 1 else f"{ratio:.2f}x, {worse}"


def report(f, verbose=False):
    tp, pk = f["torch.profiler"], f["profkit"]
    ov = f["overhead_ms"]
    options = "".join(f", {name}" for name in ("profile_memory", "with_flops", "with_stack") if f.get(name))
    print(f"== {f['workload']}{options}: {f['steps_per_round']} steps x {f['rounds']} rounds, medians ==")
    print(f"step time: baseline {f['step_ms']['baseline']:.3f} ms")
    if verbose:
        for name, values in f["step_ms_per_round"].items():
            print(f"  per round, {name}: {' '.join(f'{v:.3f}' for v in values)}")
    for name in [n for n in f["overhead_ms"]]:
        pct = 100 * ov[name] / f["step_ms"]["baseline"]
        print(f"  {name:15s} {f['step_ms'][name]:8.3f} ms  overhead (paired) {ov[name]:+.3f} ms ({pct:+.1f} %)")
    ratio = ov["profkit"] / ov["torch.profiler"] if ov["torch.profiler"] > 0 else float("nan")
    low, high = f["ratio_interval_95"]
    print(
        f"  profkit overhead / torch.profiler overhead = {ratio:.2f}  (goal <= 0.50; "
        f"95 % bootstrap interval over rounds {low:.2f}-{high:.2f})"
    )
    if "empty callback" in ov:
        floor = ov["empty callback"]
        above = float("nan")
        if ov["torch.profiler"] > floor:
            above = (ov["profkit"] - floor) / (ov["torch.profiler"] - floor)
        print(
            f"  above torch's own RecordFunction cost (empty callback {floor:+.3f} ms): torch.profiler "
            f"{ov['torch.profiler'] - floor:+.3f} ms, profkit {ov['profkit'] - floor:+.3f} ms, ratio {above:.2f}"
        )
        least = ov["clock callback"] / ov["torch.profiler"] if ov["torch.profiler"] > 0 else float("nan")
        print(
            f"  the least a RecordFunction-based timing profiler can cost (callbacks that only read the clock): "
            f"{ov['clock callback']:+.3f} ms, {least:.2f} of torch.profiler's overhead"
        )
    print(f"events: torch.profiler {tp['events']:.0f}, profkit {pk['events']:.0f}")
    print(
        f"trace size: torch.profiler JSON {tp['json_bytes'] / 1e3:.1f} kB; profkit .pktrace "
        f"{pk['pktrace_bytes'] / 1e3:.1f} kB ({times(tp['json_bytes'] / pk['pktrace_bytes'], 'smaller', 'larger')}), "
        f"profkit JSON {pk['json_bytes'] / 1e3:.1f} kB ({times(tp['json_bytes'] / pk['json_bytes'], 'smaller', 'larger')})"
        "  (goal >= 5x)"
    )
    print(
        f"export: torch.profiler export_chrome_trace {tp['export_json_s'] * 1e3:.2f} ms; profkit .pktrace "
        f"{pk['save_pktrace_s'] * 1e3:.2f} ms ({times(tp['export_json_s'] / pk['save_pktrace_s'], 'faster', 'slower')}), "
        f"Chrome JSON {pk['export_json_s'] * 1e3:.2f} ms "
        f"({times(tp['export_json_s'] / pk['export_json_s'], 'faster', 'slower')})  (goal >= 10x)"
    )
    print(
        f"  of profkit's Chrome JSON export, writing its {pk['json_bytes'] / 1e3:.0f} kB to a new file alone "
        f"takes {pk['write_json_bytes_s'] * 1e3:.2f} ms here (the file system's share)"
    )
    print(f"stop (collect): torch.profiler {tp['stop_s'] * 1e3:.2f} ms; profkit {pk['stop_s'] * 1e3:.2f} ms")
    f["ratios"] = {
        "overhead_profkit_over_torch": ratio,
        "size_torch_json_over_pktrace": tp["json_bytes"] / pk["pktrace_bytes"],
        "size_torch_json_over_profkit_json": tp["json_bytes"] / pk["json_bytes"],
        "export_torch_over_pktrace": tp["export_json_s"] / pk["save_pktrace_s"],
        "export_torch_over_profkit_json": tp["export_json_s"] / pk["export_json_s"],
    }


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    import profkit
    import profkit.integrations.torch as pk_torch

    if args.smoke:
        args.rounds, args.steps = 1, 3
    torch.set_num_threads(args.threads)
    pk_torch.build()  # not timed: built once, cached
    workloads = ("ops", "mlp", "cnn") if args.workload == "all" else (args.workload,)
    all_figures = {"torch": torch.__version__, "threads": args.threads, "backend": args.backend, "workloads": []}
    with tempfile.TemporaryDirectory() as out_dir:
        empty = build_empty_callback(out_dir) if args.floor and not args.smoke else None
        for kind in workloads:
            figures = benchmark(torch, profkit, pk_torch, kind, args, out_dir, empty)
            report(figures, args.verbose)
            all_figures["workloads"].append(figures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
