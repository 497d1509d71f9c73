"""with_flops with the PyTorch integration: FLOPs of matrix products, convolutions, mul and add.

torch.profiler's own with_flops (the same workload, the same operators) and
torch.utils.flop_counter.FlopCounterMode are the reference counts.
"""

import json
import re
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import ProfilerWarning, SummaryView  # noqa: E402

from torch_helpers import load_example  # noqa: E402

nn = torch.nn


def in_window(work, **profiler_options):
    """Runs ``work()`` inside one profkit window of the CPU; returns its result."""
    with profkit.Profiler(targets=[profkit.ProfilerTarget.CPU], on_trace_ready=lambda p: None, **profiler_options) as p:
        work()
    return p.profiler_result


def flops_by_operator(result):
    """Operator name -> the sum of its calls' "flops" arguments."""
    events, args = result.events, result.event_args
    totals = {}
    for a in args:
        if a["key"] == "flops":
            name = events["name"][a["event"]]
            totals[name] = totals.get(name, 0) + int(a["value"])
    return totals


def mixed_workload():
    """A small CNN forward plus each counted operator on its own."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
    x = torch.randn(4, 3, 16, 16)
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    p, q, base = torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 3, 5)
    u, v = torch.randn(8, 9), torch.randn(8, 9)

    def work():
        model(x)
        torch.mm(a, b)
        torch.bmm(p, q)
        torch.baddbmm(base, p, q)
        torch.mul(u, v)
        torch.add(u, v)

    return work


def test_flops_are_what_torch_profiler_counts(pk_torch):
    work = mixed_workload()
    pk_torch.enable(with_flops=True)
    ours = flops_by_operator(in_window(work))
    pk_torch.disable()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as prof:
        work()
    theirs = {e.key: e.flops for e in prof.key_averages() if e.flops}
    assert set(theirs) >= {"aten::conv2d", "aten::addmm", "aten::mm", "aten::bmm", "aten::mul", "aten::add"}
    assert ours == theirs


@pytest.mark.parametrize(
    "make, x",
    [
        (lambda: nn.Conv1d(4, 6, 5, stride=2, padding=1), (3, 4, 17)),
        (lambda: nn.Conv1d(4, 6, 5, padding="same"), (3, 4, 17)),
        (lambda: nn.Conv2d(4, 6, 3, stride=(2, 1), padding="valid", dilation=2), (2, 4, 11, 9)),
        (lambda: nn.Conv2d(4, 8, 3, groups=2, padding=(1, 0)), (2, 4, 7, 7)),
        (lambda: nn.Conv2d(4, 6, 3), (4, 7, 7)),  # an unbatched input
        (lambda: nn.Conv3d(2, 3, (1, 3, 3), stride=2, padding=1), (1, 2, 5, 6, 7)),
    ],
)
def test_convolutions_count_what_flop_counter_mode_counts(pk_torch, make, x):
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    conv, x = make(), torch.randn(*x)
    pk_torch.enable(with_flops=True)
    ours = flops_by_operator(in_window(lambda: conv(x)))
    pk_torch.disable()
    counter = FlopCounterMode(display=False)
    with counter:
        conv(x)
    assert ours == {f"aten::conv{conv.weight.dim() - 2}d": counter.get_total_flops()}


def test_mul_and_add_count_the_broadcast_result_and_tensor_with_number(pk_torch):
    pk_torch.enable(with_flops=True)
    a, b = torch.randn(4, 1), torch.randn(1, 5)
    totals = flops_by_operator(in_window(lambda: (torch.mul(a, b), torch.add(a, 2.0))))
    assert totals == {"aten::mul": 20, "aten::add": 4}


def test_the_operator_summary_gets_a_flops_column_and_the_trace_keeps_them(pk_torch, tmp_path):
    pk_torch.enable(with_flops=True)
    result = in_window(mixed_workload())
    (table,) = result.summary_data(views=SummaryView.OperatorView, op_detail=False).values()
    rows = {row[0]: dict(zip(table.columns, row)) for row in table.rows}
    assert table.kinds[table.columns.index("FLOPs")] == "flops"
    assert rows["aten::conv2d"]["FLOPs"] == 2 * 4 * 8 * 16 * 16 * 3 * 3 * 3
    assert rows["aten::mm"]["FLOPs"] == 2 * 5 * 6 * 7
    assert rows["aten::relu"]["FLOPs"] is None  # not counted: "-" in the text
    text = result.summary(views=SummaryView.OperatorView)
    mm_row = next(line for line in text.splitlines() if line.startswith("aten::mm "))
    assert mm_row.endswith("  420")  # below 1000: the count itself
    conv_row = next(line for line in text.splitlines() if line.startswith("aten::conv2d "))
    assert conv_row.endswith("  442.37 K")
    chrome = tmp_path / "flops.trace.json"
    result.export_chrome_tracing(str(chrome))
    with open(chrome) as f:
        in_trace = [e for e in json.load(f)["traceEvents"] if e.get("name") == "aten::mm" and e.get("ph") == "X"]
    assert [e["args"]["flops"] for e in in_trace] == [2 * 5 * 6 * 7]
    pktrace = tmp_path / "flops.pktrace"
    result.save(str(pktrace))
    for loaded in (profkit.load_profiler_result(str(pktrace)), profkit.load_profiler_result(str(chrome))):
        assert flops_by_operator(loaded) == flops_by_operator(result)
        assert loaded.summary(views=SummaryView.OperatorView) == result.summary(views=SummaryView.OperatorView)


def test_with_flops_follows_the_profiler_unless_enable_says(pk_torch):
    work = mixed_workload()
    pk_torch.enable()  # with_flops=None: each Profiler decides
    assert "aten::mm" in flops_by_operator(in_window(work, with_flops=True))
    without = in_window(work)
    assert flops_by_operator(without) == {}
    (table,) = without.summary_data(views=SummaryView.OperatorView).values()
    assert "FLOPs" not in table.columns
    pk_torch.enable(with_flops=False)  # enable's word wins over the Profiler's
    assert flops_by_operator(in_window(work, with_flops=True)) == {}


def test_flops_and_shapes_together(pk_torch):
    pk_torch.enable(with_flops=True, record_shapes=True)
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    result = in_window(lambda: torch.mm(a, b))
    events = result.events
    args = {(events["name"][a["event"]], a["key"]): a["value"] for a in result.event_args}
    assert args[("aten::mm", "flops")] == 2 * 2 * 3 * 4
    assert args[("aten::mm", "input_shapes")] == "[[2, 3], [3, 4]]"


def test_the_python_fallback_counts_what_flop_counter_mode_counts(pk_torch):
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    conv, x = nn.Conv2d(3, 4, 3, stride=2), torch.randn(2, 3, 9, 9)
    a, b = torch.randn(5, 6), torch.randn(6, 7)

    def work():
        conv(x)
        torch.mm(a, b)
        torch.mul(a, a)

    pk_torch.enable(backend="python", with_flops=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProfilerWarning)  # nothing to warn about: it counts
        ours = flops_by_operator(in_window(work))
    pk_torch.disable()
    counter = FlopCounterMode(display=False)
    with counter:
        work()
    expected = {"aten::" + str(op).split(".", 1)[1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    assert ours == expected
    assert set(ours) == {"aten::convolution", "aten::mm"}  # as the dispatcher sees conv2d; no mul


def test_enable_refuses_a_with_flops_that_is_not_a_bool(pk_torch):
    with pytest.raises(TypeError, match="with_flops must be a bool or None"):
        pk_torch.enable(with_flops="yes")


def test_the_example_counts_flops_when_asked(pk_torch, tmp_path, capsys):
    load_example().main(["--steps", "5", "--device", "cpu", "--with-flops", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    operators = out[out.index("Operator Summary") : out.index("Trace files:")]
    lines = operators.splitlines()
    header = next(line for line in lines if line.startswith("Name"))
    assert header.split()[-1] == "FLOPs"
    # The example prints the 12 operators that took the most time; which ones
    # varies with the machine's noise (a stall inside aten::add_ once pushed
    # conv2d out), so the printed rows are checked for their format and the
    # saved trace, which keeps every operator, for conv2d's count.
    counted = [line for line in lines if line.startswith("aten::") and not line.endswith(" -")]
    assert counted, operators
    for row in counted:
        assert re.search(r"  \d+(\.\d\d [KMGTPE])?$", row), row  # "   58.72 M": with a decimal prefix from 1000 on
    (pktrace,) = tmp_path.glob("*.pktrace")
    result = profkit.load_profiler_result(str(pktrace))
    (table,) = result.summary_data(views=SummaryView.OperatorView, op_detail=False).values()
    conv = next(dict(zip(table.columns, row)) for row in table.rows if row[0] == "aten::conv2d")
    assert conv["FLOPs"] > 1_000_000  # the example's first convolution alone: 2 * 32 * 16 * 32 * 32 * 3 * 3 * 3
