"""The examples' workload: a two-layer MLP trained with NumPy.

It stands in for the model a paddle.profiler user would train, so each example
shows only its profiling pattern. Forward, backward and the SGD update are
separate methods so that examples can mark them with RecordEvent.
"""

import numpy as np

BATCH = 32
FEATURES = 128
HIDDEN = 256
CLASSES = 10


class TwoLayerMLP:
    def __init__(self, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.w1 = rng.standard_normal((FEATURES, HIDDEN)) * 0.01
        self.w2 = rng.standard_normal((HIDDEN, CLASSES)) * 0.01

    def forward(self, x):
        """The hidden activations and the logits."""
        h = np.maximum(x @ self.w1, 0.0)
        return h, h @ self.w2

    def backward(self, x, y, h, logits):
        """Gradients of softmax cross-entropy for both weight matrices."""
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(y)), y] -= 1.0
        grad_w2 = h.T @ p / len(y)
        grad_w1 = x.T @ ((p @ self.w2.T) * (h > 0)) / len(y)
        return grad_w1, grad_w2

    def sgd(self, grads, lr: float = 0.1) -> None:
        grad_w1, grad_w2 = grads
        self.w1 -= lr * grad_w1
        self.w2 -= lr * grad_w2

    def train_step(self, x, y, lr: float = 0.1) -> None:
        h, logits = self.forward(x)
        self.sgd(self.backward(x, y, h, logits), lr)


def random_batches(count: int, batch_size: int = BATCH, seed: int = 1):
    """`count` batches of random inputs and labels."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield rng.standard_normal((batch_size, FEATURES)), rng.integers(0, CLASSES, batch_size)
