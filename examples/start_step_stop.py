"""Drive the Profiler by hand: start(), step() after every batch, stop().

The same as the context manager, for loops where a with block does not fit.
The latest trace stays available as prof.profiler_result after stop().
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

prof = profiler.Profiler(scheduler=[2, 6], on_trace_ready=profiler.export_chrome_tracing("./profiler_log"))
prof.start()
for x, y in random_batches(10):
    model.train_step(x, y)
    prof.step(num_samples=len(y))
prof.stop()

result = prof.profiler_result
print(f"recorded steps {result.steps}: {len(result)} events over {result.duration_ns / 1e6:.3f} ms")
prof.export("./profiler_log/start_step_stop.pktrace", format="pb")  # the same window, reloadable
