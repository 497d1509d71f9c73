"""profkit.integrations.torch with the native hook: what a window records, and what it leaves alone."""

import collections
import importlib
import inspect
import multiprocessing
import platform
import re
import threading

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import ProfilerState, TracerEventType  # noqa: E402

from torch_helpers import (  # noqa: E402
    TinyNet,
    enclosing_names,
    enclosing_types,
    events_of,
    load_example,
    make_loader,
    names_of_type,
    run_in_fork,
    skip_where_autograd_refuses_forked_children,
    train,
)

nn = torch.nn
OPERATOR = int(TracerEventType.Operator)
FORWARD = int(TracerEventType.Forward)
BACKWARD = int(TracerEventType.Backward)
OPTIMIZATION = int(TracerEventType.Optimization)
DATALOADER = int(TracerEventType.Dataloader)
PROFILE_STEP = int(TracerEventType.ProfileStep)



# ---- what gets recorded ------------------------------------------------------------
def test_operators_of_forward_and_backward_are_recorded(pk_torch):
    pk_torch.enable()
    assert pk_torch.backend() == "native"
    events = events_of(train(make_loader()))
    operators = collections.Counter(names_of_type(events, OPERATOR))
    steps = 3
    # forward: conv2d -> convolution, linear -> addmm
    assert operators["aten::convolution"] == steps and operators["aten::addmm"] == steps
    # backward: the operators autograd runs, and its nodes
    assert operators["aten::convolution_backward"] == steps
    assert operators["aten::mm"] >= steps  # AddmmBackward0's matrix products
    # each inside the autograd engine's range for its node, which names it
    for node in ("AddmmBackward0", "ConvolutionBackward0"):
        assert operators["autograd::engine::evaluate_function: " + node] == steps
        assert operators[node] == 0  # the node's own range spans the same work: left out (cost)
    around_mm = enclosing_names(events, "aten::convolution_backward")
    assert all("autograd::engine::evaluate_function: ConvolutionBackward0" in names for names in around_mm)
    # torch's own profiler bookkeeping is never reported by RecordFunction
    assert not [n for n in operators if n.startswith("profiler::")]


def test_warm_name_caches_intern_nothing_more(pk_torch):
    # Every operator and backward-node name is interned once per thread; from
    # then on the hook's caches answer. Backward nodes' range names are built
    # per call and share their first and last bytes
    # ("autograd::engine::evaluate_function: ...Backward0"): a cache key that
    # hashed less than the whole name sent them all to pk_intern every step.
    pk_torch.enable()
    native = pk_torch._current.native
    loader = make_loader(n=24)
    prof = train(loader)  # warms the caches with every name of the loop
    first = len(events_of(prof)["name"])
    interned = native.names_interned()
    prof = train(loader)
    assert len(events_of(prof)["name"]) == first > 100
    assert native.names_interned() == interned


def test_warm_operators_are_found_by_address(pk_torch):
    # Once warm, a dispatcher operator's name is found by its schema string's
    # address; only names built per call (a backward node's range, "detach")
    # are looked up by their text. The address table is probed past its first
    # slot: an operator whose slot another took first went to the content
    # lookup on every call (strlen, a hash, memcmp), a few per training step.
    pk_torch.enable()
    native = pk_torch._current.native
    loader = make_loader(n=24)
    train(loader)  # warms the caches
    before = native.content_lookups()
    prof = train(loader)
    lookups = native.content_lookups() - before
    registered = {name.split(".")[0] for name in torch._C._dispatch_get_all_op_names()}
    operators = names_of_type(events_of(prof), OPERATOR)
    built_per_call = [n for n in operators if n not in registered]
    assert any(n.startswith("autograd::engine::evaluate_function: ") for n in built_per_call)
    assert len(operators) - len(built_per_call) > 100  # dispatcher operators, all found by address
    assert 0 < lookups <= len(built_per_call)


def test_operators_are_written_through_each_threads_writer(pk_torch):
    # The operator callbacks write a thread's engine buffer in the hook's own
    # code (the C ABI's thread writer, 1.17), finding it by torch's id of the
    # thread: a thread's first operator goes through pk_begin_event, which
    # makes the buffer, and the hook remembers its writer from then on.
    pk_torch.enable(all_threads=True)
    native = pk_torch._current.native
    before = native.thread_writers_known()
    recorded = []

    def work():
        x = torch.randn(8, 8)
        for _ in range(50):
            x = torch.mm(x, x).tanh()
        recorded.append(True)

    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    with prof:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    events = events_of(prof)
    tid = [t for t, n in zip(events["tid"], events["name"]) if n == "aten::mm"]
    assert recorded and len(tid) == 50 and len(set(tid)) == 1
    tanh = [n for n in events["name"] if n == "aten::tanh"]
    assert len(tanh) == 50
    if platform.machine() in ("x86_64", "AMD64"):  # where the inline writer exists
        assert native.thread_writers_known() == before + 1
    else:
        assert native.thread_writers_known() == 0


def _define_op(namespace, op_name, fn):
    """A custom operator defined at run time (the dispatcher registers it); returns (library, op)."""
    library = torch.library.Library(namespace, "DEF")
    library.define(f"{op_name}(Tensor x) -> Tensor")
    library.impl(op_name, fn, "CompositeExplicitAutograd")
    return library, getattr(getattr(torch.ops, namespace), op_name)


