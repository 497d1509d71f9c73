"""The torch integration against torch.profiler itself: the same training step, recorded once by each.

The native hook must see what torch.profiler sees: every operator (forward,
backward, optimizer, data loading) with the same nesting and the same input
shapes (torch's chrome trace "Input Dims"), the autograd engine's node ranges,
the optimizer step and DataLoader ranges, and the same allocations and frees.
The differences are deliberate: profkit leaves out torch's BACKWARD_FUNCTION
ranges ("AddmmBackward0", one level inside "autograd::engine::evaluate_function:
AddmmBackward0"; the node an in-place op on a view wraps, inside CopySlices' range) and names the optimizer step and DataLoader ranges its own way.
profkit's Operator table counts calls as torch.profiler's key_averages() does (an
operator's only child of the same name, aten::sum in aten::sum, is part of its call).
The pure-Python fallback sees operators below autograd only, so what it records
must be found, in the same order and with the same shapes, among the native
hook's operators -- nothing of its own.
"""

import ast
import collections
import json
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402
from profkit.integrations._torch_version import torch_major_minor  # noqa: E402

nn = torch.nn
F = torch.nn.functional

OPTIMIZATION = int(TracerEventType.Optimization)
DATALOADER = int(TracerEventType.Dataloader)
COMPARED = {int(TracerEventType.Operator), int(TracerEventType.PythonUserDefined), OPTIMIZATION, DATALOADER}


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 10)
        self.norm = nn.LayerNorm(10)

    def forward(self, x):
        return self.norm(self.linear(x) + x)


class Net(nn.Module):
    """Submodules called inside forward, a saved output (exp), an in-place op, a tensor list (cat)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = Inner(), Inner()
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        h = torch.cat([self.a(x), self.b(x).exp()], 0)[: x.shape[0]]
        h.mul_(0.5)
        return self.head(F.relu(h))


def make_step():
    torch.manual_seed(0)
    model = Net()
    data = torch.utils.data.TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    batches = iter(torch.utils.data.DataLoader(data, batch_size=8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        x, y = next(batches)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(3):  # lazy initialization and the optimizer's state are behind us
        step()
    return step


def torch_profiler_step(step, tmp_path, monkeypatch):
    """(name, enclosing name, input dims) of every range, in order; and the bytes of each allocation and free."""
    from torch.autograd import profiler_util
    from torch.profiler import ProfilerActivity, profile

    # torch's EventList folds an only child named as its parent into it
    # (aten::sum > aten::sum) for its tables; its chrome trace keeps both, as profkit does.
    monkeypatch.setattr(profiler_util.EventList, "_remove_dup_nodes", lambda self: None, raising=False)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as reference:
        step()
    path = tmp_path / "trace.json"
    reference.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    # FunctionEvent.input_shapes shows a tensor list as []; the trace's Input Dims lists its tensors.
    dims = {e["args"]["External id"]: e["args"].get("Input Dims") for e in trace if "External id" in e.get("args", {})}

    def backward_function(e):
        # at::RecordScope::BACKWARD_FUNCTION: "AddmmBackward0" inside "autograd::engine::evaluate_function:
        # AddmmBackward0", "MulBackward0" inside CopySlices' range
        return getattr(e, "scope", 0) == 1

    def name(e):
        if e.name.startswith("Optimizer.step#"):
            return "optimizer " + e.name[len("Optimizer.step#") :]
        if e.name.startswith("enumerate(DataLoader)#"):
            return "DataLoader"
        return e.name

    rows = []
    events = [e for e in reference.events() if e.name != "[memory]" and not e.name.startswith("ProfilerStep")]
    for e in sorted(events, key=lambda e: (e.thread, e.time_range.start, -e.time_range.end)):
        if backward_function(e):
            continue
        parent = e.cpu_parent
        while parent is not None and (backward_function(parent) or parent.name.startswith("ProfilerStep")):
            parent = parent.cpu_parent
        shapes = str(dims.get(e.id, e.input_shapes)) if e.name.startswith("aten::") else ""
        rows.append((name(e), name(parent) if parent is not None else "", shapes))
    memory = [(e["ts"], e["args"]["Addr"], e["args"]["Bytes"]) for e in trace if e.get("name") == "[memory]"]
    return rows, memory


def profkit_result(step, pk_torch, backend):
    """The ProfilerResult of one step under profkit, with shapes and memory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's warning that it records no memory
        with pk_torch.enable(record_shapes=True, backend=backend):
            prof = profkit.Profiler(on_trace_ready=lambda p: None, profile_memory=True)
            prof.start()
            step()
            prof.stop()
    return prof.profiler_result


