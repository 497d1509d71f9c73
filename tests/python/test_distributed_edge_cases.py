"""Multi-process and distributed use: what a rank's or a forked child's user sees.

- The cross-rank summary keeps a rank's recording losses apart from the note
  that says what Computation is (no torch needed).
- The in-flight waiter of asynchronous collectives works again in a child
  forked from a process that had started it (torch needed for its futures).
- gloo's asynchronous "gloo:<collective>" ranges (begun on one thread, ended
  on another) leave no events open behind them (the native hook; a
  subprocess with a one-process gloo group).
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from profkit import ProfilerResult, RecordEvent, TracerEventType, _C, cross_rank_summary

COMMUNICATION = TracerEventType.Communication


pytestmark = pytest.mark.usefixtures("no_rank")  # conftest.py


def window_with_an_open_range(rank, world):
    """A rank's window of one step: compute, a collective, and a range begun but never ended."""
    _C.set_rank(rank, world)
    _C.set_state(2)
    _C.step_begin(0)
    with RecordEvent("compute", TracerEventType.PythonUserDefined):
        time.sleep(0.001)
    with RecordEvent("all_reduce", COMMUNICATION):
        pass
    left_open = RecordEvent("never ended", TracerEventType.PythonUserDefined)
    left_open.begin()
    _C.step_end(0)
    _C.set_state(0)
    result = ProfilerResult(_C.collect())
    left_open.end()  # outside any window now: nothing is recorded
    _C.collect()
    return result


def test_cross_rank_summary_keeps_the_computation_note_apart_from_a_ranks_losses():
    lossy = window_with_an_open_range(0, 2)
    assert lossy.info["unfinished_events"] == 1
    summary = cross_rank_summary([lossy])
    (figures,) = summary.ranks
    # The note says what Computation is, not that events were lost.
    assert figures.computation_note.startswith("No GPU kernels were recorded: Computation = time inside")
    assert len(figures.warnings) == 1
    assert figures.warnings[0].startswith("1 events were still open when the window closed")
    text = summary.text()
    assert "Warning: rank0: 1 events were still open when the window closed" in text
    assert "Note: No GPU kernels were recorded" in text
    assert "Note: Warning" not in text
    assert summary.to_dict()["ranks"][0]["warnings"] == figures.warnings


class CompletedWork:
    """A c10d Work that has completed: what an asynchronous gloo collective returns."""

    def __init__(self, torch):
        self.future = torch.futures.Future()
        self.future.set_result(None)

    def get_future(self):
        return self.future


def test_in_flight_events_are_recorded_in_a_child_forked_after_the_waiter_started():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")
    from profkit.integrations import _collectives_in_flight as in_flight

    in_flight.track("all_reduce", CompletedWork(torch), [])  # the parent's waiter thread starts
    assert in_flight.wait_in_flight(10.0)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            _C.set_state(2)
            with RecordEvent("broadcast", COMMUNICATION):
                pass
            in_flight.track("broadcast", CompletedWork(torch), [("bytes", 8)])
            waited = in_flight.wait_in_flight(2.0)
            _C.set_state(0)
            result = ProfilerResult(_C.collect())
            report = {"waited": waited, "names": sorted(result.events["name"].tolist())}
        except BaseException as e:
            report = {"error": repr(e)}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    report = json.loads(os.read(read, 4000).decode())
    os.close(read)
    assert status == 0
    assert report == {"waited": True, "names": ["broadcast", "broadcast (in flight)"]}
    assert in_flight.wait_in_flight(10.0)  # the parent's waiter still works


_GLOO_RANGES = textwrap.dedent(
    """
    import json, tempfile, os
    import torch
    import torch.distributed as dist
    import profkit
    import profkit.integrations.torch as pk_torch

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    pk_torch.enable(backend="native")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        t = torch.ones(16)
        for _ in range(5):
            dist.all_reduce(t)
            dist.broadcast(t, 0)
            dist.all_reduce(t, async_op=True).wait()
    info = prof.profiler_result.info
    print(json.dumps({"unfinished": info["unfinished_events"], "unmatched": info["unmatched_ends"]}))
    dist.destroy_process_group()
    """
)