def test_operators_registered_and_removed_at_run_time_keep_their_own_names(pk_torch):
    # The hook trusts a cached operator-name address only until the dispatcher
    # registers or removes an operator; a name freed with its operator, its
    # memory reused by the next one, must not lend the next one its name.
    pk_torch.enable()
    x = torch.randn(3)
    recorded = collections.Counter()
    for round_ in range(6):
        namespace = f"pk_test_rt{round_}"
        op_name = "first_op" if round_ % 2 == 0 else "second_op"
        library, op = _define_op(namespace, op_name, lambda t: t + 1)
        prof = profkit.Profiler(on_trace_ready=lambda p: None)
        with prof:
            op(x)
            op(x)
        del op
        library._destroy()  # the operator and its schema are freed here
        recorded.update(n for n in names_of_type(events_of(prof), OPERATOR) if n.startswith("pk_test_rt"))
    expected = {f"pk_test_rt{r}::{'first_op' if r % 2 == 0 else 'second_op'}": 2 for r in range(6)}
    assert dict(recorded) == expected


def test_threads_share_operator_names_while_operators_come_and_go(pk_torch):
    # Every thread reads one shared table of operator-name addresses, without
    # a lock, while others add to it and the dispatcher changes (each change
    # makes every cached address be looked up again). torch releases the GIL
    # around each operator, so the workers' callbacks really run at once.
    import threading

    pk_torch.enable(all_threads=True)  # the workers open no window: only a global callback sees them
    work = {"pk_worker_add": (torch.add, "aten::add"), "pk_worker_mul": (torch.mul, "aten::mul"),
            "pk_worker_sub": (torch.sub, "aten::sub"), "pk_worker_max": (torch.maximum, "aten::maximum")}
    x = torch.randn(8)
    start = threading.Barrier(len(work) + 1)

    def run(label, fn):
        start.wait()
        with profkit.RecordEvent(label):
            for _ in range(3000):
                fn(x, x)

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        threads = [threading.Thread(target=run, args=(label, fn)) for label, (fn, _) in work.items()]
        for t in threads:
            t.start()
        start.wait()
        for round_ in range(8):  # registrations and removals while the workers run
            library, op = _define_op(f"pk_test_mt{round_}", "op", lambda t: t.clone())
            op(x)
            library._destroy()
        for t in threads:
            t.join()
    events = events_of(prof)
    tid_of = {name: tid for name, tid in zip(events["name"], events["tid"]) if name in work}
    assert len(set(tid_of.values())) == len(work)
    for label, (_, operator) in work.items():
        on_thread = (events["tid"] == tid_of[label]) & (events["type"] == OPERATOR)
        assert collections.Counter(events["name"][on_thread]) == {operator: 3000}, label


def test_model_events_and_their_nesting(pk_torch):
    pk_torch.enable()
    prof = train(make_loader(n=12, batch_size=4))
    events = events_of(prof)
    by_type = collections.Counter(int(t) for t in events["type"])
    # 3 batches: the model and the loss module are the two top-level module calls
    assert names_of_type(events, FORWARD) == ["TinyNet.forward", "CrossEntropyLoss.forward"] * 3
    assert names_of_type(events, BACKWARD) == ["backward"] * 3
    assert names_of_type(events, OPTIMIZATION) == ["SGD.step"] * 3
    # three batches, and the fetch that finds the loader exhausted
    assert names_of_type(events, DATALOADER) == ["DataLoader.__next__"] * 4
    assert by_type[PROFILE_STEP] == 4
    # operators sit inside the passes that ran them, all inside steps
    assert all({FORWARD, PROFILE_STEP} <= around for around in enclosing_types(events, "aten::convolution"))
    assert all({BACKWARD, PROFILE_STEP} <= around for around in enclosing_types(events, "aten::convolution_backward"))
    assert all(OPTIMIZATION in around for around in enclosing_types(events, "aten::_foreach_add_"))
    assert all(around == {PROFILE_STEP} for around in enclosing_types(events, "TinyNet.forward"))
    # submodules are inside the top-level Forward, not events of their own
    assert "Sequential.forward" not in set(events["name"]) and "Conv2d.forward" not in set(events["name"])


def test_model_summary_and_reader_cost_come_from_the_hooks(pk_torch):
    pk_torch.enable()
    prof = train(make_loader())
    model = prof.profiler_result.summary_data(views=profkit.SummaryView.ModelView)["ModelView"]
    rows = {row[0].strip(): row for row in model.rows}
    assert {"ProfileStep", "Dataloader", "Forward", "Backward", "Optimization"} <= set(rows)
    assert rows["Forward"][1] == 6 and rows["Backward"][1] == 3 and rows["Optimization"][1] == 3
    assert prof.perf_summary.reader_cost.max > 0  # batch fetches counted as reader_cost


