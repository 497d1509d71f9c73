"""Mark your own ranges with RecordEvent inside the training loop.

As a context manager, or with begin()/end() where a block does not fit.
wrap_dataloader() marks each batch fetch as a Dataloader event (and feeds the
reader cost of step_info). Outside a recording window RecordEvent costs well
under a microsecond, so the marks can stay in the code.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()

exporter = profiler.export_chrome_tracing("./profiler_log")
with profiler.Profiler(scheduler=(2, 5), on_trace_ready=exporter) as prof:
    for x, y in profiler.wrap_dataloader(random_batches(8)):
        with profiler.RecordEvent("forward", profiler.TracerEventType.Forward):
            h, logits = model.forward(x)
        backward = profiler.RecordEvent("backward", profiler.TracerEventType.Backward)
        backward.begin()  # begin()/end() where a with block does not fit
        grads = model.backward(x, y, h, logits)
        with profiler.RecordEvent("check gradients"):  # nested inside "backward"
            assert all(g.shape == w.shape for g, w in zip(grads, (model.w1, model.w2)))
        backward.end()
        with profiler.RecordEvent("sgd", profiler.TracerEventType.Optimization):
            model.sgd(grads)
        prof.step(num_samples=len(y))

result = prof.profiler_result
print(result.event_counts())
for name, kind, calls, total_ns in result.top_events(5):
    print(f"{name:<16} {kind:<18} {calls:>3} calls {total_ns / 1e6:8.3f} ms")
print(f"timeline: {exporter.paths[0]}")
