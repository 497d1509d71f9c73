"""profkit.integrations.torch_distributed: collectives as Communication events.

A 1-process gloo group (an in-memory store, no network) covers the
collectives; point-to-point calls need two processes (one subprocess run).
Skipped with the reason when torch (or torch.distributed) is missing.
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import profkit
from profkit import Profiler, _C
from profkit.integrations import torch_distributed

torch = pytest.importorskip("torch", reason="the torch.distributed integration needs PyTorch")
dist = pytest.importorskip("torch.distributed", reason="needs torch.distributed")
if not dist.is_available():  # pragma: no cover
    pytest.skip("this PyTorch has no torch.distributed", allow_module_level=True)

COMMUNICATION = 12


@pytest.fixture(scope="module")
def group():
    """A one-process gloo group for the module; the integration enabled."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    torch_distributed.enable()
    yield dist.group.WORLD
    torch_distributed.disable()
    dist.destroy_process_group()
    _C.set_rank(-1, -1)


@pytest.fixture(autouse=True)
def reset_rank():
    yield
    _C.set_rank(-1, -1)


def recorded(body):
    """Runs body() in one recorded step; returns the communication events as
    [(name, {arg: value})] and the ProfilerResult."""
    with Profiler(on_trace_ready=lambda p: None) as prof:
        body()
    result = prof.profiler_result
    events = result.events
    args = {}
    for row in result.event_args:
        args.setdefault(int(row["event"]), {})[row["key"]] = row["value"]
    comm = [(str(e["name"]), args.get(i, {})) for i, e in enumerate(events) if e["type"] == COMMUNICATION]
    return comm, result


def t(n=1000, dtype=None):
    return torch.ones(n, dtype=dtype or torch.float32)