def test_gloo_async_ranges_leave_no_events_open(torch_hook_cache):
    """ProcessGroupGloo's Work begins a "gloo:all_reduce" RecordFunction on its
    worker thread and ends it on another: the hook must not open it on a
    thread where it never ends, else every window of a DDP job warns that
    events were still open when it closed."""
    pytest.importorskip("torch.distributed", reason="needs torch.distributed")
    process = subprocess.run(
        [sys.executable, "-c", _GLOO_RANGES], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert process.returncode == 0, process.stderr
    report = json.loads(process.stdout.strip().splitlines()[-1])
    assert report == {"unfinished": 0, "unmatched": 0}


_COMPILED_COLLECTIVE = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    import profkit
    from profkit.integrations import torch_distributed

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    torch_distributed.enable()  # as profkit.integrations.torch.enable() does

    def step(x):
        y = x * 2
        dist.all_reduce(y)
        return y + 1

    compiled = torch.compile(step, fullgraph=True, backend="eager")
    print("result", compiled(torch.ones(4)).tolist())
    with profkit.Profiler(on_trace_ready=lambda p: None):
        print("result", compiled(torch.ones(4)).tolist())
    dist.destroy_process_group()
    """
)


def test_a_collective_in_a_fullgraph_compiled_function_compiles_with_the_wrappers_on():
    """dynamo turns dist.all_reduce into a functional collective; profkit's
    wrapper must not stand in its way (it cannot trace is_recording(), a
    builtin: a graph break, which fullgraph=True turns into an error)."""
    pytest.importorskip("torch.distributed", reason="needs torch.distributed")
    process = subprocess.run(
        [sys.executable, "-c", _COMPILED_COLLECTIVE], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert process.returncode == 0, process.stderr[-3000:]
    # Only the script's own lines: gloo prints its connections too (torch 2.8).
    results = [line for line in process.stdout.splitlines() if line.startswith("result ")]
    assert results == ["result [3.0, 3.0, 3.0, 3.0]"] * 2, process.stdout


_DDP_WAIT_WITH_OPERATORS = textwrap.dedent(
    """
    import json
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import profkit
    import profkit.integrations.torch as pk_torch
    from profkit.integrations import torch_distributed

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    pk_torch.enable(backend="native")  # records the autograd nodes' ranges
    ddp = torch_distributed.instrument_ddp(DistributedDataParallel(torch.nn.Linear(8, 2)))
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        ddp(torch.ones(4, 8)).sum().backward()
    df = prof.profiler_result.to_pandas()
    names = df["name"].tolist()
    parents = df["parent"].tolist()

    def ancestors(i):
        found = []
        while parents[i] >= 0:
            i = parents[i]
            found.append(names[i])
        return found

    wait = names.index("DDP wait for all_reduce")
    copies = [i for i, n in enumerate(names) if n.endswith("copy_bucket_to_grad")]
    print(json.dumps({
        "wait_inside": [n for n in ancestors(wait) if n.startswith("autograd::engine")],
        "copies_inside_the_wait": [("DDP wait for all_reduce" in ancestors(i)) for i in copies],
    }))
    dist.destroy_process_group()
    """
)


def test_ddp_wait_holds_the_finalizer_with_the_native_hook_on(torch_hook_cache):
    """With the native hook, each autograd node is a range on the backward
    thread; DDP's comm hook runs inside one. The wait marker must span DDP's
    finalizer (its copy_bucket_to_grad operators inside it), not be closed
    by the node's end (which would leave the wait inside the node, as its
    computation)."""
    pytest.importorskip("torch.distributed", reason="needs torch.distributed")
    process = subprocess.run(
        [sys.executable, "-c", _DDP_WAIT_WITH_OPERATORS], capture_output=True, text=True, timeout=300,
        env=dict(os.environ),
    )
    assert process.returncode == 0, process.stderr[-3000:]
    report = json.loads(process.stdout.strip().splitlines()[-1])
    assert report["wait_inside"] == []
    assert report["copies_inside_the_wait"] and all(report["copies_inside_the_wait"])


_TWO_DDP_MODELS = textwrap.dedent(
    """
    import json
    import warnings
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import profkit
    from profkit.integrations import torch_distributed

    warnings.simplefilter("error", RuntimeWarning)  # a crosswise end warns
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    enc = torch_distributed.instrument_ddp(DistributedDataParallel(torch.nn.Linear(8, 8)))
    dec = torch_distributed.instrument_ddp(DistributedDataParallel(torch.nn.Linear(8, 2)))
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(2):
            dec(enc(torch.randn(4, 8))).sum().backward()
            prof.step()
    e = prof.profiler_result.events
    waits = [(int(s), int(t), int(p)) for n, s, t, p in zip(e["name"], e["start_ns"], e["end_ns"], e["parent"])
             if n == "DDP wait for all_reduce"]
    print(json.dumps({"waits": waits, "unfinished": int(prof.profiler_result.info["unfinished_events"])}))
    dist.destroy_process_group()
    """
)


def test_two_ddp_models_in_one_backward_get_a_wait_each_one_after_the_other():
    # Each DDP queues its wait's end at the back of autograd's final
    # callbacks: the first model's wait ended after the second's finalizer,
    # across the second's wait (a RuntimeWarning on every rank, every step).
    pytest.importorskip("torch.distributed", reason="needs torch.distributed")
    process = subprocess.run(
        [sys.executable, "-c", _TWO_DDP_MODELS], capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )
    assert process.returncode == 0, process.stderr[-3000:]
    report = json.loads(process.stdout.strip().splitlines()[-1])
    waits = sorted(report["waits"])
    assert len(waits) == 4 and report["unfinished"] == 0
    for (start, end, _), (next_start, _, _) in zip(waits, waits[1:]):
        assert end <= next_start  # one after the other, none inside another

