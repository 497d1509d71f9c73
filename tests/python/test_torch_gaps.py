"""profkit.integrations.torch, with both operator recorders: torch.autograd.grad as Backward, Forward events after
FX tracing outside module calls, forked children that profile torch themselves, and tensors whose sizes cannot be
read as they are (torch.compile's symbolic sizes, nested tensors)."""

import collections

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402

from torch_helpers import events_of, names_of_type, run_in_fork  # noqa: E402

nn = torch.nn
OPERATOR = int(TracerEventType.Operator)
FORWARD = int(TracerEventType.Forward)
BACKWARD = int(TracerEventType.Backward)
PHASES = (FORWARD, BACKWARD, int(TracerEventType.Optimization))

BACKENDS = ["native", "python"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 1)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def profile_steps(step, steps=3):
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    with prof:
        for i in range(steps):
            step(i)
            prof.step()
    return prof


def model_rows(prof):
    table = prof.profiler_result.summary_data(time_unit="ns", views="ModelView")["ModelView"]
    return {row[0].strip(): dict(zip(table.columns, row)) for row in table.rows}


def assert_no_phase_in_another(events):
    for i in range(len(events)):
        if int(events["type"][i]) in PHASES:
            parent = events["parent"][i]
            while parent >= 0:
                assert int(events["type"][parent]) not in PHASES, (events["name"][i], events["name"][parent])
                parent = events["parent"][parent]


# ---- torch.autograd.grad -----------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_autograd_grad_is_a_backward_event_in_the_model_summary(pk_torch, backend):
    # A gradient penalty: torch.autograd.grad(create_graph=True), then
    # backward through it. Both passes are Backward, each once.
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(3, 4, requires_grad=True)
    pk_torch.enable(backend=backend)

    def step(i):
        out = model(x).sum()
        (gradient,) = torch.autograd.grad(out, x, create_graph=True)
        (out + gradient.pow(2).sum()).backward()

    prof = profile_steps(step)
    events = events_of(prof)
    assert names_of_type(events, BACKWARD) == ["grad", "backward"] * 3
    assert names_of_type(events, FORWARD) == ["Net.forward"] * 3
    assert_no_phase_in_another(events)
    operators = collections.Counter(names_of_type(events, OPERATOR))
    assert operators["aten::mm"] > 0  # autograd's operators, inside the passes
    assert model_rows(prof)["Backward"]["Calls"] == 6


