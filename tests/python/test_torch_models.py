"""profkit.integrations.torch with model code beyond a plain training loop, with both operator recorders:
torch.compile, activation checkpointing, RNNs and attention, gradient accumulation, errors mid-pass."""

import collections
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402

from torch_helpers import events_of, names_of_type  # noqa: E402

nn = torch.nn
OPERATOR = int(TracerEventType.Operator)
FORWARD = int(TracerEventType.Forward)
BACKWARD = int(TracerEventType.Backward)
OPTIMIZATION = int(TracerEventType.Optimization)
PHASES = (FORWARD, BACKWARD, OPTIMIZATION)

BACKENDS = ["native", "python"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 1)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def profile_steps(step, steps=3, **profiler_options):
    """Runs ``step(i)`` for each step in one window (the default: no scheduler); returns the Profiler."""
    prof = profkit.Profiler(on_trace_ready=lambda p: None, **profiler_options)
    with prof:
        for i in range(steps):
            step(i)
            prof.step()
    return prof


def assert_well_formed(events):
    """Children inside their parents, and no phase inside another of a different kind."""
    assert (events["end_ns"] >= events["start_ns"]).all()
    for i in range(len(events)):
        parent = events["parent"][i]
        if parent >= 0:
            assert events["start_ns"][parent] <= events["start_ns"][i] <= events["end_ns"][i] <= events["end_ns"][parent]
        if int(events["type"][i]) in PHASES:
            while parent >= 0:
                assert int(events["type"][parent]) not in PHASES or events["type"][parent] == events["type"][i]
                parent = events["parent"][parent]


def model_rows(prof):
    table = prof.profiler_result.summary_data(time_unit="ns", views="ModelView")["ModelView"]
    return {row[0]: dict(zip(table.columns, row)) for row in table.rows}


# ---- torch.compile ---------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_compiled_in_a_long_window_keeps_every_forward(pk_torch, backend):
    # The usual whole-run window: the model compiles in its first step and
    # recompiles for a new batch size. torch's FX tracing, part of compiling,
    # puts back the nn.Module.__call__ it found, which for the native hook's
    # C wrapper reads as torch's own: every later module call of the window
    # went without a Forward event (the Model summary put all of the
    # forward's time in Others).
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model, backend="aot_eager")
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    original_call = nn.Module.__dict__["__call__"]
    pk_torch.enable(backend=backend)

    def step(i):
        x = torch.randn(4 + i, 8)
        loss = loss_fn(compiled(x), torch.zeros(4 + i, 1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    prof = profile_steps(step)
    events = events_of(prof)
    assert names_of_type(events, FORWARD) == ["OptimizedModule.forward", "MSELoss.forward"] * 3
    assert names_of_type(events, BACKWARD) == ["backward"] * 3
    assert names_of_type(events, OPTIMIZATION) == ["SGD.step"] * 3
    assert_well_formed(events)
    assert model_rows(prof)["Forward"]["Calls"] == 6
    assert nn.Module.__dict__["__call__"] is original_call  # unwrapped when the window closed
    pk_torch.disable()
    assert nn.Module.__dict__["__call__"] is original_call
    torch._dynamo.reset()


def test_the_forward_wrapper_comes_back_after_fx_tracing_at_the_next_batch(pk_torch):
    # FX tracing outside any module call (torch.fx.symbolic_trace, a compiled
    # function) puts torch's __call__ back too; the wrapper reinstalls itself
    # at the next backward or batch fetched in the window.
    model = Net()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(6, 8)), batch_size=2)
    pk_torch.enable(backend="native")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        torch.fx.symbolic_trace(model)
        for (x,) in loader:
            model(x)
            prof.step()
    assert names_of_type(events_of(prof), FORWARD) == ["Net.forward"] * 3
    pk_torch.disable()
    assert nn.Module.__dict__["__call__"] is torch.nn.modules.module.Module.__call__