class SlowDataset(torch.utils.data.Dataset):
    """Each item takes 1 ms to load."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        import time

        time.sleep(0.001)
        return torch.zeros(2), index


@pytest.mark.parametrize("backend", ["native", "python"])
def test_reader_cost_is_measured_in_every_step_not_only_in_windows(pk_torch, backend):
    pk_torch.enable(backend=backend)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=2)
    with profkit.Profiler(timer_only=True) as prof:  # no window at all
        for _ in loader:
            prof.step()
    reader = prof.perf_summary.reader_cost
    assert prof.perf_summary.steps == 4
    assert reader.min >= 0.002  # two 1 ms items per batch


@pytest.mark.parametrize("backend", ["native", "python"])
def test_wrap_dataloader_around_a_hooked_loader_counts_each_fetch_once(pk_torch, backend):
    pk_torch.enable(backend=backend)
    loader = profkit.wrap_dataloader(torch.utils.data.DataLoader(SlowDataset(), batch_size=4), name="wrapped")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in loader:
            prof.step()
    # The user's range is the outermost: the hook's inner range is part of it.
    assert names_of_type(events_of(prof), DATALOADER) == ["wrapped"] * 3
    batches = prof._timer._batch_ns
    assert all(4_000_000 <= r <= b for r, b in zip(prof._timer._reader_ns, batches))


def test_native_wrappers_look_like_what_they_wrap(pk_torch):
    import inspect

    before = inspect.signature(torch.autograd.backward)
    pk_torch.enable(backend="native")
    native = pk_torch._current.native
    backward = torch.autograd.backward
    assert type(backward).__name__ == "CallRange"
    assert backward.__name__ == "backward" and backward.__module__ == "torch.autograd"
    assert backward.__doc__ == backward.__wrapped__.__doc__
    assert inspect.signature(backward) == before
    with pytest.raises(ValueError, match="kind must be"):
        native.CallRange(print, 7, "x")
    with pytest.raises(ValueError, match="need a name"):
        native.CallRange(print, native.BACKWARD)
    with pytest.raises(TypeError, match="callable"):
        native.CallRange(3, native.FORWARD)


def test_record_function_ranges_and_torchs_own(pk_torch):
    pk_torch.enable()
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with torch.profiler.record_function("my_block"):
            model(torch.randn(2, 1, 6, 6)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    events = events_of(prof)
    user = names_of_type(events, int(TracerEventType.PythonUserDefined))
    assert user == ["my_block", "Optimizer.zero_grad#SGD.zero_grad"]
    assert names_of_type(events, OPTIMIZATION) == ["SGD.step"]  # torch's "Optimizer.step#SGD.step"
    assert all(around == {int(TracerEventType.PythonUserDefined), PROFILE_STEP}
               for around in enclosing_types(events, "TinyNet.forward"))


def ranges_by_name(prof):
    """{name: (start_ns, end_ns)} of the window's user ranges (each name once)."""
    events = events_of(prof)
    kept = (events["type"] == int(TracerEventType.PythonUserDefined)) | (events["type"] == PROFILE_STEP)
    return {str(e["name"]): (int(e["start_ns"]), int(e["end_ns"])) for e in events[kept]}


def test_a_range_a_generator_holds_across_yield_keeps_its_own_times(pk_torch):
    # A generator's record_function stays open across `yield`, so the
    # caller's range, begun before it, ends first. Each end closed the
    # engine's innermost event: the two ranges swapped their end times,
    # silently. Now each keeps its own, as torch.profiler records them.
    pk_torch.enable()

    def batches():
        with torch.profiler.record_function("produce"):
            yield 1
            torch.ones(2)

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        source = batches()
        with torch.profiler.record_function("consume"):
            next(source)
            torch.ones(1)
        next(source, None)
    ranges = ranges_by_name(prof)
    consume, produce = ranges["consume"], ranges["produce"]
    assert consume[0] < produce[0] < consume[1] < produce[1]  # as they ran: overlapping, not nested
    ones = [(int(e["start_ns"]), int(e["end_ns"])) for e in events_of(prof) if e["name"] == "aten::ones"]
    assert len(ones) == 2 and consume[0] < ones[0][0] < ones[0][1] < consume[1] < ones[1][0] < produce[1]
    assert prof.profiler_result.info["unmatched_ends"] == 0


def test_ranges_ended_crosswise_and_among_record_events_keep_their_own_times(pk_torch):
    pk_torch.enable()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        a = torch.profiler.record_function("A")
        b = torch.profiler.record_function("B")
        a.__enter__()
        b.__enter__()
        a.__exit__(None, None, None)  # A ends while B, begun after it, is open
        b.__exit__(None, None, None)
        c = profkit.RecordEvent("C")
        c.begin()
        d = torch.profiler.record_function("D")
        d.__enter__()
        c.end()  # closed D's event in the engine, and D's end closed C's
        d.__exit__(None, None, None)
    ranges = ranges_by_name(prof)
    assert ranges["A"][0] < ranges["B"][0] < ranges["A"][1] < ranges["B"][1]
    assert ranges["C"][0] < ranges["D"][0] < ranges["C"][1] < ranges["D"][1]
    info = prof.profiler_result.info
    assert info["unmatched_ends"] == 0 and info["unfinished_events"] == 0


def test_a_range_that_ends_on_another_thread_or_window_is_left_out(pk_torch):
    pk_torch.enable()
    held = torch.profiler.record_function("across windows")
    prof = profkit.Profiler(scheduler=profkit.make_scheduler(closed=0, ready=0, record=1), on_trace_ready=lambda p: None)
    windows = []
    prof.on_trace_ready = lambda p: windows.append(ranges_by_name(p))
    with prof:
        held.__enter__()
        with torch.profiler.record_function("inside"):
            torch.ones(1)
        prof.step()
        held.__exit__(None, None, None)
        prof.step()
    assert all("across windows" not in window for window in windows)
    assert "inside" in windows[0]


def test_each_thread_has_its_own_top_level_forward(pk_torch):
    import threading

    pk_torch.enable()
    model = TinyNet()
    x = torch.randn(2, 1, 6, 6)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        worker = threading.Thread(target=lambda: model(x))
        worker.start()
        worker.join()
        model(x)
    events = events_of(prof)
    forwards = events["type"] == FORWARD
    assert list(events["name"][forwards]) == ["TinyNet.forward"] * 2
    assert len(set(events["tid"][forwards])) == 2


# ---- which threads ------------------------------------------------------------------------------
def operators_by_thread(prof, label):
    """The operator names recorded on the thread that recorded the event ``label``, and on the others."""
    events = events_of(prof)
    tid = [t for n, t in zip(events["name"], events["tid"]) if n == label]
    assert len(tid) == 1, label
    mine = (events["tid"] == tid[0]) & (events["type"] == OPERATOR)
    others = (events["tid"] != tid[0]) & (events["type"] == OPERATOR)
    return collections.Counter(events["name"][mine]), collections.Counter(events["name"][others])


