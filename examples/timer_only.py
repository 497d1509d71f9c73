"""Benchmark mode: time the steps without recording a trace.

timer_only=True measures each step's batch cost, the reader cost of the data
loading marked with wrap_dataloader (or dataloader_range), and throughput.
step_info() reports the averages since its last call; stop() prints the Perf
Summary of the run.
"""

import numpy as np

import profkit as profiler

rng = np.random.default_rng(0)
W1 = rng.standard_normal((128, 256)) * 0.01
W2 = rng.standard_normal((256, 10)) * 0.01
BATCH = 32


def loader(batches):
    for _ in range(batches):
        yield rng.standard_normal((BATCH, 128)), rng.integers(0, 10, BATCH)


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


with profiler.Profiler(timer_only=True) as prof:
    for i, (x, y) in enumerate(profiler.wrap_dataloader(loader(30))):
        train_step(x, y)
        prof.step(num_samples=BATCH)
        if i % 10 == 0:
            print(f"step {i}: {prof.step_info(unit='samples')}")
