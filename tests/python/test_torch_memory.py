"""profile_memory with the PyTorch integration: torch's allocations and frees as memory events."""

import json
import threading
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import SummaryView, TracerEventType  # noqa: E402

from torch_helpers import events_of, load_example, make_loader, train  # noqa: E402

BLOCK_BYTES = 4 << 20  # torch.empty(1 << 20) of float32


def allocate_and_free(device="cpu"):
    """Allocates a 4 MiB tensor on `device` and frees it; returns its address."""
    block = torch.empty(1 << 20, device=device)
    address = block.data_ptr()
    del block
    return address


def in_window(work=allocate_and_free, **profiler_options):
    """Runs ``work()`` inside one profkit window; returns (the window's result, what work returned)."""
    with profkit.Profiler(on_trace_ready=lambda p: None, **profiler_options) as prof:
        out = work()
    return prof.profiler_result, out


def events_at(result, address):
    memory = result.memory_events
    return memory[memory["address"] == address]


def test_allocations_and_frees_in_a_window_are_memory_events(pk_torch):
    pk_torch.enable()

    def work():
        # Memory reporting must not look like torch's own profiler to torch.
        assert not torch._C._autograd._profiler_enabled()
        return allocate_and_free()

    result, address = in_window(work, profile_memory=True)
    block = events_at(result, address)
    assert list(block["bytes"]) == [BLOCK_BYTES, -BLOCK_BYTES]
    assert list(block["device"]) == [-1, -1]
    assert block["time_ns"][0] < block["time_ns"][1]
    assert block["total_allocated"][0] >= BLOCK_BYTES  # the allocator's total just after it


