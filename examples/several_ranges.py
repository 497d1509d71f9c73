"""Profile several ranges of batches: one trace file per range.

make_scheduler(closed=1, ready=1, record=4, repeat=3) records batches 2-5,
8-11 and 14-17; each range ends with a RECORD_AND_RETURN step, which hands the
trace to on_trace_ready, so three files are written.
"""

import numpy as np

import profkit as profiler

rng = np.random.default_rng(0)
W1 = rng.standard_normal((128, 256)) * 0.01
W2 = rng.standard_normal((256, 10)) * 0.01


def train_step(x, y, lr=0.1):
    """One step of a two-layer MLP with softmax cross-entropy, in NumPy."""
    global W1, W2
    h = np.maximum(x @ W1, 0.0)
    logits = h @ W2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    grad_w2 = h.T @ p / len(y)
    grad_w1 = x.T @ ((p @ W2.T) * (h > 0)) / len(y)
    W1 -= lr * grad_w1
    W2 -= lr * grad_w2


exporter = profiler.export_chrome_tracing("./profiler_log")
scheduler = profiler.make_scheduler(closed=1, ready=1, record=4, repeat=3)
with profiler.Profiler(scheduler=scheduler, on_trace_ready=exporter) as prof:
    for batch in range(20):
        x, y = rng.standard_normal((32, 128)), rng.integers(0, 10, 32)
        train_step(x, y)
        prof.step()

for path in exporter.paths:
    print(f"timeline: {path}")
