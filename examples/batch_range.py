"""Profile a range of batches with the Profiler as a context manager.

paddle.profiler guide: "scheduler=(3, 7)" records batches 3, 4, 5 and 6 and
writes one Chrome trace when batch 6 ends. Open the file in
https://ui.perfetto.dev or chrome://tracing.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

exporter = profiler.export_chrome_tracing("./profiler_log")
with profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=(3, 7), on_trace_ready=exporter) as prof:
    for x, y in random_batches(10):
        model.train_step(x, y)
        prof.step()

print(f"recorded steps {prof.profiler_result.steps}")
print(f"timeline: {exporter.paths[0]}  (open it in https://ui.perfetto.dev)")