@pytest.mark.parametrize("backend", BACKENDS)
def test_passes_started_inside_a_backward_pass_are_part_of_it(pk_torch, backend):
    # A custom Function whose backward runs torch.autograd.grad, and
    # reentrant checkpointing, which runs torch.autograd.backward inside the
    # backward pass: on the autograd engine's device threads a second
    # Backward call each, counted twice in the Model summary.
    from torch.utils.checkpoint import checkpoint

    class GradInside(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            with torch.enable_grad():
                x = x.detach().requires_grad_()
                (inner,) = torch.autograd.grad(x.sin().sum(), x)
            return grad_out * inner

    block = nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    pk_torch.enable(backend=backend)

    def step(i):
        y = checkpoint(block, GradInside.apply(x), use_reentrant=True)
        y.sum().backward()

    events = events_of(profile_steps(step))
    assert names_of_type(events, BACKWARD) == ["backward"] * 3
    assert torch.allclose(x.grad, (block.weight.sum(0) * x.cos()) * 3)  # torch's result, untouched


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_func_and_compiled_autograd_grad(pk_torch, backend):
    # torch.func.grad runs torch.autograd.grad: eager, a Backward event; under
    # torch.compile (fullgraph) its passes are traced into the graph: no
    # graph break because of profkit, and no event for the compiler's own
    # tracing passes. torch.autograd.grad itself stays torch's (Dynamo knows
    # it by identity with trace_autograd_ops).
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    autograd_grad = torch.autograd.grad
    pk_torch.enable(backend=backend)
    assert torch.autograd.grad is autograd_grad

    def f(x):
        return (x.sin() ** 2).sum()

    @torch.compile(backend="aot_eager", fullgraph=True)
    def func_grad(x):
        return torch.func.grad(f)(x)

    @torch.compile(backend="aot_eager", fullgraph=True)
    def compiled_grad(x):
        return torch.autograd.grad(f(x), x)[0]

    x = torch.randn(3)
    expected = 2 * x.sin() * x.cos()
    # torch 2.3 compiles torch.func transforms only when asked to.
    capture = {"capture_func_transforms": True} if hasattr(torch._dynamo.config, "capture_func_transforms") else {}
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof, torch._dynamo.config.patch(**capture):
        assert torch.allclose(torch.func.grad(f)(x), expected)
        assert torch.allclose(func_grad(x), expected)
        if hasattr(torch._dynamo.config, "trace_autograd_ops"):  # not in torch 2.6
            with torch._dynamo.config.patch(trace_autograd_ops=True):
                assert torch.allclose(compiled_grad(x.clone().requires_grad_()), expected)
        per_sample = torch.func.vmap(torch.func.grad(f))(x.unsqueeze(1))
        assert torch.allclose(per_sample.squeeze(1), expected)
    assert not counters["graph_break"]
    assert names_of_type(events_of(prof), BACKWARD) == ["grad", "grad"]  # eager, vmap; none compiled
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_backward_event_for_a_pass_on_fake_tensors(pk_torch, backend):
    # torch.compile runs passes on fake tensors while it traces (Dynamo for
    # each node's output, AOTAutograd for the joint graph), where torch
    # 2.11's is_compiling() is False: those are the compiler's, not events.
    from torch._subclasses.fake_tensor import FakeTensorMode

    pk_torch.enable(backend=backend)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with FakeTensorMode():
            fake = torch.randn(3, requires_grad=True)
            torch.autograd.grad((fake.sin() ** 2).sum(), fake)
        real = torch.randn(3, requires_grad=True)
        torch.autograd.grad((real.sin() ** 2).sum(), real)
    assert names_of_type(events_of(prof), BACKWARD) == ["grad"]


# ---- FX tracing outside module calls ------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_events_go_on_after_fx_traces_outside_module_calls(pk_torch, backend):
    # FX puts back what `getattr(nn.Module, "__call__")` read when it began:
    # torch's own under the native range. Traces inside a module call were
    # repaired when the call ended; these are not inside one.
    model = Net()
    x = torch.randn(2, 4)

    @torch.compile(backend="aot_eager", fullgraph=True)
    def plain(t):
        return t * 2 + 1

    torch._dynamo.reset()
    trace = torch.fx.Tracer.__dict__["trace"]
    pk_torch.enable(backend=backend)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        model(x)
        torch.fx.symbolic_trace(Net())
        model(x)
        plain(torch.randn(3))
        model(x)
    forward = [n for n in names_of_type(events_of(prof), FORWARD) if n == "Net.forward"]
    assert forward == ["Net.forward"] * 3
    pk_torch.disable()
    assert torch.fx.Tracer.__dict__["trace"] is trace  # put back
    torch._dynamo.reset()


# ---- forked children ------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("in_window", [False, True])
def test_a_forked_child_that_profiles_records_torch_like_its_parent(pk_torch, backend, in_window):
    pk_torch.enable(backend=backend)
    model = Net()
    x = torch.randn(2, 4)

    def child_work():
        torch.set_num_threads(1)  # OpenMP's pool does not survive fork
        # Unhooked until a window opens, the setting kept.
        unhooked = not hasattr(torch.autograd.backward, "__wrapped__") and not pk_torch.is_enabled()
        if profkit.Profiler.active() is not None:  # the parent's window, which a plain fork goes on with
            profkit.Profiler.active().stop()
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            model(x).sum().backward()
            in_use = pk_torch.backend()
        events = events_of(prof)
        operators = "aten::addmm" in set(names_of_type(events, OPERATOR))
        pk_torch.disable()
        with profkit.Profiler(on_trace_ready=lambda p: None) as after:
            model(x).sum().backward()
        torch_events = [t for t in events_of(after)["type"] if t in (OPERATOR, FORWARD, BACKWARD)]
        return (
            f"{unhooked} {in_use} {pk_torch.is_enabled()} {operators} {names_of_type(events, FORWARD)} "
            f"{names_of_type(events, BACKWARD)} {len(torch_events)}"
        )

    parent = profkit.Profiler(on_trace_ready=lambda p: None)
    if in_window:
        parent.start()
    status, report = run_in_fork(child_work)
    if in_window:
        model(x)
        parent.stop()
        assert names_of_type(events_of(parent), FORWARD) == ["Net.forward"]  # the parent's hooks stay
    assert status == 0
    assert report == f"True {backend} False True ['Net.forward'] ['backward'] 0"


# ---- tensors whose sizes cannot be read as they are ---------------------------------------
def _compile_over_shapes(record):
    """Graphs torch.compile makes for one small net called with 4 batch sizes, the calls inside a window."""
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(net, backend="aot_eager")
    with record():
        for n in range(3, 7):
            compiled(torch.randn(n, 8)).sum()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    return graphs


@pytest.mark.parametrize("option", ["record_shapes", "with_flops"])
def test_shapes_and_flops_leave_torch_compiles_symbolic_sizes_alone(pk_torch, option, capfd):
    # Reading a fake tensor's symbolic sizes while torch.compile traces fixed
    # them: a new graph for every batch size, up to the recompile limit, and
    # an "INTERNAL ASSERT FAILED" from the callback at every detach.
    alone = _compile_over_shapes(lambda: profkit.Profiler(on_trace_ready=lambda p: None, timer_only=True))
    pk_torch.enable(backend="native", **{option: True})
    profiled = _compile_over_shapes(lambda: profkit.Profiler(on_trace_ready=lambda p: None))
    assert profiled == alone
    assert "Exception in RecordFunction callback" not in capfd.readouterr().err


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage:UserWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_operator_on_a_nested_tensor_has_no_shapes_and_runs(pk_torch, backend, capfd):
    # A nested tensor has no sizes: the fallback raised "NestedTensorImpl
    # doesn't support sizes" into the user's call, and the native hook printed
    # it with a backtrace at every operator.
    pk_torch.enable(backend=backend, record_shapes=True)
    nested = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        nested.sin()
    result = prof.profiler_result
    events, args = result.events, result.event_args
    shapes = [a["value"] for a in args if a["key"] == "input_shapes" and events["name"][a["event"]] == "aten::sin"]
    # The nested call first; the native hook also sees the one it makes on
    # the tensors' joint buffer, with that buffer's shape.
    assert shapes[0] == "[[]]" and shapes[1:] in ([], ["[[18]]"])
    assert "NestedTensorImpl" not in capfd.readouterr().err