def quiet(function, *args):
    """Calls a function newer torch deprecates (FutureWarning), without the warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return function(*args)


CALLS = {
    "all_reduce": (lambda: dist.all_reduce(t()), {"bytes": 4000}),
    "broadcast": (lambda: dist.broadcast(t(), src=0), {"bytes": 4000, "peer": 0}),
    "reduce": (lambda: dist.reduce(t(), dst=0), {"bytes": 4000, "peer": 0}),
    "all_gather": (lambda: dist.all_gather([t()], t()), {"bytes": 4000, "out_bytes": 4000}),
    "all_gather_into_tensor": (lambda: quiet(dist.all_gather_into_tensor, t(), t()), {"bytes": 4000, "out_bytes": 4000}),
    "reduce_scatter_tensor": (lambda: quiet(dist.reduce_scatter_tensor, t(), t()), {"bytes": 4000, "out_bytes": 4000}),
    "all_gather_single": (lambda: dist.all_gather_single(t(), t()), {"bytes": 4000, "out_bytes": 4000}),
    "reduce_scatter_single": (lambda: dist.reduce_scatter_single(t(), t()), {"bytes": 4000, "out_bytes": 4000}),
    "gather": (lambda: dist.gather(t(), [t()], dst=0), {"bytes": 4000, "out_bytes": 4000, "peer": 0}),
    "scatter": (lambda: dist.scatter(t(), [t()], src=0), {"bytes": 4000, "out_bytes": 4000, "peer": 0}),
    "all_to_all_single": (lambda: dist.all_to_all_single(t(), t()), {"bytes": 4000, "out_bytes": 4000}),
    "barrier": (lambda: dist.barrier(), {}),
    "all_gather_object": (lambda: dist.all_gather_object([None], {"x": 1}), {}),
    "broadcast_object_list": (lambda: dist.broadcast_object_list([1, 2], src=0), {"peer": 0}),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_collective_is_one_communication_event_with_its_payload(group, name):
    if not hasattr(dist, name):
        pytest.skip(f"torch {torch.__version__} has no torch.distributed.{name}")
    call, payload = CALLS[name]
    comm, _ = recorded(call)
    assert [n for n, _ in comm] == [name]
    args = comm[0][1]
    for key, value in payload.items():
        assert args[key] == value, (key, args)
    assert "bytes" in args or not payload.get("bytes")
    assert args["group_size"] == 1
    if "bytes" in args:
        assert args["dtype"] == "float32"


def test_dtype_and_byte_count_follow_the_tensor(group):
    comm, _ = recorded(lambda: dist.all_reduce(torch.ones(3, 5, dtype=torch.float64)))
    assert comm == [("all_reduce", {"bytes": 120, "dtype": "float64", "group_size": 1, "async_op": 0})]


def test_ddp_parameter_broadcast_is_recorded(group):
    comm, _ = recorded(lambda: dist._broadcast_coalesced(group, [t(10), t(20, torch.float64)], 1 << 20, 0))
    assert comm == [("broadcast_coalesced", {"bytes": 200, "dtype": "float32", "group_size": 1, "peer": 0})]


def test_async_collective_gets_an_in_flight_event_on_its_own_lane(group):
    def body():
        work = dist.all_reduce(t(), async_op=True)
        work.wait()

    comm, result = recorded(body)
    assert [n for n, _ in comm] == ["all_reduce", "all_reduce (in flight)"]
    launch, in_flight = comm[0][1], comm[1][1]
    assert launch["async_op"] == 1 and in_flight["bytes"] == 4000 == launch["bytes"]
    events = result.events
    threads = {t["tid"]: t["name"] for t in result.threads}
    lanes = {str(e["name"]): threads[int(e["tid"])] for e in events if e["type"] == COMMUNICATION}
    assert lanes["all_reduce (in flight)"] == torch_distributed.IN_FLIGHT_THREAD_NAME
    assert lanes["all_reduce"] != torch_distributed.IN_FLIGHT_THREAD_NAME


def test_an_async_barrier_gets_an_in_flight_event_too(group):
    # A barrier has no tensor to tell its device by: it was never tracked,
    # although on gloo it runs on the CPU like the other collectives.
    def body():
        dist.barrier(async_op=True).wait()

    comm, _ = recorded(body)
    assert [n for n, _ in comm] == ["barrier", "barrier (in flight)"]


def test_work_still_in_flight_when_the_window_closes_is_finished_first(group):
    # No wait() before stop(): the Profiler's window-end hook lets the waiter record it.
    comm, _ = recorded(lambda: dist.all_reduce(t(), async_op=True))
    assert [n for n, _ in comm] == ["all_reduce", "all_reduce (in flight)"]


def test_outside_a_recording_window_calls_pass_straight_through(group):
    x = t(4)
    dist.all_reduce(x)  # not recording: nothing to record, the call still works
    assert torch.equal(x, t(4))
    _C.set_state(0)
    assert len(_C.collect().host_events) == 0
    assert dist.all_reduce.__wrapped__ is torch_distributed._originals["all_reduce"]


def test_a_failing_call_still_ends_its_event_and_raises(group):
    def body():
        with pytest.raises((TypeError, RuntimeError, ValueError)):
            dist.all_reduce("not a tensor")

    comm, result = recorded(body)
    assert [n for n, _ in comm] == ["all_reduce"]
    # The event says the call failed, and how.
    assert comm[0][1]["error"] in ("TypeError", "RuntimeError", "ValueError")
    assert result.info["unmatched_ends"] == 0


def test_a_completed_call_has_no_error_argument(group):
    comm, _ = recorded(lambda: dist.all_reduce(t(4)))
    assert "error" not in comm[0][1]


def test_a_work_that_fails_in_flight_is_marked(group):
    # The in-flight waiter swallowed a work's failure (the caller sees it on
    # its own wait), so the event read as a completed collective. A work
    # whose future fails: torch's own Future, failed as gloo fails one.
    from profkit.integrations import _collectives_in_flight

    class FailedWork:
        def __init__(self):
            self.future = torch.futures.Future()
            self.future.set_exception(RuntimeError("peer closed the connection"))

        def get_future(self):
            return self.future

    def body():
        _collectives_in_flight.track("all_reduce", FailedWork(), [("bytes", 16)])
        assert torch_distributed.wait_in_flight(10)

    comm, _ = recorded(body)
    assert comm == [("all_reduce (in flight)", {"bytes": 16, "error": "RuntimeError"})]


def test_a_peer_given_as_a_group_rank_on_the_default_group(group):
    comm, _ = recorded(lambda: dist.broadcast(t(4), group_src=0))
    assert comm[0][1]["peer"] == 0


def test_a_peer_given_as_a_numpy_integer_is_recorded(group):
    # Ranks often come from arrays; only a plain int was taken, the others left out.
    import numpy as np

    comm, _ = recorded(lambda: dist.broadcast(t(4), src=np.int64(0)))
    assert comm == [("broadcast", {"bytes": 16, "dtype": "float32", "group_size": 1, "peer": 0, "async_op": 0})]


def test_a_rank_left_out_of_the_group_records_no_collective(group):
    # new_group() gives a rank it leaves out a marker group; torch then only
    # warns and returns. It was recorded as a collective with its bytes,
    # which the cross-rank view counted.
    from torch.distributed.distributed_c10d import GroupMember

    def body():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's "does not belong to the given group"
            dist.all_reduce(t(16), group=GroupMember.NON_GROUP_MEMBER)
            dist.barrier(group=GroupMember.NON_GROUP_MEMBER)
        dist.all_reduce(t(16))  # a member's call: recorded

    comm, _ = recorded(body)
    assert [n for n, _ in comm] == ["all_reduce"] and comm[0][1]["group_size"] == 1


def test_p2pop_accepts_the_wrapped_functions(group):
    op = dist.P2POp(dist.isend, t(), 0)
    assert op.op is torch_distributed._originals["isend"]


def test_batch_isend_irecv_counts_sent_and_received_bytes_apart(group):
    from profkit.integrations._collective_calls import COLLECTIVES, describe

    spec = COLLECTIVES["batch_isend_irecv"]
    ops = [dist.P2POp(dist.isend, t(16), 0), dist.P2POp(dist.irecv, t(8), 0), dist.P2POp(dist.irecv, t(2), 0)]
    call = describe("batch_isend_irecv", spec, ("p2p_op_list",), False, (ops,), {})
    assert dict(call.args) == {"bytes": 64, "out_bytes": 40, "dtype": "float32", "async_op": 1, "ops": 3}
    # Receives only: what is received is the payload, as for irecv alone.
    call = describe("batch_isend_irecv", spec, ("p2p_op_list",), False, (ops[1:],), {})
    assert dict(call.args) == {"bytes": 40, "dtype": "float32", "async_op": 1, "ops": 2}


def test_enable_is_idempotent_and_disable_restores(group):
    names = torch_distributed.enable()
    assert {"all_reduce", "broadcast", "send", "isend", "batch_isend_irecv", "_broadcast_coalesced"} <= set(names)
    wrapper = dist.all_reduce
    assert torch_distributed.enable() == names and dist.all_reduce is wrapper
    torch_distributed.disable()
    try:
        assert not torch_distributed.is_enabled()
        assert not hasattr(dist.all_reduce, "__profkit_original__")
        assert dist.P2POp.__init__.__module__ == "torch.distributed.distributed_c10d"
        comm, _ = recorded(lambda: dist.all_reduce(t()))
        assert comm == []
        torch_distributed.disable()  # again: nothing to do
    finally:
        torch_distributed.enable()
    assert torch_distributed.is_enabled()


def test_profiler_takes_rank_and_world_size_from_torch_distributed(group, tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "7")  # torch.distributed wins over the environment
    monkeypatch.setenv("WORLD_SIZE", "8")
    exporter = profkit.export_protobuf(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as prof:
        prof.step()
    info = prof.profiler_result.info
    assert (info["rank"], info["world_size"]) == (0, 1)
    assert "rank_0_time_" in os.path.basename(exporter.paths[0])


def test_instrument_ddp_records_bucket_all_reduces(group):
    model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    ddp = torch_distributed.instrument_ddp(torch.nn.parallel.DistributedDataParallel(model))
    x = torch.randn(4, 8)

    def body():
        for _ in range(2):
            ddp(x).sum().backward()

    comm, _ = recorded(body)
    reduces = [args for name, args in comm if name == "all_reduce"]
    assert reduces and all("ddp_bucket" in a and a["async_op"] == 1 for a in reduces)
    assert sum(a["bytes"] for a in reduces) == 2 * sum(p.numel() * 4 for p in model.parameters())
    assert [name for name, _ in comm].count("all_reduce (in flight)") == len(reduces)
    waits = [args for name, args in comm if name == torch_distributed.DDP_WAIT_NAME]
    assert len(waits) == 2 and all(a["buckets"] >= 1 for a in waits)  # one per backward, on CPU
    with pytest.raises(RuntimeError, match="pass yours as instrument_ddp"):
        torch_distributed.instrument_ddp(ddp)
    with pytest.raises(TypeError, match="expected a torch.nn.parallel.DistributedDataParallel"):
        torch_distributed.instrument_ddp(model)


def test_module_imports_and_fails_clearly_without_torch(tmp_path):
    script = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # as if torch were not installed
        sys.modules["torch.distributed"] = None
        from profkit.integrations import torch_distributed
        try:
            torch_distributed.enable()
        except ImportError as e:
            print("ImportError:", e)
        torch_distributed.disable()  # nothing to undo: no error
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError: profkit.integrations.torch_distributed needs PyTorch")


P2P_SCRIPT = """
import json, os, sys
import multiprocessing