@pytest.mark.parametrize("all_threads", [False, True])
def test_operators_of_other_threads_are_recorded_with_all_threads(pk_torch, all_threads):
    # By default, as torch.profiler: the thread that opens the window (and
    # those torch runs its work on); all_threads=True: every thread. The
    # other thread's RecordEvent is recorded either way (profkit's own events).
    import threading

    pk_torch.enable(all_threads=all_threads)
    native = pk_torch._current.native
    x = torch.randn(8)

    def work():
        with profkit.RecordEvent("pk_other_thread"):
            for _ in range(5):
                torch.mul(x, x)

    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        assert native.global_callback() is all_threads
        assert native.callbacks_on_this_thread() == (0 if all_threads else 1)
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        with profkit.RecordEvent("pk_driving_thread"):
            for _ in range(3):
                torch.add(x, x)
    on_worker, _ = operators_by_thread(prof, "pk_other_thread")
    on_driver, _ = operators_by_thread(prof, "pk_driving_thread")
    assert on_worker == ({"aten::mul": 5} if all_threads else {})
    assert on_driver["aten::add"] == 3
    assert not native.armed() and native.callbacks_on_this_thread() == 0


def test_the_thread_local_callback_goes_when_the_window_closes_on_another_thread(pk_torch):
    # Only a thread can take a callback off its own list: when another thread
    # closes the window, the callback left here removes itself at this
    # thread's next operator, so torch runs unobserved again outside windows.
    import threading

    pk_torch.enable()
    native = pk_torch._current.native
    x = torch.randn(8)
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    prof.start()
    torch.add(x, x)
    stopper = threading.Thread(target=prof.stop)
    stopper.start()
    stopper.join()
    assert not native.armed() and native.callbacks_on_this_thread() == 1
    torch.add(x, x)  # outside every window: the callback takes itself off
    assert native.callbacks_on_this_thread() == 0
    assert collections.Counter(names_of_type(events_of(prof), OPERATOR)) == {"aten::add": 1}
    with profkit.Profiler(on_trace_ready=lambda p: None) as again:
        torch.add(x, x)
    assert collections.Counter(names_of_type(events_of(again), OPERATOR)) == {"aten::add": 1}


def test_a_callback_torch_puts_back_does_not_record_twice(pk_torch):
    # A window closed inside a backward hook: the callback is removed inside
    # the autograd engine's ThreadLocalStateGuard, which puts the list it
    # saved back when the node ends. The next window must not then hold two.
    pk_torch.enable()
    native = pk_torch._current.native
    x = torch.randn(4, requires_grad=True)
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    prof.start()
    y = (x * 2).sum()
    y.register_hook(lambda grad: prof.stop())
    y.backward()
    assert not native.armed() and native.callbacks_on_this_thread() == 1  # put back by torch
    with profkit.Profiler(on_trace_ready=lambda p: None) as again:
        assert native.callbacks_on_this_thread() == 1
        torch.add(x, x)
    assert collections.Counter(names_of_type(events_of(again), OPERATOR)) == {"aten::add": 1}
    assert native.callbacks_on_this_thread() == 0


def test_all_threads_can_change_while_recording(pk_torch):
    pk_torch.enable()
    native = pk_torch._current.native
    x = torch.randn(8)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        torch.add(x, x)
        pk_torch.enable(all_threads=True)
        assert native.global_callback() and native.callbacks_on_this_thread() == 0
        torch.add(x, x)
        pk_torch.enable(all_threads=False)
        assert not native.global_callback() and native.callbacks_on_this_thread() == 1
        torch.add(x, x)
    assert collections.Counter(names_of_type(events_of(prof), OPERATOR)) == {"aten::add": 3}


def test_compiled_models_are_profiled_operator_by_operator(pk_torch):
    # torch.compile with the aot_eager backend (no C++ toolchain, ~2 s): the
    # compiled graph runs its aten operators through the dispatcher, so the
    # hook sees them inside torch's "Torch-Compiled Region" range, and the
    # compiled backward as one autograd node.
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(4, 8)
    compiled(x).sum().backward()  # compiles outside the window
    pk_torch.enable()
    steps = 2
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(steps):
            compiled(x).sum().backward()
            prof.step()
    events = events_of(prof)
    assert names_of_type(events, FORWARD) == ["OptimizedModule.forward"] * steps
    assert names_of_type(events, BACKWARD) == ["backward"] * steps
    operators = collections.Counter(names_of_type(events, OPERATOR))
    assert operators["aten::addmm"] == 2 * steps  # both Linear layers, in the compiled graph
    for around in enclosing_names(events, "aten::addmm"):
        assert any(name.startswith("Torch-Compiled Region") for name in around)
    assert operators["autograd::engine::evaluate_function: CompiledFunctionBackward"] == steps
    assert operators["aten::mm"] >= 2 * steps  # the compiled backward's matrix products

