"""A custom scheduler: any function from step number to ProfilerState.

Here: warm up for two steps, record steps 2-3 and return them, then record
steps 6-8 and return them. End every recorded range with RECORD_AND_RETURN
(going from RECORD straight to CLOSED also delivers the trace, with a
warning about the schedule).
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
    for batch in range(10):
        x, y = rng.standard_normal((32, 128)), rng.integers(0, 10, 32)
        train_step(x, y)
        prof.step()

for path in exporter.paths:
    print(f"timeline: {path}")