def run(rank, init, out):
    import torch, torch.distributed as dist
    import profkit
    from profkit.integrations import torch_distributed
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    torch_distributed.enable()
    peer = 1 - rank
    x = torch.ones(256)
    only_rank_1 = dist.new_group([1])  # its group rank 0 is global rank 1
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        if rank == 1:
            dist.broadcast(x, group_src=0, group=only_rank_1)
        if rank == 0:
            dist.send(x, dst=1)
            dist.recv(x, src=1)
        else:
            dist.recv(x, src=0)
            dist.send(x, dst=0)
        if rank == 0:
            dist.send(x, dst=1)
        else:
            dist.recv(x)  # from any source: the sender is known when it returns
        work = dist.isend(x, dst=peer) if rank == 0 else dist.irecv(x, src=peer)
        work.wait()
        # Uneven on purpose (rank 0 sends 64 floats, receives 32): sent and received bytes differ.
        mine, theirs = (64, 32) if rank == 0 else (32, 64)
        ops = [dist.P2POp(dist.isend, torch.ones(mine), peer), dist.P2POp(dist.irecv, torch.zeros(theirs), peer)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    result = prof.profiler_result
    args = {}
    for row in result.event_args:
        args.setdefault(int(row["event"]), {})[row["key"]] = row["value"]
    events = [[str(e["name"]), args.get(i, {})] for i, e in enumerate(result.events) if e["type"] == 12]
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"events": events, "rank": result.info["rank"], "world_size": result.info["world_size"]}, f)
    dist.destroy_process_group()