@pytest.mark.parametrize("backend", ["native", "python"])
def test_torch_compile_compiles_inside_a_window_as_without_profkit(pk_torch, backend):
    # Compiling (a model's first call, or a recompile for a new batch size)
    # inside a window: with fullgraph=True any graph break would raise, and a
    # frame Dynamo skipped would run uncompiled for good.
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()  # earlier tests' compiles
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    pk_torch.enable(backend=backend)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        compiled(torch.randn(4, 8)).sum().backward()  # compiles here
        prof.step()
        compiled(torch.randn(7, 8)).sum().backward()  # recompiles here
    # Both calls are Forward events: torch's FX tracing, part of compiling,
    # puts back the nn.Module.__call__ it found, and the wrapper reinstalls
    # itself (see test_torch_models.py).
    assert names_of_type(events_of(prof), FORWARD) == ["OptimizedModule.forward"] * 2
    if backend == "native":  # the fallback sees no RecordFunction ranges
        assert any(name.startswith("Torch-Compiled Region") for name in set(events_of(prof)["name"]))
    graphs = counters["stats"]["unique_graphs"]
    # Two shapes, two graphs; the fallback's dispatch mode is part of what
    # Dynamo guards on, so with it a window and its outside compile apart.
    assert (graphs == 2 if backend == "native" else graphs >= 2) and not counters["graph_break"]
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        compiled(torch.randn(7, 8))
    assert names_of_type(events_of(prof), FORWARD) == ["OptimizedModule.forward"]
    pk_torch.disable()
    compiled(torch.randn(4, 8))  # nothing was left uncompiled: compiled frames are reused (native)
    assert not counters["graph_break"]
    if backend == "native":
        assert counters["stats"]["unique_graphs"] == graphs
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_compiled_optimizer_step_stays_compiled_once_enabled(pk_torch, backend):
    # The fallback's optimizer step hooks began a RecordEvent while Dynamo
    # traced the step: a graph break that sent torch's step wrapper back to
    # eager ("Failed to handle graph break gracefully"), even with no window.
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    model = nn.Linear(16, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    compiled_step = torch.compile(optimizer.step, backend="eager")

    def train_step():
        model(torch.randn(8, 16)).sum().backward()
        compiled_step()

    train_step()
    torchs_own = set(counters["graph_break"])  # torch's optimizers break the graph on purpose
    pk_torch.enable(backend=backend)
    train_step()
    with profkit.Profiler(on_trace_ready=lambda p: None):
        train_step()
    assert set(counters["graph_break"]) <= torchs_own, set(counters["graph_break"]) - torchs_own
    assert counters["frames"]["total"] == counters["frames"]["ok"], dict(counters["frames"])
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", ["native", "python"])
def test_activation_checkpointing_recomputes_inside_backward_not_as_a_forward(pk_torch, backend):
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU())

        def forward(self, x):
            return checkpoint(self.inner, x, use_reentrant=False).sum()

    model = Checkpointed()
    pk_torch.enable(backend=backend)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(2):
            model(torch.randn(4, 8)).backward()  # backward re-runs self.inner
            prof.step()
    events = events_of(prof)
    assert names_of_type(events, FORWARD) == ["Checkpointed.forward"] * 2
    assert names_of_type(events, BACKWARD) == ["backward"] * 2


class Flip(nn.Module):
    """A transform that is a module, as torchvision's transforms.v2 are."""

    def forward(self, x):
        return x.flip(0)


class TransformedDataset(torch.utils.data.Dataset):
    """Runs its transform module in __getitem__; item 5 fails."""

    transform = Flip()

    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index == 5:
            raise ValueError("unreadable item")
        return self.transform(torch.full((3,), float(index)))


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_module_called_while_a_batch_is_fetched_is_part_of_the_dataloader_event(pk_torch, backend):
    pk_torch.enable(backend=backend)
    model = nn.Linear(3, 2)
    failing = torch.utils.data.DataLoader(TransformedDataset(), batch_size=1, sampler=[5])
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for x in torch.utils.data.DataLoader(TransformedDataset(), batch_size=2):
            model(x)
            prof.step()
        with pytest.raises(ValueError, match="unreadable item"):
            next(iter(failing))
        model(torch.ones(3))  # a fetch that raised left no data loading behind: top-level again
    events = events_of(prof)
    # The transform's time is in Dataloader only, not in a Forward event as well
    # (the Model summary would count it twice).
    assert names_of_type(events, FORWARD) == ["Linear.forward"] * 3
    assert names_of_type(events, DATALOADER) == ["DataLoader.__next__"] * 4
    flips = enclosing_types(events, "aten::flip")
    assert len(flips) == 4 and all(DATALOADER in around and FORWARD not in around for around in flips)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_module_called_in_the_users_own_data_loading_range_is_not_a_forward(pk_torch, backend):
    pk_torch.enable(backend=backend)
    model, transform = nn.Linear(3, 2), nn.Identity()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for _ in range(2):
            with profkit.dataloader_range("fetch"):  # a loader that is not torch's
                x = transform(torch.ones(3))
            model(x)
            prof.step()
    assert profkit._C.data_loading_depth() == 0
    assert names_of_type(events_of(prof), FORWARD) == ["Linear.forward"] * 2


def test_record_shapes(pk_torch):
    pk_torch.enable(record_shapes=True)
    prof = train(make_loader(n=4, batch_size=4))
    result = prof.profiler_result
    events, args = result.events, result.event_args
    shapes = {events["name"][a["event"]]: a["value"] for a in args if a["key"] == "input_shapes"}
    assert shapes["aten::addmm"] == "[[3], [4, 32], [32, 3], [], []]"  # bias, input, weight, beta, alpha
    assert shapes["aten::convolution"].startswith("[[4, 1, 6, 6], [2, 1, 3, 3], [2], ")


