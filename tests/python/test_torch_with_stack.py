"""with_stack with the PyTorch integration: operators nest under the Python code that ran them."""

import inspect
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402

from torch_helpers import load_example  # noqa: E402

nn = torch.nn


def ancestors(result, index):
    """Names from the event's parent up to its root."""
    events = result.events
    out = []
    parent = events[index]["parent"]
    while parent >= 0:
        out.append(events[parent]["name"])
        parent = events[parent]["parent"]
    return out


def test_operators_sit_under_the_module_code_and_the_builtin_that_called_them(pk_torch):
    pk_torch.enable()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    with profkit.Profiler(targets=[profkit.ProfilerTarget.CPU], on_trace_ready=lambda p: None, with_stack=True) as p:
        model(x).sum().backward()
    result = p.profiler_result
    events = result.events
    linear_forward = nn.Linear.forward.__code__
    qualname = "Linear.forward" if sys.version_info >= (3, 11) else "forward"
    forward_frame = f"{linear_forward.co_filename}({linear_forward.co_firstlineno}): {qualname}"
    linears = [i for i, e in enumerate(events) if e["name"] == "aten::linear"]
    assert len(linears) == 2
    for index in linears:
        chain = ancestors(result, index)
        assert chain[0] == "<built-in function torch._C._nn.linear>"
        assert chain[1] == forward_frame
        assert "Sequential.forward" in chain  # the integration's Forward event, around the module's code
    # Backward's operators run on the autograd engine's threads or under
    # backward(): the Python call that started them encloses those on this thread.
    python_ops = events[events["type"] == int(TracerEventType.PythonOp)]
    assert any(name.endswith(": Tensor.backward" if sys.version_info >= (3, 11) else ": backward")
               for name in python_ops["name"])
    assert result.info["unfinished_events"] == 0
    # The Operator table by source location (torch's key_averages(group_by_stack_n=1)).
    table = result.summary_data(views=profkit.SummaryView.OperatorView, group_by_stack_n=1, op_detail=False)
    operators = table["OperatorView"]
    location = operators.columns.index("Source Location")
    linear_rows = [row for row in operators.rows if row[0] == "aten::linear"]
    assert [row[location] for row in linear_rows] == [f"linear.py({linear_forward.co_firstlineno}): {qualname}"]
    assert linear_rows[0][operators.columns.index("Calls")] == 2