def test_the_forward_wrappers_home_is_cleared_when_the_window_closes(pk_torch):
    pk_torch.enable(backend="native")
    with profkit.Profiler(on_trace_ready=lambda p: None):
        wrapper = nn.Module.__dict__["__call__"]
        assert wrapper.home is nn.Module
    assert wrapper.home is None
    # Outside windows nothing reinstalls it.
    model = Net()
    model(torch.randn(2, 8)).sum().backward()
    assert nn.Module.__dict__["__call__"] is not wrapper


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_compiled_inside_a_window_still_compiles_fullgraph_after_it(pk_torch, backend):
    # OptimizedModule binds `module.__call__` when made: inside a window,
    # profkit's wrapper, which Dynamo then traces in every later call. The
    # fallback's wrapper called profkit's C function before asking whether
    # Dynamo was tracing: after the window, a graph break (an error with
    # fullgraph=True).
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    model = Net()
    pk_torch.enable(backend=backend)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
        compiled(torch.randn(4, 8)).sum().backward()
    assert names_of_type(events_of(prof), FORWARD) == ["OptimizedModule.forward"]
    pk_torch.disable()
    compiled(torch.randn(4, 8)).sum().backward()
    assert not counters["graph_break"]
    torch._dynamo.reset()


# ---- model code ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointing_counts_each_backward_once(pk_torch, backend, reentrant):
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
            self.head = nn.Linear(8, 1)

        def forward(self, x):
            return self.head(checkpoint(self.block, x, use_reentrant=reentrant))

    model = Checkpointed()
    x = torch.randn(4, 8, requires_grad=True)
    pk_torch.enable(backend=backend)
    prof = profile_steps(lambda i: model(x).sum().backward())
    events = events_of(prof)
    assert names_of_type(events, FORWARD) == ["Checkpointed.forward"] * 3  # the recompute is no Forward
    assert_well_formed(events)
    # The reentrant variant runs a backward inside the backward: part of it.
    rows = model_rows(prof)
    assert rows["Forward"]["Calls"] == 3 and rows["Backward"]["Calls"] == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_attention_rnns_accumulation_and_schedulers(pk_torch, backend):
    torch.manual_seed(0)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1, enable_nested_tensor=False
    )
    lstm = nn.LSTM(8, 8, batch_first=True)
    params = list(encoder.parameters()) + list(lstm.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3, foreach=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
    pk_torch.enable(backend=backend)

    def step(i):
        for _ in range(2):  # gradient accumulation
            out, _ = lstm(encoder(torch.randn(2, 3, 8)))
            out.sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()

    events = events_of(profile_steps(step))
    assert names_of_type(events, FORWARD) == ["TransformerEncoder.forward", "LSTM.forward"] * 6
    assert names_of_type(events, BACKWARD) == ["backward"] * 6
    assert names_of_type(events, OPTIMIZATION) == ["AdamW.step"] * 3
    assert_well_formed(events)


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_in_forward_and_backward_leave_the_phases_closed(pk_torch, backend):
    class Fails(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("in backward")

    class Net2(Net):
        def forward(self, x):
            y = super().forward(x)
            if x.shape[0] == 3:
                raise RuntimeError("in forward")
            return Fails.apply(y)

    model = Net2()
    pk_torch.enable(backend=backend)

    def step(i):
        with pytest.raises(RuntimeError):
            model(torch.randn(3, 8))
        with pytest.raises(ValueError):
            model(torch.randn(2, 8)).sum().backward()
        model.a(torch.randn(2, 8))

    events = events_of(profile_steps(step))
    assert names_of_type(events, FORWARD) == ["Net2.forward", "Net2.forward", "Linear.forward"] * 3
    assert names_of_type(events, BACKWARD) == ["backward"] * 3
    assert_well_formed(events)


@pytest.mark.parametrize("backend", BACKENDS)
def test_meta_device_and_scripted_modules(pk_torch, backend):
    with torch.device("meta"):
        meta_model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    with warnings.catch_warnings():  # torch.jit is deprecated, and still in use
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(Net())
    pk_torch.enable(backend=backend)

    def step(i):
        meta_model(torch.randn(4, 64, device="meta")).sum().backward()
        scripted(torch.randn(2, 8)).sum().backward()

    events = events_of(profile_steps(step))
    assert names_of_type(events, FORWARD) == ["Sequential.forward", "RecursiveScriptModule.forward"] * 3
    operators = collections.Counter(names_of_type(events, OPERATOR))
    assert operators["aten::addmm"] >= 6  # the meta model's and the scripted model's
    assert_well_formed(events)
