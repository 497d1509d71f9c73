"""Drive the Profiler by hand: start(), step() after every batch, stop().

The same as the context manager, for loops where a with block does not fit.
The latest trace stays available as prof.profiler_result after stop().
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


prof = profiler.Profiler(scheduler=[2, 6], on_trace_ready=profiler.export_chrome_tracing("./profiler_log"))
prof.start()
for batch in range(10):
    x, y = rng.standard_normal((32, 128)), rng.integers(0, 10, 32)
    train_step(x, y)
    prof.step(num_samples=len(y))
prof.stop()

result = prof.profiler_result
print(f"recorded steps {result.steps}: {len(result)} events over {result.duration_ns / 1e6:.3f} ms")
prof.export("./profiler_log/start_step_stop.pktrace", format="pb")  # the same window, reloadable
