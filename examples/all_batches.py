"""Profile every batch: scheduler=None records from start to stop.

The trace is handed to on_trace_ready when the Profiler stops (here: when the
with block ends) and written as one Chrome trace.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

exporter = profiler.export_chrome_tracing("./profiler_log")
with profiler.Profiler(on_trace_ready=exporter) as prof:  # scheduler=None: every batch
    for x, y in random_batches(8):
        model.train_step(x, y)
        prof.step()

print(prof.profiler_result)
print(f"timeline: {exporter.paths[0]}")
