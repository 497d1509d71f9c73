"""Profile every batch: scheduler=None records from start to stop.

The trace is handed to on_trace_ready when the Profiler stops (here: when the
with block ends) and written as one Chrome trace.
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
with profiler.Profiler(on_trace_ready=exporter) as prof:  # scheduler=None: every batch
    for batch in range(8):
        x, y = rng.standard_normal((32, 128)), rng.integers(0, 10, 32)
        train_step(x, y)
        prof.step()

print(prof.profiler_result)
print(f"timeline: {exporter.paths[0]}")
