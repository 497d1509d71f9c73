"""Data-parallel training on several processes, each profiled, merged into one timeline.

    python examples/ddp_train.py                      # 2 processes on this machine (spawned)
    torchrun --nproc_per_node=2 examples/ddp_train.py  # the same under torchrun

Each rank trains a small MLP with DistributedDataParallel on the gloo backend
(CPU), with profkit's torch.distributed integration on (collectives become
Communication events with their byte counts; instrument_ddp makes DDP's
gradient all-reduces visible) and a Profiler recording steps 3-7 into
./profiler_log/ as .pktrace files (rank and world size in the file names and
in each trace). Then rank 0 merges the ranks' files into one Chrome trace
(open it in https://ui.perfetto.dev: one process group per rank, on one time
axis), and prints its own Distributed Summary and the cross-rank summary.

The ranks get uneven batches (rank r: 1 + r/2 times the base batch), so the
cross-rank summary has a straggler to point at: the others wait for it in
their all-reduces. The same from a shell:

    profkit merge profiler_log/*rank_0*.pktrace profiler_log/*rank_1*.pktrace -o merged.trace.json
    profkit summary --ranks profiler_log/*.pktrace
"""

import argparse
import gc
import multiprocessing
import os
import sys
import tempfile

# The Profiler's scheduler: steps 3 to 7 are recorded (the first ones warm up).
RECORDED_STEPS = (3, 8)


def train(rank: int, world_size: int, init_method: str, log_dir: str, steps: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    import profkit
    from profkit.integrations import torch_distributed

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    torch.manual_seed(0)  # every rank starts from the same weights (DDP also broadcasts them)
    model = torch.nn.Sequential(
        torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    torch_distributed.enable()
    # Small buckets: several all-reduces per step, launched while backward runs.
    ddp = torch_distributed.instrument_ddp(DistributedDataParallel(model, bucket_cap_mb=0.5))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    batch = 64 + 32 * rank  # uneven on purpose: rank 1 is the straggler
    data = [(torch.randn(batch, 128, generator=generator), torch.randint(0, 10, (batch,), generator=generator))
            for _ in range(4)]

    exporter = profkit.export_protobuf(log_dir)  # file names carry rank_{r}
    with profkit.Profiler(scheduler=RECORDED_STEPS, on_trace_ready=exporter) as prof:
        for step in range(steps):
            x, y = data[step % len(data)]
            with profkit.RecordEvent("forward", profkit.TracerEventType.Forward):
                loss = torch.nn.functional.cross_entropy(ddp(x), y)
            with profkit.RecordEvent("backward", profkit.TracerEventType.Backward):
                loss.backward()  # DDP all-reduces gradient buckets as they become ready
            with profkit.RecordEvent("optimizer", profkit.TracerEventType.Optimization):
                optimizer.step()
                optimizer.zero_grad()
            prof.step(num_samples=batch)

    # Rank 0 collects every rank's file names and merges them.
    paths = [None] * world_size
    dist.all_gather_object(paths, exporter.paths)
    if rank == 0:
        files = [p for rank_paths in paths for p in rank_paths]
        merged = os.path.join(log_dir, "ddp_merged.trace.json")
        report = profkit.merge_traces(files, merged)
        print(prof.profiler_result.summary(views=profkit.SummaryView.DistributedView), end="")
        print(profkit.cross_rank_summary(files), end="")
        for item in report.inputs:
            print(f"{item.name}: {item.path} (rank {item.rank} of {item.world_size}, {item.event_count} events)")
        print(f"merged timeline: {merged} ({report.events} trace events); open it in https://ui.perfetto.dev")
    # DDP lives in a reference cycle, so only a garbage collection frees it
    # and its reducer (which holds gloo works). Free it now, while the
    # interpreter is whole: left to the last collection at exit, tearing gloo
    # down there can abort the process.
    del ddp, optimizer
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=2, help="processes to spawn (ignored under torchrun)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (steps 3-7 are recorded)")
    parser.add_argument("--log-dir", default="./profiler_log", help="where the trace files go")
    args = parser.parse_args()
    if args.steps <= RECORDED_STEPS[0]:
        # Checked here, before any rank starts: with nothing recorded there is nothing to merge.
        parser.error(
            f"--steps must be at least {RECORDED_STEPS[0] + 1}: steps {RECORDED_STEPS[0]}-{RECORDED_STEPS[1] - 1} "
            f"are recorded, so {args.steps} steps record nothing to merge"
        )
    if args.nproc < 1 and "RANK" not in os.environ:
        parser.error(f"--nproc must be at least 1, not {args.nproc}")
    log_dir = os.path.abspath(args.log_dir)
    os.makedirs(log_dir, exist_ok=True)

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun (or another launcher) started us
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://", log_dir, args.steps)
        return

    # Spawn the ranks here, on this machine only: they meet through a file, no network port.
    rendezvous = tempfile.NamedTemporaryFile(prefix="ddp_rendezvous_", dir=log_dir, delete=False)
    rendezvous.close()
    os.unlink(rendezvous.name)  # the file store wants to create it itself
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=train, args=(rank, args.nproc, "file://" + rendezvous.name, log_dir, args.steps))
        for rank in range(args.nproc)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if os.path.exists(rendezvous.name):
        os.unlink(rendezvous.name)
    failed = [rank for rank, w in enumerate(workers) if w.exitcode != 0]
    if failed:
        sys.exit(f"ddp_train: rank(s) {failed} failed (exit codes {[w.exitcode for w in workers]})")


if __name__ == "__main__":
    main()
