"""Profile several ranges of batches: one trace file per range.

make_scheduler(closed=1, ready=1, record=4, repeat=3) records batches 2-5,
8-11 and 14-17; each range ends with a RECORD_AND_RETURN step, which hands the
trace to on_trace_ready, so three files are written.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

exporter = profiler.export_chrome_tracing("./profiler_log")
scheduler = profiler.make_scheduler(closed=1, ready=1, record=4, repeat=3)
with profiler.Profiler(scheduler=scheduler, on_trace_ready=exporter) as prof:
    for x, y in random_batches(20):
        model.train_step(x, y)
        prof.step()

for path in exporter.paths:
    print(f"timeline: {path}")
