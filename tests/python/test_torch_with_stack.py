"""with_stack with the PyTorch integration: operators nest under the Python code that ran them."""

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