if __name__ == "__main__":
    out = sys.argv[1]
    init = "file://" + os.path.join(out, "rendezvous")
    ctx = multiprocessing.get_context("spawn")
    ps = [ctx.Process(target=run, args=(r, init, out)) for r in range(2)]
    [p.start() for p in ps]
    [p.join() for p in ps]
    sys.exit(max(p.exitcode for p in ps))
"""


def test_point_to_point_calls_between_two_processes(tmp_path):
    script = tmp_path / "p2p.py"
    script.write_text(P2P_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=90,
                          env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        doc = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert (doc["rank"], doc["world_size"]) == (rank, 2)
        by_name = {}
        for name, args in doc["events"]:
            by_name.setdefault(name, []).append(args)
        one = {"bytes": 1024, "dtype": "float32", "group_size": 2, "peer": 1 - rank}
        assert by_name["send"] == [one] * (2 if rank == 0 else 1)
        assert by_name["recv"] == [one] * (1 if rank == 0 else 2)  # the one from any source too
        single = "isend" if rank == 0 else "irecv"
        assert by_name[single][0]["async_op"] == 1 and by_name[single][0]["bytes"] == 1024
        # The isend's tensor is sent, the irecv's received (not both counted as sent).
        sent, received = (256, 128) if rank == 0 else (128, 256)
        assert by_name["batch_isend_irecv"] == [
            {"bytes": sent, "out_bytes": received, "dtype": "float32", "async_op": 1, "ops": 2}
        ]
        # A peer given as a rank of the group (group_src) is recorded as the global rank.
        assert by_name.get("broadcast") == ([{**one, "group_size": 1, "peer": 1, "async_op": 0}] if rank == 1 else None)
        # gloo's send/recv works have no future: no in-flight events, and (above all) no hang.
        assert not [name for name in by_name if name.endswith("(in flight)")]


def test_with_stack_records_the_programs_calls_around_a_collective_not_profkits_checks(group):
    # The wrapper asked torch.compiler.is_compiling (and what it calls)
    # straight from code that records the user's calls under it: every
    # collective showed them as the program's calls.
    def my_step():
        dist.all_reduce(t())

    with Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
        my_step()
    names = [str(n) for n in prof.profiler_result.events["name"]]
    assert any("my_step" in n for n in names) and "all_reduce" in names
    assert not [n for n in names if "compiling" in n], names