def profkit_step(step, pk_torch, backend):
    result = profkit_result(step, pk_torch, backend)
    events = result.events
    shapes = {int(a["event"]): a["value"] for a in result.event_args if a["key"] == "input_shapes"}

    def name(i):
        kind = int(events["type"][i])
        if kind == OPTIMIZATION:
            return "optimizer " + events["name"][i]
        return "DataLoader" if kind == DATALOADER else events["name"][i]

    rows = []
    for i in range(len(events)):
        if int(events["type"][i]) not in COMPARED:
            continue
        parent = int(events["parent"][i])
        while parent >= 0 and int(events["type"][parent]) not in COMPARED:  # Forward, Backward, ProfileStep
            parent = int(events["parent"][parent])
        rows.append((name(i), name(parent) if parent >= 0 else "", shapes.get(i, "") if name(i).startswith("aten::") else ""))
    memory = [(int(m["time_ns"]), int(m["address"]), int(m["bytes"])) for m in result.memory_events]
    return rows, memory


def within_window(memory):
    """Bytes of every allocation, and of every free of a block allocated in the window, sorted.

    Frees of older blocks depend on what ran before (torch's CPU allocator
    knows their size only if it was profiling when they were allocated)."""
    live, kept = set(), []
    for _, address, size in sorted(memory):
        if size > 0:
            live.add(address)
            kept.append(size)
        elif address in live:
            live.discard(address)
            kept.append(size)
    return sorted(kept)


@pytest.mark.skipif(
    torch_major_minor(torch.__version__) < (2, 4),
    reason="torch.profiler before 2.4 leaves aten::select out around the DataLoader's aten::as_strided",
)
def test_native_hook_records_what_torch_profiler_records(pk_torch, tmp_path, monkeypatch):
    step = make_step()
    expected, expected_memory = torch_profiler_step(step, tmp_path, monkeypatch)
    rows, memory = profkit_step(step, pk_torch, "native")
    names = [r[0] for r in rows]
    assert "autograd::engine::evaluate_function: AddmmBackward0" in names and "optimizer SGD.step" in names
    assert ("aten::cat", "", "[[[8, 10], [8, 10]], []]") in rows  # a tensor list's shapes
    assert rows == expected
    assert within_window(memory) == within_window(expected_memory) != []


def steps_with_folds(step):
    """x.sum() (aten::sum inside aten::sum), scalar division (how it nests varies with torch's version), then
    `step`."""
    x = torch.randn(2, 4)

    def run():
        x.sum()
        (x / 2).div_(2)
        step()

    return run