def test_shapes_follow_the_profiler_unless_enable_says(pk_torch):
    pk_torch.enable()  # record_shapes=None: each Profiler decides
    with_shapes = train(make_loader(n=4, batch_size=4), record_shapes=True).profiler_result
    without = train(make_loader(n=4, batch_size=4)).profiler_result
    assert "input_shapes" in set(with_shapes.event_args["key"])
    assert "input_shapes" not in set(without.event_args["key"])
    pk_torch.enable(record_shapes=False)  # enable's word wins over the Profiler's
    overridden = train(make_loader(n=4, batch_size=4), record_shapes=True).profiler_result
    assert "input_shapes" not in set(overridden.event_args["key"])


# ---- outside windows -------------------------------------------------------------------
def module_call_is_torchs():
    return nn.Module.__dict__["__call__"] is nn.Module._wrapped_call_impl


def test_hooks_are_armed_only_inside_windows(pk_torch):
    pk_torch.enable()
    native = pk_torch._current.native
    seen = []

    def watch(step):
        seen.append((native.armed(), module_call_is_torchs()))
        return ProfilerState.RECORD_AND_RETURN if step == 2 else ProfilerState.CLOSED

    loader = make_loader(n=16, batch_size=4)
    assert not native.armed() and module_call_is_torchs()
    prof = train(loader, scheduler=watch)
    # the scheduler is asked before each step's state is applied: armed during step 2 only
    assert seen[:4] == [(False, True), (False, True), (False, True), (True, False)]
    assert not native.armed() and module_call_is_torchs()
    assert prof.profiler_result.steps == [2]
    # events come from step 2 only
    events = events_of(prof)
    assert names_of_type(events, FORWARD) == ["TinyNet.forward", "CrossEntropyLoss.forward"]


def test_nothing_is_recorded_outside_windows(pk_torch):
    from profkit import _C

    pk_torch.enable()
    model = TinyNet()
    model(torch.randn(2, 1, 6, 6)).sum().backward()
    _C.set_state(int(ProfilerState.CLOSED.value))
    assert profkit.ProfilerResult(_C.collect()).events.size == 0


# ---- enable / disable ---------------------------------------------------------------------
def optimizer_hook_count():
    optimizer_module = importlib.import_module("torch.optim.optimizer")
    return len(optimizer_module._global_optimizer_pre_hooks) + len(optimizer_module._global_optimizer_post_hooks)


def originals():
    """What torch's hooked callables are (looked up statically: a native wrapper on a class
    reads as the callable it wraps, so that torch.compile traces torch's own)."""
    dataloader = importlib.import_module("torch.utils.data.dataloader")
    return (
        torch.autograd.backward,
        inspect.getattr_static(dataloader._BaseDataLoaderIter, "__next__"),
        inspect.getattr_static(nn.Module, "__call__"),
    )


def test_disable_removes_everything(pk_torch):
    before = originals()
    hooks = optimizer_hook_count()
    pk_torch.enable()
    native = pk_torch._current.native
    # the native hook takes optimizer steps from torch's own ranges: no optimizer hooks
    assert originals()[:2] != before[:2] and optimizer_hook_count() == hooks and native.installed()
    pk_torch.disable()
    assert originals() == before and optimizer_hook_count() == hooks
    assert not native.installed() and not native.armed() and not pk_torch.is_enabled()
    assert pk_torch.backend() is None
    events = events_of(train(make_loader()))
    assert set(int(t) for t in events["type"]) == {PROFILE_STEP}


def test_enable_and_disable_are_idempotent(pk_torch):
    before = originals()
    hooks = optimizer_hook_count()
    pk_torch.enable()
    wrapped = originals()
    pk_torch.enable()
    pk_torch.enable(record_shapes=True)
    assert originals() == wrapped and optimizer_hook_count() == hooks
    assert torch.autograd.backward.__wrapped__ is before[0]
    assert names_of_type(events_of(train(make_loader())), BACKWARD) == ["backward"] * 3
    native = pk_torch._current.native
    pk_torch.disable()
    pk_torch.disable()
    assert originals() == before and optimizer_hook_count() == hooks
    pk_torch.enable()
    assert pk_torch._current.native is native  # loaded once per process


def test_enable_is_also_a_context_manager(pk_torch):
    with pk_torch.enable(record_shapes=True):
        assert pk_torch.is_enabled() and pk_torch._current.options.record_shapes is True
        with pk_torch.enable(record_shapes=False):
            assert pk_torch._current.options.record_shapes is False
        assert pk_torch.is_enabled() and pk_torch._current.options.record_shapes is True
    assert not pk_torch.is_enabled()


@pytest.mark.parametrize("old", ["2.2.2+cu121", "2.0.1"])
def test_a_torch_older_than_the_oldest_supported_is_a_clear_error(pk_torch, monkeypatch, old):
    from profkit.integrations import torch_distributed

    monkeypatch.setattr(torch, "__version__", old)
    with pytest.raises(RuntimeError, match=rf"needs PyTorch 2\.3 or newer; this is torch {re.escape(old)}\. Upgrade"):
        pk_torch.enable()
    assert not pk_torch.is_enabled()
    with pytest.raises(RuntimeError, match=r"torch_distributed needs PyTorch 2\.3 or newer"):
        torch_distributed.enable()
    assert not torch_distributed.is_enabled()


@pytest.mark.parametrize(
    "version, parsed",
    [("2.3.0", (2, 3)), ("2.6.0+cu124", (2, 6)), ("2.13.0a0+git1234", (2, 13)), ("10.1", (10, 1)), ("dev", None)],
)
def test_torch_versions_are_read_by_major_and_minor(version, parsed):
    from profkit.integrations._torch_version import MIN_TORCH, torch_major_minor

    assert torch_major_minor(version) == parsed
    assert torch_major_minor(torch.__version__) >= MIN_TORCH  # the torch these tests run on is supported


