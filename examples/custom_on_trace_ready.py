"""A custom on_trace_ready: export each recorded window and print its summary.

on_trace_ready receives the Profiler; prof.profiler_result is the window that
just ended. Here every window is written as a Chrome trace and as a .pktrace
file (reloadable with profkit.load_profiler_result), then summarized.
"""

import numpy as np

import profkit as profiler

rng = np.random.default_rng(0)
W1 = rng.standard_normal((128, 256)) * 0.01
W2 = rng.standard_normal((256, 10)) * 0.01


def train_step(x, y, lr=0.1):
    """One step of a two-layer MLP with softmax cross-entropy, in NumPy."""
    global W1, W2
    with profiler.RecordEvent("forward", profiler.TracerEventType.Forward):
        h = np.maximum(x @ W1, 0.0)
        logits = h @ W2
    with profiler.RecordEvent("backward", profiler.TracerEventType.Backward):
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1.0
        grad_w2 = h.T @ p / len(y)
        grad_w1 = x.T @ ((p @ W2.T) * (h > 0)) / len(y)
    with profiler.RecordEvent("sgd", profiler.TracerEventType.Optimization):
        W1 -= lr * grad_w1
        W2 -= lr * grad_w2


chrome = profiler.export_chrome_tracing("./profiler_log")
binary = profiler.export_protobuf("./profiler_log")


def my_on_trace_ready(prof):
    chrome(prof)
    binary(prof)
    prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, views=[profiler.SummaryView.OverView, profiler.SummaryView.ModelView])


scheduler = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2)
with profiler.Profiler(scheduler=scheduler, on_trace_ready=my_on_trace_ready) as prof:
    for batch in range(10):
        x, y = rng.standard_normal((32, 128)), rng.integers(0, 10, 32)
        train_step(x, y)
        prof.step()

print(f"written: {chrome.paths + binary.paths}")