def torch_profiler_tables(run):
    """Calls per operator in torch.profiler's key_averages(), and per operator and input shapes in
    key_averages(group_by_input_shape=True), leaving out what profkit records as no Operator event:
    autograd's node ranges ("AddmmBackward0", BACKWARD_FUNCTION scope) and torch's own record_function
    ranges ("Optimizer.step#SGD.step", USER_SCOPE: profkit's Optimization, Dataloader, PythonUserDefined)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as reference:
        run()
    backward_function, user_scope = 1, 7  # at::RecordScope
    left_out = {e.name for e in reference.events() if getattr(e, "scope", 0) in (backward_function, user_scope)}
    assert "AddmmBackward0" in left_out and "Optimizer.step#SGD.step" in left_out
    calls = collections.Counter()
    for e in reference.key_averages():
        if e.key not in left_out:
            calls[e.key] += e.count
    shaped = collections.Counter()
    for e in reference.key_averages(group_by_input_shape=True):
        if e.key not in left_out:
            shaped[(e.key, str(e.input_shapes))] += e.count
    return calls, shaped


def as_key_averages_shapes(shapes):
    """profkit's input shapes as key_averages(group_by_input_shape=True) shows them: a tensor list as []
    (profkit lists its tensors' shapes, as torch's Chrome trace "Input Dims" does)."""
    inputs = ast.literal_eval(shapes) if shapes else []
    return str([[] if any(isinstance(item, list) for item in entry) else entry for entry in inputs])


def test_operator_rows_count_what_torch_profilers_tables_count(pk_torch):
    # Calls as key_averages() counts them: an operator's only child of the
    # same name (aten::sum in aten::sum) is part of its call, in a row per
    # operator and in a row per operator and input shapes.
    run = steps_with_folds(make_step())
    expected_calls, expected_shaped = torch_profiler_tables(run)
    result = profkit_result(run, pk_torch, "native")
    table = result.summary_data(views=profkit.SummaryView.OperatorView, op_detail=False)["OperatorView"]
    calls = table.columns.index("Calls")
    counted = collections.Counter()
    for row in table.rows:
        counted[row[0]] += row[calls]
    assert counted == expected_calls
    # The run had a folded operator: the trace has more of its events than calls.
    events = result.events
    recorded = collections.Counter(
        events["name"][i] for i in range(len(events)) if int(events["type"][i]) == int(TracerEventType.Operator)
    )
    assert recorded["aten::sum"] > counted["aten::sum"] > 0

    table = result.summary_data(
        views=profkit.SummaryView.OperatorView, op_detail=False, group_by_input_shape=True
    )["OperatorView"]
    calls, shapes = table.columns.index("Calls"), table.columns.index("Input Shapes")
    counted = collections.Counter()
    listed = collections.Counter()
    for row in table.rows:
        counted[(row[0], as_key_averages_shapes(row[shapes]))] += row[calls]
        listed[(row[0], row[shapes] or "")] += row[calls]
    assert counted == expected_shaped
    # One operator, several shapes: a row each (the two inner Linear(10, 10) share one).
    assert listed[("aten::addmm", "[[10], [8, 10], [10, 10], [], []]")] == 2
    assert listed[("aten::addmm", "[[3], [8, 10], [10, 3], [], []]")] == 1
    assert listed[("aten::cat", "[[[8, 10], [8, 10]], []]")] == 1  # a tensor list's shapes


def test_self_cpu_time_is_what_nests_nothing_in_torch_profilers_tree(pk_torch, tmp_path, monkeypatch):
    # An operator that encloses nothing in torch.profiler's tree has all its
    # time as self time in profkit's Operator table; one that encloses
    # something has less.
    step = make_step()
    expected_rows, _ = torch_profiler_step(step, tmp_path, monkeypatch)
    parents = {parent for _, parent, _ in expected_rows}
    table = profkit_result(step, pk_torch, "native").summary_data(
        views=profkit.SummaryView.OperatorView, op_detail=False, time_unit="ns"
    )["OperatorView"]
    total, own = table.columns.index("CPU Total"), table.columns.index("Self CPU Total")
    rows = {row[0]: row for row in table.rows if row[0].startswith("aten::")}
    leaves = [name for name in rows if name not in parents]
    assert "aten::addmm" in parents and "aten::exp" in leaves  # addmm encloses an operator here, exp none
    for name in leaves:
        assert rows[name][own] == rows[name][total], name
    for name in set(rows) & parents:
        assert rows[name][own] < rows[name][total], name


def test_fallback_records_only_operators_the_native_hook_records(pk_torch):
    step = make_step()
    native = [r for r in profkit_step(step, pk_torch, "native")[0] if r[0].startswith("aten::")]
    fallback = [r for r in profkit_step(step, pk_torch, "python")[0] if r[0].startswith("aten::")]
    assert {"aten::addmm", "aten::mm", "aten::native_layer_norm_backward"} <= {r[0] for r in fallback}
    # in order, by name and shapes (its operators nest in nothing: compare without parents)
    remaining = iter((name, shapes) for name, _, shapes in native)
    missing = [(name, shapes) for name, _, shapes in fallback if (name, shapes) not in remaining]
    assert missing == []
