"""Benchmark mode: time the steps without recording a trace.

timer_only=True measures each step's batch cost, the reader cost of the data
loading marked with wrap_dataloader (or dataloader_range), and throughput.
step_info() reports the averages since its last call; stop() prints the Perf
Summary of the run.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

with profiler.Profiler(timer_only=True) as prof:
    for i, (x, y) in enumerate(profiler.wrap_dataloader(random_batches(30))):
        model.train_step(x, y)
        prof.step(num_samples=len(y))
        if i % 10 == 0:
            print(f"step {i}: {prof.step_info(unit='samples')}")
