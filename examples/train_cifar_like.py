"""profkit's main job: profile a PyTorch training loop and write its timeline.

A small CNN learns synthetic CIFAR-shaped data (3x32x32 images, 10 classes)
fed by a real torch DataLoader. profkit records steps 3-13
(``scheduler=(3, 14)``, as in the paddle.profiler guide's case study) with
every aten operator, the forward and backward passes, the optimizer steps and
the batch fetches; then it prints the Model, Operator and Kernel summaries
and the Perf Summary, and writes the trace as Chrome JSON (for
ui.perfetto.dev or chrome://tracing) and as a .pktrace file.

    python examples/train_cifar_like.py                  # CPU, or the GPU where CUDA is present
    python examples/train_cifar_like.py --slow-data 2 --workers 0   # the case study: data loading dominates
    python examples/train_cifar_like.py --slow-data 2 --workers 2   # ... and with workers it drops
    python examples/train_cifar_like.py --profile-memory  # also every allocation: the Memory summary
    python examples/train_cifar_like.py --with-flops      # also FLOPs: a column of the Operator summary

``--slow-data MS`` makes each sample take MS milliseconds to load, like
decoding images on the fly.
"""

import argparse
import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import profkit
import profkit.integrations.torch as pk_torch


class SyntheticCIFAR(Dataset):
    """CIFAR-10-shaped samples: a fixed random image and label per index."""

    def __init__(self, size: int, slow_ms: float = 0.0, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.randn(size, 3, 32, 32, generator=generator)
        self.labels = torch.randint(0, 10, (size,), generator=generator)
        self.slow_s = slow_ms / 1000.0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        if self.slow_s:
            time.sleep(self.slow_s)  # decoding and augmenting a real image
        return self.images[index], self.labels[index]


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 16x16
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 8x8
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20; steps 3-13 are recorded)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument(
        "--workers",
        type=int,
        default=min(2, usable_cpus()),
        help="DataLoader worker processes (default 2, or the usable CPUs if fewer)",
    )
    p.add_argument("--slow-data", type=float, default=0.0, metavar="MS", help="milliseconds to load each sample")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda where available)")
    p.add_argument("--out", default="./profiler_log", help="directory for the trace files (made if missing)")
    p.add_argument("--record-shapes", action="store_true", help="attach input shapes to operators")
    p.add_argument(
        "--profile-memory", action="store_true", help="record torch's allocations and frees (adds the Memory summary)"
    )
    p.add_argument(
        "--with-flops", action="store_true", help="count convolutions' and matrix products' FLOPs (Operator summary)"
    )
    p.add_argument(
        "--with-stack",
        action="store_true",
        help="record the Python calls too, and write a flame graph's folded stacks (.stacks) beside the traces",
    )
    args = p.parse_args(argv)
    for option, value in (("--steps", args.steps), ("--batch-size", args.batch_size)):
        if value < 1:
            p.error(f"{option} must be at least 1, not {value}")
    if args.workers < 0:
        p.error(f"--workers must be 0 (load in the main process) or more, not {args.workers}")
    return args


def train(args):
    """Trains for ``args.steps`` steps under profkit; returns the stopped Profiler and the trace files."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(0)
    dataset = SyntheticCIFAR(args.steps * args.batch_size, slow_ms=args.slow_data)
    loader = DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=device.type == "cuda"
    )
    model = SmallCNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    chrome = profkit.export_chrome_tracing(args.out)
    binary = profkit.export_protobuf(args.out)

    def on_trace_ready(prof: profkit.Profiler) -> None:
        chrome(prof)
        binary(prof)

    print(f"training a small CNN on {device} (DataLoader workers: {args.workers}), profiling steps 3-13 ...")
    with pk_torch.enable(
        record_shapes=args.record_shapes, profile_memory=args.profile_memory, with_flops=args.with_flops
    ):
        prof = profkit.Profiler(scheduler=(3, 14), on_trace_ready=on_trace_ready, with_stack=args.with_stack)
        prof.start()
        try:
            for step, (images, labels) in enumerate(loader):
                if step == args.steps:
                    break
                images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
                loss = loss_fn(model(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                if device.type == "cuda":
                    torch.cuda.synchronize()  # the step's kernels end inside the step
                prof.step(num_samples=len(labels))
        finally:
            prof.stop()  # prints the Perf Summary
        backend = pk_torch.backend()
    print(f"final loss {loss.item():.3f}; operators recorded by profkit's {backend} PyTorch hook")
    files = chrome.paths + binary.paths
    if args.with_stack:
        for pktrace in binary.paths:
            stacks = pktrace[: -len(".pktrace")] + ".stacks"
            profkit.load_profiler_result(pktrace).export_stacks(stacks)
            files.append(stacks)
    return prof, files


def main(argv=None) -> None:
    args = parse_args(argv)
    prof, files = train(args)
    views = [profkit.SummaryView.ModelView, profkit.SummaryView.OperatorView, profkit.SummaryView.KernelView]
    prof.summary(views=views, op_detail=False, row_limit=12)
    if args.profile_memory:
        # With op_detail: the rows under each device are the operators that allocated.
        prof.summary(views=profkit.SummaryView.MemoryView, row_limit=12)
    print("Trace files:")
    for path in files:
        print(f"  {os.path.abspath(path)}")
    print(
        "Open the .trace.json file at https://ui.perfetto.dev (Open trace file) or in chrome://tracing (Load).\n"
        "The .pktrace file is profkit's compact trace: `profkit summary FILE`, `profkit export FILE -o X.trace.json`,\n"
        "or profkit.load_profiler_result(FILE) in Python."
    )
    if args.with_stack:
        print("The .stacks file is a flame graph's folded stacks: https://www.speedscope.app, or flamegraph.pl.")


if __name__ == "__main__":
    main()
