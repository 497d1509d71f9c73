"""A tiny PyTorch training loop under profkit, and ways to look at what it recorded (for the torch tests)."""

import importlib.util
import os

import pytest
import torch

import profkit

nn = torch.nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.head = nn.Sequential(nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))

    def forward(self, x):
        return self.head(self.conv(x))


def make_loader(n=12, batch_size=4, num_workers=0, dataset=None):
    if dataset is None:
        dataset = torch.utils.data.TensorDataset(torch.randn(n, 1, 6, 6), torch.randint(0, 3, (n,)))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)


def train(loader, scheduler=None, record_shapes=False, model=None, profile_memory=False):
    """Trains a CPU model under a Profiler of the CPU (no CUDA runtime calls
    where a GPU is present); returns it (its last window is prof.profiler_result)."""
    torch.manual_seed(0)
    model = model or TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    prof = profkit.Profiler(
        targets=[profkit.ProfilerTarget.CPU],
        scheduler=scheduler,
        on_trace_ready=lambda p: None,
        record_shapes=record_shapes,
        profile_memory=profile_memory,
    )
    with prof:
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step(num_samples=len(y))
    return prof


def events_of(prof):
    return prof.profiler_result.events


def names_of_type(events, event_type):
    return [n for n, t in zip(events["name"], events["type"]) if t == event_type]


def ancestors(events, index):
    parent = events["parent"][index]
    while parent >= 0:
        yield parent
        parent = events["parent"][parent]


def enclosing_types(events, name):
    """For each event called `name`: the set of types of the events around it."""
    return [
        {int(events["type"][a]) for a in ancestors(events, i)} for i in range(len(events)) if events["name"][i] == name
    ]


def enclosing_names(events, name):
    """For each event called `name`: the set of names of the events around it."""
    return [
        {events["name"][a] for a in ancestors(events, i)} for i in range(len(events)) if events["name"][i] == name
    ]


def skip_where_autograd_refuses_forked_children():
    """torch's autograd refuses to run in a child forked after its device
    threads started, which a CUDA build with a GPU does at the first backward
    of the process (https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork).
    Tests whose children run backward skip there; the CPU build covers them."""
    if torch.cuda.is_available():
        pytest.skip("torch's autograd refuses backward in a forked child once a CUDA process ran one")


def run_in_fork(child_work, limit=1000):
    """Forks; the child runs child_work() and sends back the string it returns
    (or "error <exception>") through a pipe. Returns (exit status, report).
    Skips where torch's autograd would refuse the child's backward."""
    skip_where_autograd_refuses_forked_children()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            report = child_work()
        except BaseException as e:
            report = f"error {e!r}"
        os.write(write, report.encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    report = os.read(read, limit).decode()
    os.close(read)
    return status, report


EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example():
    """examples/train_cifar_like.py as a module (its main(argv) runs it)."""
    spec = importlib.util.spec_from_file_location("train_cifar_like", os.path.join(EXAMPLES, "train_cifar_like.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
