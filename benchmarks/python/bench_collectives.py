"""Cost of profkit's torch.distributed wrappers, per call.

    python benchmarks/python/bench_collectives.py [--smoke] [--json]

On a 1-process gloo group (in-memory store): dist.all_reduce of a 16-float
tensor, blocking and async (+ wait), plain and wrapped (idle, recording);
and the wrapper alone around a function that does nothing, which is the
overhead without gloo's own cost. Median over repeats of (time of N calls)/N.
Skips (exit 0, a line saying why) without torch.
"""

import argparse
import json
import statistics
import time


def per_call(fn, n, repeats):
    samples = []
    for _ in range(repeats):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter_ns() - t) / n)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"bench_collectives: skipped: no PyTorch ({e})")
        return
    if not dist.is_available():
        print("bench_collectives: skipped: this PyTorch has no torch.distributed")
        return
    from profkit import _C
    from profkit.integrations import torch_distributed

    n, repeats = (200, 3) if args.smoke else (5000, 9)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    x = torch.ones(16)
    original = dist.all_reduce

    def nothing(tensor, op=None, group=None, async_op=False):
        return None

    wrapped_nothing = torch_distributed._make_wrapper("all_reduce", nothing, torch_distributed.COLLECTIVES["all_reduce"])
    rows = []

    def case(label, fn, recording):
        _C.set_state(2 if recording else 0)
        try:
            rows.append({"case": label, "ns_per_call": round(per_call(fn, n, repeats))})
        finally:
            _C.set_state(0)
            _C.collect()

    case("all_reduce, plain torch", lambda: original(x), False)
    case("wrapper around a no-op, idle", lambda: wrapped_nothing(x), False)
    case("wrapper around a no-op, recording", lambda: wrapped_nothing(x), True)
    torch_distributed.enable()
    try:
        case("all_reduce, wrapped, idle", lambda: dist.all_reduce(x), False)
        case("all_reduce, wrapped, recording", lambda: dist.all_reduce(x), True)
        case("all_reduce async + wait, wrapped, recording", lambda: dist.all_reduce(x, async_op=True).wait(), True)
        torch_distributed.wait_in_flight()
    finally:
        torch_distributed.disable()
        dist.destroy_process_group()
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(f"{r['case']:<48} {r['ns_per_call'] / 1000:>8.2f} us")


if __name__ == "__main__":
    main()
