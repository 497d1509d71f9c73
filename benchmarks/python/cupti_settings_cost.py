#!/usr/bin/env python3
"""What each of profkit's CUPTI settings costs per kernel launch, on a real NVIDIA GPU.

On an H200, profkit's GPU tracing cost 2.8-3.4 us a launch against
torch.profiler's 2.7 us, although torch.profiler asks CUPTI for more
(BENCHMARKS.md, "GPU tracing"). This finds which setting makes the
difference: the launch-bound loop of gpu_vs_torch_profiler.py under profkit's
GPU tracing as it is, and with one setting changed at a time through CUPTI's
own API (ctypes on the libcupti profkit loaded), after profkit armed:

- "no driver calls": PROFKIT_CUPTI_DRIVER=0 (no callbacks on the driver's
  kernel launch calls, which tie cuBLAS's and Triton's kernels);
- "CUPTI's thread ids": cuptiSetThreadIdType(DEFAULT) instead of SYSTEM
  (gettid);
- "TSC timestamps": a timestamp callback that reads the TSC (as
  torch.profiler's does) instead of profkit's clock_gettime(CLOCK_MONOTONIC).
  The records then carry TSC ticks, so that window's GPU times are wrong:
  only its cost counts here.
- "all three": the three changes together.

The configurations take turns round after round; each one's cost is the
median over rounds of its time less the same round's run without a profiler.

With --smoke, or where there is no CUDA GPU, no PyTorch, no profkit GPU
tracing or no C compiler (for the TSC callback), it prints one line saying
why it skipped and exits 0.
"""

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_vs_torch_profiler as launches  # noqa: E402

RECORD, CLOSED = launches.RECORD, launches.CLOSED
THREAD_ID_TYPE_DEFAULT = 0
TSC_SOURCE = "#include <stdint.h>\n#include <x86intrin.h>\nuint64_t profkit_tsc(void) { return __rdtsc(); }\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="CI mode: skip (this benchmark needs a GPU)")
    p.add_argument("--launches", type=int, default=10000, help="launches in the launch-bound loop")
    p.add_argument("--rounds", type=int, default=15, help="rounds (medians taken)")
    return p.parse_args()


def loaded_cupti():
    """The libcupti profkit loaded (the process holds one copy)."""
    for soname in ("libcupti.so.13", "libcupti.so.12"):
        try:
            cupti = ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            continue
        cupti.cuptiSetThreadIdType.argtypes = [ctypes.c_int]
        cupti.cuptiActivityRegisterTimestampCallback.argtypes = [ctypes.c_void_p]
        return cupti
    launches.skip("no libcupti is loaded in this process", "cupti_settings_cost")


def tsc_function(workdir):
    """A C function that returns the TSC, built with the system compiler."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        launches.skip("no C compiler (cc) to build the TSC timestamp callback", "cupti_settings_cost")
    source = os.path.join(workdir, "tsc.c")
    library = os.path.join(workdir, "libtsc.so")
    with open(source, "w") as f:
        f.write(TSC_SOURCE)
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return ctypes.cast(ctypes.CDLL(library).profkit_tsc, ctypes.c_void_p)


def main():
    args = parse_args()
    torch, _C, reason = launches.require_gpu_tracing(args.smoke, "cupti_settings_cost")
    _C.set_gpu_tracing(True)  # loads libcupti
    _C.set_gpu_tracing(False)
    cupti = loaded_cupti()

    with tempfile.TemporaryDirectory() as workdir:
        tsc = tsc_function(workdir)
        n = args.launches
        x = torch.zeros(1, device="cuda")
        for _ in range(3):
            launches.launch_loop(torch, x, 1000)

        def traced(driver="", *changes):
            _C.set_gpu_tracing(True)  # attaches: thread id type and timestamp callback set
            for change in changes:
                status = change()
                if status != 0:
                    raise RuntimeError(f"CUPTI refused the change: CUptiResult {status}")
            launches.arm(_C, driver)
            launches.launch_loop(torch, x, 100)
            _C.set_state(RECORD)
            seconds = launches.launch_loop(torch, x, n)
            _C.set_state(CLOSED)
            _C.collect()
            _C.set_gpu_tracing(False)
            return seconds

        def default_thread_ids():
            return cupti.cuptiSetThreadIdType(THREAD_ID_TYPE_DEFAULT)

        def tsc_timestamps():
            return cupti.cuptiActivityRegisterTimestampCallback(tsc)

        configs = {
            "no profiler": lambda: launches.launch_loop(torch, x, n),
            "profkit as it is": traced,
            "no driver calls": lambda: traced("0"),
            "CUPTI's thread ids": lambda: traced("", default_thread_ids),
            "TSC timestamps": lambda: traced("", tsc_timestamps),
            "all three": lambda: traced("0", default_thread_ids, tsc_timestamps),
        }
        times = launches.take_turns(configs, args.rounds)

    print(f"device: {torch.cuda.get_device_name()}, {reason}")
    print(f"{n} launches x {args.rounds} rounds; without a profiler "
          f"{statistics.median(times['no profiler']) / n * 1e9:.0f} ns a launch")
    for name in configs:
        if name != "no profiler":
            print(f"  {name}: {launches.overhead_ns_per_launch(times, name, n):.0f} ns a launch over no profiler")
    return 0


if __name__ == "__main__":
    sys.exit(main())
