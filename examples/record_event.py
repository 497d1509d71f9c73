"""Mark your own ranges with RecordEvent inside the training loop.

As a context manager, or with begin()/end() where a block does not fit.
wrap_dataloader() marks each batch fetch as a Dataloader event (and feeds the
reader cost of step_info). Outside a recording window RecordEvent costs well
under a microsecond, so the marks can stay in the code.
"""

import numpy as np

import profkit as profiler

rng = np.random.default_rng(0)
W1 = rng.standard_normal((128, 256)) * 0.01
W2 = rng.standard_normal((256, 10)) * 0.01


def loader(batches, batch_size=32):
    for _ in range(batches):
        yield rng.standard_normal((batch_size, 128)), rng.integers(0, 10, batch_size)


exporter = profiler.export_chrome_tracing("./profiler_log")
with profiler.Profiler(scheduler=(2, 5), on_trace_ready=exporter) as prof:
    for x, y in profiler.wrap_dataloader(loader(8)):
        with profiler.RecordEvent("forward", profiler.TracerEventType.Forward):
            h = np.maximum(x @ W1, 0.0)
            logits = h @ W2
        backward = profiler.RecordEvent("backward", profiler.TracerEventType.Backward)
        backward.begin()
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1.0
        grad_w2 = h.T @ p / len(y)
        with profiler.RecordEvent("relu_grad"):  # nested inside "backward"
            grad_h = (p @ W2.T) * (h > 0)
        grad_w1 = x.T @ grad_h / len(y)
        backward.end()
        with profiler.RecordEvent("sgd", profiler.TracerEventType.Optimization):
            W1 -= 0.1 * grad_w1
            W2 -= 0.1 * grad_w2
        prof.step(num_samples=len(y))

result = prof.profiler_result
print(result.event_counts())
for name, kind, calls, total_ns in result.top_events(5):
    print(f"{name:<16} {kind:<18} {calls:>3} calls {total_ns / 1e6:8.3f} ms")
print(f"timeline: {exporter.paths[0]}")