def test_the_example_writes_a_flame_graph_of_the_python_code_and_its_operators(pk_torch, tmp_path, capsys):
    example = load_example()
    example.main(["--steps", "5", "--device", "cpu", "--with-stack", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    [stacks] = sorted(tmp_path.glob("*.stacks"))
    assert str(stacks) in out and "speedscope" in out
    forward = example.SmallCNN.forward.__code__
    frame = f"{forward.co_filename}({forward.co_firstlineno}): "
    lines = stacks.read_text().splitlines()
    convolutions = [line for line in lines if ";aten::conv2d;" in line or line.split(" ")[0].endswith(";aten::conv2d")]
    assert convolutions, lines[:20]
    assert all(frame in line for line in convolutions)  # the model's forward() is on every stack of conv2d
    assert all(int(line.rsplit(" ", 1)[1]) > 0 for line in lines)


def helper_called_by_forward(t):
    return t * 2


class CallsAHelper(nn.Module):
    def forward(self, x):
        return helper_called_by_forward(x)


def frame_name(function):
    code = function.__code__
    qualname = code.co_qualname if sys.version_info >= (3, 11) else code.co_name
    return f"{code.co_filename}({code.co_firstlineno}): {qualname}"


@pytest.mark.parametrize("backend", ["native", "python"])
def test_the_first_window_records_the_users_calls_inside_modules(pk_torch, backend):
    # With the pure-Python recorder, nn.Module.__call__'s wrapper is made as
    # the first window opens, after the tracer took profkit's pass-through
    # code: it read as profkit's own, and nothing under any module call was
    # recorded in that window (a run with one window showed no model code).
    with pk_torch.enable(backend=backend):
        with profkit.Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
            CallsAHelper()(torch.randn(2, 4))
    names = set(prof.profiler_result.events["name"])
    assert {frame_name(CallsAHelper.forward), frame_name(helper_called_by_forward)} <= names



def python_op_names(result):
    events = result.events
    return set(events[events["type"] == int(TracerEventType.PythonOp)]["name"])


@pytest.mark.parametrize("backend", ["native", "python"])
def test_each_operator_sits_right_under_the_users_builtin_call(pk_torch, backend):
    # The fallback's dispatch mode has torch call Python for every operator:
    # find_torch_dispatch_rule, then the mode's __torch_dispatch__ through
    # the wrappers that keep Dynamo out of it (_compile.py's inner,
    # eval_frame.py's _fn). Recorded, they were every operator's innermost
    # frames: its Source Location eval_frame.py's _fn, not Linear.forward.
    with pk_torch.enable(backend=backend):
        model = nn.Linear(4, 2)
        with profkit.Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
            model(torch.randn(3, 4)).relu().sum()
    result = prof.profiler_result
    events = result.events
    operator, python_op = int(TracerEventType.Operator), int(TracerEventType.PythonOp)
    operators = [i for i, e in enumerate(events) if e["type"] == operator]
    assert len(operators) >= 3
    for index in operators:
        caller = events[index]["parent"]
        while events[caller]["type"] == operator:  # the native hook nests aten::addmm in aten::linear
            caller = events[caller]["parent"]
        assert events[caller]["type"] == python_op and events[caller]["name"].startswith("<built-in "), (
            events[index]["name"],
            ancestors(result, index),
        )
    plumbing = ("_compile.py", "eval_frame.py", "simple_registry.py", "_python_dispatch.py")
    assert not [n for n in python_op_names(result) if any(part in n for part in plumbing)]
    table = result.summary_data(views=profkit.SummaryView.OperatorView, group_by_stack_n=1, op_detail=False)
    rows = table["OperatorView"]
    location = rows.columns.index("Source Location")
    forward = nn.Linear.forward.__code__
    qualname = "Linear.forward" if sys.version_info >= (3, 11) else "forward"
    assert {row[location] for row in rows.rows if row[0] == "aten::addmm"} == {
        f"linear.py({forward.co_firstlineno}): {qualname}"
    }


def test_the_fallback_leaves_torchs_same_wrapper_of_other_functions_recorded(pk_torch):
    # The dispatch mode's wrapper shares its code with every function torch
    # wraps alike (Optimizer.zero_grad): only the mode's is left out.
    with pk_torch.enable(backend="python"):
        optimizer = torch.optim.SGD(nn.Linear(4, 2).parameters(), lr=0.1)
        with profkit.Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
            optimizer.zero_grad()
    names = python_op_names(prof.profiler_result)
    zero_grad = torch.optim.Optimizer.zero_grad
    assert {frame_name(zero_grad), frame_name(inspect.unwrap(zero_grad))} <= names


def asks_whether_compiling():
    return torch.compiler.is_compiling()


@pytest.mark.parametrize("backend", ["native", "python"])
def test_profkits_own_is_compiling_checks_are_left_out_and_the_programs_recorded(pk_torch, backend):
    # The hooks ask torch.compiler.is_compiling() to keep out of
    # torch.compile's tracing: the fallback before each module call, the
    # native hook in backward(). Asked from where the user's calls are
    # recorded, they showed as the program's (under Tensor.backward).
    with pk_torch.enable(backend=backend):
        model = nn.Linear(4, 2)
        with profkit.Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
            model(torch.ones(3, 4)).sum().backward()
            asks_whether_compiling()
    result = prof.profiler_result
    events = result.events
    checks = [i for i, e in enumerate(events) if e["name"] == frame_name(torch.compiler.is_compiling)]
    assert [ancestors(result, i)[0] for i in checks] == [frame_name(asks_whether_compiling)]


@pytest.mark.parametrize("backend", ["native", "python"])
def test_the_optimizers_step_code_is_recorded_under_the_users_call(pk_torch, backend):
    # The fallback wraps every optimizer class's step (to end its range when
    # it raises); that wrapper read as profkit's own, so none of the step's
    # code was recorded and its operators sat right under the Optimization range.
    with pk_torch.enable(backend=backend):
        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(3, 4)).sum().backward()
        with profkit.Profiler(on_trace_ready=lambda p: None, with_stack=True) as prof:
            optimizer.step()
    result = prof.profiler_result
    assert frame_name(inspect.unwrap(torch.optim.SGD.step)) in python_op_names(result)
    updates = [i for i, e in enumerate(result.events) if e["name"] == "aten::add_"]
    assert updates and all(ancestors(result, i)[0].startswith("<built-in method add_") for i in updates)