def test_bad_options_are_rejected(pk_torch, monkeypatch):
    with pytest.raises(ValueError, match="backend must be one of"):
        pk_torch.enable(backend="cuda")
    with pytest.raises(TypeError, match="record_shapes must be a bool"):
        pk_torch.enable(record_shapes="yes")
    with pytest.raises(TypeError, match="all_threads must be a bool"):
        pk_torch.enable(all_threads=None)
    monkeypatch.setenv("PROFKIT_TORCH_BACKEND", "fast")
    with pytest.raises(ValueError, match="PROFKIT_TORCH_BACKEND must be one of"):
        pk_torch.enable()
    assert not pk_torch.is_enabled()


def test_enable_during_a_window_starts_recording_at_once(pk_torch):
    model = TinyNet()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        pk_torch.enable()
        model(torch.randn(2, 1, 6, 6))
    assert "aten::convolution" in set(events_of(prof)["name"])
    assert names_of_type(events_of(prof), FORWARD) == ["TinyNet.forward"]


# ---- DataLoader workers ----------------------------------------------------------------------
class ReportsWorkerState(torch.utils.data.Dataset):
    """Each sample says whether the integration is enabled in the process
    that made it, and the state of that process's profkit engine."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        import profkit.integrations.torch as integration

        x = torch.randn(1, 6, 6) * 2 + 1  # operators in the worker
        return x, torch.tensor([int(integration.is_enabled()), profkit._C.get_state()])


def test_dataloader_workers_run_unhooked(pk_torch):
    pk_torch.enable()
    loader = make_loader(batch_size=2, num_workers=2, dataset=ReportsWorkerState())
    flags = []
    model = TinyNet()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for x, state_in_worker in loader:
            flags.extend(tuple(sample) for sample in state_in_worker.tolist())
            model(x).sum().backward()
            prof.step()
    # Forked workers dropped the hooks, and their engines record nothing
    # (the workers started inside the window).
    assert flags == [(0, ProfilerState.CLOSED.value)] * 8
    assert pk_torch.is_enabled()  # the parent keeps them
    events = events_of(prof)
    assert names_of_type(events, DATALOADER) == ["DataLoader.__next__"] * 5
    assert names_of_type(events, BACKWARD) == ["backward"] * 4


def test_a_child_forked_while_recording_drops_the_hooks(pk_torch):
    pk_torch.enable()
    native = pk_torch._current.native
    model = TinyNet()
    x = torch.randn(2, 1, 6, 6)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        assert native.armed()

        def child_work():  # pragma: no cover - runs in the child
            torch.set_num_threads(1)  # OpenMP's pool does not survive fork (DataLoader workers do the same)
            model(x).sum().backward()  # torch runs unhooked here
            return (
                f"{native.armed()} {native.callbacks_on_this_thread()} {pk_torch.is_enabled()} "
                f"{module_call_is_torchs()}"
            )

        status, report = run_in_fork(child_work)
        model(x)
    assert status == 0 and report == "False 0 False True"
    assert native.armed() is False and pk_torch.is_enabled()  # the parent keeps its hooks
    assert names_of_type(events_of(prof), FORWARD) == ["TinyNet.forward"]


def _profile_torch_in_a_child(queue):  # pragma: no cover - runs in the child
    import profkit.integrations.torch as integration

    try:
        torch.set_num_threads(1)  # OpenMP's pool does not survive fork
        integration.enable()
        model = TinyNet()
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            model(torch.randn(2, 1, 6, 6)).sum().backward()
        events = events_of(prof)
        queue.put(
            {
                "backend": integration.backend(),
                "armed": integration._current.native.armed(),
                "operators": "aten::convolution" in set(events["name"]),
                "forward": names_of_type(events, FORWARD),
                "backward": names_of_type(events, BACKWARD),
            }
        )
    except BaseException as e:
        queue.put({"error": repr(e)})


def test_a_process_forked_while_recording_can_enable_the_integration_for_itself(pk_torch):
    """A fork-started trainer process (torch.multiprocessing's or Lightning's
    fork strategies) from a parent that had the integration on, mid-window:
    enabling it again there records the child's own operators."""
    skip_where_autograd_refuses_forked_children()
    pk_torch.enable()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        child = context.Process(target=_profile_torch_in_a_child, args=(queue,))
        child.start()
        report = queue.get(timeout=120)
        child.join(timeout=60)
        TinyNet()(torch.randn(2, 1, 6, 6))
    assert child.exitcode == 0
    assert "error" not in report, report["error"]
    assert report == {
        "backend": "native",
        "armed": False,  # the child's window has closed
        "operators": True,
        "forward": ["TinyNet.forward"],
        "backward": ["backward"],
    }
    events = events_of(prof)  # the parent's window goes on, its hooks intact
    assert "aten::convolution" in set(events["name"]) and names_of_type(events, FORWARD) == ["TinyNet.forward"]


# ---- the guide's case study --------------------------------------------------------------------
def dataloader_share(example, tmp_path, workers):
    # 2 ms a sample, 64 ms a batch: several times the small CNN's step on a
    # fast machine, and still more than its forward or backward pass on one
    # three times slower (1 ms a sample lost to a slow VM's backward pass),
    # while two workers loading ahead still hide most of it.
    args = example.parse_args(
        ["--steps", "14", "--batch-size", "32", "--slow-data", "2", "--workers", str(workers), "--out", str(tmp_path)]
    )
    prof, files = example.train(args)
    model = prof.profiler_result.summary_data(views=profkit.SummaryView.ModelView)["ModelView"]
    ratio = model.columns.index("CPU Ratio(%)") if "CPU Ratio(%)" in model.columns else len(model.columns) - 1
    shares = {row[0].strip(): row[ratio] for row in model.rows}
    return shares, prof.perf_summary.reader_ratio


