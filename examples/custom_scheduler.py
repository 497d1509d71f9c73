"""A custom scheduler: any function from step number to ProfilerState.

Here: warm up for two steps, record steps 2-3 and return them, then record
steps 6-8 and return them. End every recorded range with RECORD_AND_RETURN
(going from RECORD straight to CLOSED also delivers the trace, with a
warning about the schedule).
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()


def my_scheduler(step: int) -> profiler.ProfilerState:
    if step in (1, 5):
        return profiler.ProfilerState.READY
    if step in (2, 6, 7):
        return profiler.ProfilerState.RECORD
    if step in (3, 8):
        return profiler.ProfilerState.RECORD_AND_RETURN
    return profiler.ProfilerState.CLOSED


exporter = profiler.export_chrome_tracing("./profiler_log")
with profiler.Profiler(scheduler=my_scheduler, on_trace_ready=exporter) as prof:
    for x, y in random_batches(10):
        model.train_step(x, y)
        prof.step()

for path in exporter.paths:
    print(f"timeline: {path}")