def test_memory_summary_and_chrome_counters_show_them(pk_torch, tmp_path):
    pk_torch.enable()
    result, _ = in_window(profile_memory=True)
    (table,) = result.summary_data(views=SummaryView.MemoryView).values()
    row = dict(zip(table.columns, table.rows[0]))
    assert row["Device"] == "CPU"
    assert row["Allocations"] >= 1 and row["Frees"] >= 1
    assert row["Peak Allocated"] >= BLOCK_BYTES
    # under the device, the operators that allocated: torch.empty's block in aten::empty
    by_event = {r[0]: dict(zip(table.columns, r)) for r, level in zip(table.rows, table.levels) if level == 1}
    assert by_event["aten::empty"]["Allocated"] >= BLOCK_BYTES
    path = tmp_path / "memory.trace.json"
    result.export_chrome_tracing(str(path))
    with open(path) as f:
        counters = [e for e in json.load(f)["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"Memory (CPU)"}
    assert max(e["args"]["Allocated"] for e in counters) >= BLOCK_BYTES


def test_memory_events_read_back_from_the_chrome_json_in_full(pk_torch, tmp_path):
    pk_torch.enable()
    result, address = in_window(profile_memory=True)
    path = tmp_path / "memory.trace.json"
    result.export_chrome_tracing(str(path))
    with open(path) as f:
        instants = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "Memory" and e["ph"] == "i"]
    # torch.profiler's "[memory]" layout: the block's allocation and its free
    at_address = [e["args"]["Bytes"] for e in instants if e["args"]["Addr"] == address]
    assert BLOCK_BYTES in at_address and -BLOCK_BYTES in at_address
    loaded = profkit.load_profiler_result(path)
    assert np.array_equal(loaded.memory_events, result.memory_events)
    assert loaded.summary(views=SummaryView.MemoryView) == result.summary(views=SummaryView.MemoryView)


def test_nothing_is_reported_without_profile_memory(pk_torch):
    pk_torch.enable()
    result, _ = in_window()
    assert len(result.memory_events) == 0
    in_window(profile_memory=True)
    result, _ = in_window()  # the reporter of the window before is silent now
    assert len(result.memory_events) == 0


def test_enable_overrides_each_profilers_choice(pk_torch):
    pk_torch.enable(profile_memory=True)
    result, address = in_window(profile_memory=False)
    assert len(events_at(result, address)) == 2
    pk_torch.enable(profile_memory=False)
    result, _ = in_window(profile_memory=True)
    assert len(result.memory_events) == 0
    with pytest.raises(TypeError, match="profile_memory must be a bool or None"):
        pk_torch.enable(profile_memory="yes")


def test_allocations_of_backward_are_reported(pk_torch):
    pk_torch.enable()
    prof = train(make_loader(n=8), profile_memory=True)
    events = events_of(prof)
    memory = prof.profiler_result.memory_events
    backward = [
        (start, end)
        for start, end, t in zip(events["start_ns"], events["end_ns"], events["type"])
        if t == int(TracerEventType.Backward)
    ]
    assert backward
    during_backward = [t for t in memory["time_ns"] if any(start <= t <= end for start, end in backward)]
    assert during_backward  # autograd's gradients are allocated there


def test_torch_profiler_can_start_inside_a_memory_window(pk_torch):
    pk_torch.enable()

    def work():
        with pytest.warns(profkit.ProfilerWarning, match="torch's own profiler started"):
            with torch.profiler.profile(profile_memory=True) as torch_prof:
                torch.empty(1000)
        return torch_prof, allocate_and_free()  # after torch's profiler stopped

    result, (torch_prof, address) = in_window(work, profile_memory=True)
    assert any(e.name == "[memory]" for e in torch_prof.events())  # torch's profiler got the allocation
    assert len(events_at(result, address)) == 2  # profkit records again once it stopped


def test_a_window_under_torch_profiler_records_no_memory_and_says_so(pk_torch):
    pk_torch.enable()
    with torch.profiler.profile(profile_memory=True) as torch_prof:
        with pytest.warns(profkit.ProfilerWarning, match="this window records no memory events") as said:
            result, _ = in_window(profile_memory=True)
    assert said[0].filename == __file__  # the user's line that opened the window, not profkit's
    assert len(result.memory_events) == 0
    assert any(e.name == "[memory]" for e in torch_prof.events())


def test_disable_gives_torch_its_profiler_switches_back(pk_torch):
    autograd_profiler = torch.autograd.profiler
    before = (autograd_profiler._enable_profiler, autograd_profiler._disable_profiler)
    pk_torch.enable()
    assert autograd_profiler._enable_profiler is not before[0]
    pk_torch.disable()
    assert (autograd_profiler._enable_profiler, autograd_profiler._disable_profiler) == before


def test_the_python_fallback_says_it_records_no_memory(pk_torch):
    pk_torch.enable(backend="python")
    with pytest.warns(profkit.ProfilerWarning, match="profile_memory needs the native PyTorch hook"):
        result, _ = in_window(profile_memory=True)
    assert len(result.memory_events) == 0


def test_dataloader_workers_forked_in_a_memory_window_run_unreported(pk_torch):
    pk_torch.enable()
    prof = train(make_loader(n=8, num_workers=2), profile_memory=True)
    assert len(prof.profiler_result.memory_events) > 0  # the main process's own allocations
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second window still opens cleanly
        in_window(profile_memory=True)



def test_the_example_prints_the_memory_summary_when_asked(pk_torch, tmp_path, capsys):
    load_example().main(["--steps", "5", "--device", "cpu", "--profile-memory", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    memory = out[out.index("Memory Summary"):]
    assert "CPU" in memory.splitlines()[4]  # the first row, under the title, rules and header
    # ... followed by the operators that allocated (the README says the example shows them).
    assert "aten::" in memory.splitlines()[5], memory


def test_a_silent_reporter_left_on_a_thread_steps_aside_without_a_word(pk_torch):
    pk_torch.enable()
    prof = profkit.Profiler(profile_memory=True, on_trace_ready=lambda p: None)
    prof.start()  # the reporter goes onto this thread
    stopper = threading.Thread(target=prof.stop)  # ... and the window closes on another: it stays here, silent
    stopper.start()
    stopper.join()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: profkit was recording nothing
        # torch 2.11's own notice, once per process, when a torch.profiler ran before
        warnings.filterwarnings("ignore", "Warning: Profiler clears events at the end of each cycle", UserWarning)
        with torch.profiler.profile(profile_memory=True) as torch_prof:
            torch.empty(1000)
    assert any(e.name == "[memory]" for e in torch_prof.events())


def test_disable_on_another_thread_leaves_nothing_in_torch_profilers_way(pk_torch):
    autograd_profiler = torch.autograd.profiler
    original = autograd_profiler._enable_profiler
    pk_torch.enable()
    prof = profkit.Profiler(profile_memory=True, on_trace_ready=lambda p: None)
    prof.start()  # the reporter goes onto this thread

    def stop_and_disable():
        prof.stop()
        pk_torch.disable()  # on another thread: the reporter stays on this one, silent

    other = threading.Thread(target=stop_and_disable)
    other.start()
    other.join()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "Warning. Profiler clears events", UserWarning)  # torch 2.11's own
        with torch.profiler.profile(profile_memory=True) as torch_prof:  # was: "already enabled on this thread"
            torch.empty(1000)
    assert any(e.name == "[memory]" for e in torch_prof.events())
    assert autograd_profiler._enable_profiler is original  # the guard took itself away once it was done


def test_a_with_block_of_enable_restores_the_earlier_memory_choice(pk_torch):
    pk_torch.enable(profile_memory=False)
    with pk_torch.enable(profile_memory=True):
        result, address = in_window()
        assert len(events_at(result, address)) == 2
    result, _ = in_window(profile_memory=True)  # False again: overrides the Profiler's choice
    assert len(result.memory_events) == 0
    assert pk_torch.is_enabled()


def test_a_training_runs_chrome_json_loads_as_the_same_result(pk_torch, tmp_path):
    pk_torch.enable()
    prof = train(make_loader(n=16), record_shapes=True, profile_memory=True)
    live = prof.profiler_result
    path = tmp_path / "run.trace.json"
    live.export_chrome_tracing(str(path))
    loaded = profkit.load_profiler_result(path)
    assert loaded.info == live.info and loaded.threads == live.threads
    for field in live.events.dtype.names:
        assert np.array_equal(loaded.events[field], live.events[field]), field
    assert [tuple(a) for a in loaded.event_args] == [tuple(a) for a in live.event_args]  # input shapes too
    assert np.array_equal(loaded.memory_events, live.memory_events) and len(live.memory_events) > 0
    views = list(SummaryView)
    assert loaded.summary(views=views, op_detail=True) == live.summary(views=views, op_detail=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (scripts/gpu_checks.sh runs it on one)")
def test_cuda_caching_allocator_blocks_are_memory_events_of_their_gpu(pk_torch, tmp_path):
    pk_torch.enable()
    torch.cuda.synchronize()

    result, address = in_window(lambda: allocate_and_free("cuda"), profile_memory=True)
    block = events_at(result, address)
    assert list(block["bytes"]) == [BLOCK_BYTES, -BLOCK_BYTES]
    assert list(block["device"]) == [torch.cuda.current_device()] * 2
    (table,) = result.summary_data(views=SummaryView.MemoryView).values()
    devices = [row[0] for row, level in zip(table.rows, table.levels) if level == 0]
    assert f"GPU {torch.cuda.current_device()}" in devices, devices
    path = tmp_path / "memory.trace.json"
    result.export_chrome_tracing(str(path))
    with open(path) as f:
        counters = {e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "C"}
    assert f"Memory (GPU {torch.cuda.current_device()})" in counters, counters