def test_case_study_slow_data_loading_dominates_until_workers_take_it(pk_torch, tmp_path, capsys):
    example = load_example()
    # One intra-op thread: on a loaded 2-core machine torch's OpenMP threads
    # wait for each other at every barrier and the CNN's step grew from ~20
    # to ~450 ms, outgrowing any data loading the test could wait for.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone, reader_alone = dataloader_share(example, tmp_path / "w0", workers=0)
        helped, reader_helped = dataloader_share(example, tmp_path / "w2", workers=2)
    finally:
        torch.set_num_threads(threads)
    # num_workers=0: loading 32 samples at 2 ms each outweighs each pass of the small CNN
    assert alone["Dataloader"] > max(alone["Forward"], alone["Backward"], alone["Optimization"])
    # with workers loading ahead, the loop waits less for data
    assert helped["Dataloader"] < alone["Dataloader"]
    assert reader_helped < reader_alone


class Fails(nn.Module):
    def forward(self, x):
        raise ValueError("bad input")


@pytest.mark.parametrize("backend", ["native", "python"])
def test_forward_wrapper_survives_exceptions_and_nests_per_thread(pk_torch, backend):
    pk_torch.enable(backend=backend)
    model, failing = TinyNet(), nn.Sequential(nn.ReLU(), Fails())
    x = torch.randn(2, 1, 6, 6)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        wrapper = nn.Module.__dict__["__call__"]
        with pytest.raises(ValueError, match="bad input"):
            failing(x)
        model(x)  # the failed call left no nesting behind: this one is top-level again
    assert type(wrapper).__name__ == ("CallRange" if backend == "native" else "function")
    assert wrapper.__wrapped__ is nn.Module._wrapped_call_impl
    assert names_of_type(events_of(prof), FORWARD) == ["Sequential.forward", "TinyNet.forward"]


def test_forward_names_keep_their_suffix_when_the_class_name_is_long(pk_torch):
    pk_torch.enable(backend="native")
    short = type("Net" + "x" * 40, (nn.Module,), {"forward": lambda self, x: x + 1})()
    long = type("Net" + "y" * 400, (nn.Module,), {"forward": lambda self, x: x * 2})()
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        short(torch.ones(2))
        long(torch.ones(2))
    first, second = names_of_type(events_of(prof), FORWARD)
    assert first == "Net" + "x" * 40 + ".forward"
    # cut to the native wrapper's 255 bytes, the suffix kept
    assert second == ("Net" + "y" * 400)[: 255 - len(".forward")] + ".forward"


def test_a_window_opened_on_the_engine_directly_gets_all_but_forward(pk_torch):
    from profkit import _C

    pk_torch.enable()
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    _C.set_state(int(ProfilerState.RECORD.value))  # not through a Profiler: no window listener runs
    for x, y in make_loader(n=4, batch_size=4):
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    _C.set_state(int(ProfilerState.CLOSED.value))
    events = profkit.ProfilerResult(_C.collect()).events
    types = {TracerEventType(int(t)).name for t in events["type"]}
    assert types == {"Operator", "Backward", "Optimization", "Dataloader"}


# ---- torch.distributed comes along ------------------------------------------------


def test_enable_records_collectives_and_disable_undoes_only_its_own(pk_torch):
    from profkit.integrations import torch_distributed

    dist = torch.distributed
    assert not torch_distributed.is_enabled()
    with pk_torch.enable():
        assert torch_distributed.is_enabled()  # collectives are Communication events
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        try:
            with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
                dist.all_reduce(torch.ones(16))
        finally:
            dist.destroy_process_group()
            profkit._C.set_rank(-1, -1)
    assert not torch_distributed.is_enabled()
    communication = [str(e["name"]) for e in prof.profiler_result.events
                     if e["type"] == int(TracerEventType.Communication)]
    assert communication == ["all_reduce"]

    torch_distributed.enable()  # the user's own: the torch integration leaves it on
    try:
        with pk_torch.enable():
            pass
        assert torch_distributed.is_enabled()
    finally:
        torch_distributed.disable()

    # asked for while the integration had it on (instrument_ddp calls enable()): it stays on too
    pk_torch.enable()
    try:
        torch_distributed.enable()
        pk_torch.disable()
        assert torch_distributed.is_enabled()
    finally:
        torch_distributed.disable()


class _LockThatLetsAnEnableIn:
    """torch_distributed's lock, except that each release runs, on another
    thread, torch_distributed.enable() -- the moment a user's enable() could
    fall into between two sections of a caller."""

    def __init__(self, lock, enable):
        self._lock, self._enable, self.entered = lock, enable, 0

    def __enter__(self):
        self._lock.acquire()
        self.entered += 1

    def __exit__(self, *exc):
        self._lock.release()
        if self.entered == 1:  # once: the enable() below takes the lock too
            other = threading.Thread(target=self._enable)
            other.start()
            other.join()


def test_an_enable_racing_the_integrations_disable_is_kept(pk_torch, monkeypatch):
    from profkit.integrations import torch_distributed

    pk_torch.enable()
    try:
        racing = _LockThatLetsAnEnableIn(torch_distributed._lock, torch_distributed.enable)
        monkeypatch.setattr(torch_distributed, "_lock", racing)
        pk_torch.disable()  # checked "not asked for" in one section and unwrapped in another
        monkeypatch.undo()
        assert racing.entered >= 2  # the user's enable() ran
        assert torch_distributed.is_enabled()  # and was not undone
    finally:
        torch_distributed.disable()
    assert not torch_distributed.is_enabled()
