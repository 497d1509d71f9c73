"""On a CUDA GPU: kernels launched through the driver API (cuBLAS, Triton) sit
under their operator by default, and the Model table gives backward's kernels
to Backward when an optimizer runs in backward's hooks. Skipped without a GPU
(scripts/gpu_checks.sh runs them on one)."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import SummaryView, _C  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and _C.gpu_available()[0]),
    reason="needs a CUDA GPU with profkit GPU tracing (scripts/gpu_checks.sh runs it on one)",
)

UNATTACHED = "no captured launch"


def profile(work, steps=4):
    with profkit.Profiler(scheduler=(1, steps + 1), on_trace_ready=lambda p: None) as prof:
        for _ in range(steps + 1):
            work()
            torch.cuda.synchronize()
            prof.step()
    return prof


def notes_of(prof, views):
    tables = prof.summary_data(views=views, time_unit="us")
    return tables, [note for table in tables.values() for note in table.notes]


def test_cublas_kernels_are_under_their_operator_by_default(pk_torch, monkeypatch):
    monkeypatch.delenv("PROFKIT_CUPTI_DRIVER", raising=False)
    pk_torch.enable()
    a = torch.randn(1024, 1024, device="cuda")

    def matmuls():
        b = a
        for _ in range(5):
            b = (b @ a).tanh()

    tables, notes = notes_of(profile(matmuls), [SummaryView.KernelView, SummaryView.OperatorView])
    assert len(tables["KernelView"].rows) > 0
    assert not [n for n in notes if UNATTACHED in n], notes
    gpu_total = tables["OperatorView"].columns.index("GPU Total")
    mm_rows = [r for r in tables["OperatorView"].rows if r[0] == "aten::mm"]
    assert mm_rows and all(r[gpu_total] > 0 for r in mm_rows), mm_rows


def compiled_on_cuda():
    """A function torch.compile turns into one Triton kernel (which Triton
    launches with cuLaunchKernel), compiled before any window, and its input."""
    pytest.importorskip("triton", reason="torch.compile needs Triton on CUDA")
    compiled = torch.compile(lambda v: (v.sin() + v.cos()).relu() * 2)
    x = torch.randn(1 << 20, device="cuda")
    compiled(x)
    return lambda: compiled(x)


def test_triton_kernels_are_under_their_launch_by_default(pk_torch, monkeypatch):
    monkeypatch.delenv("PROFKIT_CUPTI_DRIVER", raising=False)
    pk_torch.enable()
    tables, notes = notes_of(profile(compiled_on_cuda()), [SummaryView.KernelView])
    assert any("triton" in row[0] for row in tables["KernelView"].rows), tables["KernelView"].rows
    assert not [n for n in notes if UNATTACHED in n], notes


def test_without_driver_calls_those_kernels_are_counted_unattached(pk_torch, monkeypatch):
    pk_torch.enable()
    work = compiled_on_cuda()
    monkeypatch.setenv("PROFKIT_CUPTI_DRIVER", "0")  # read as each window arms
    tables, notes = notes_of(profile(work), [SummaryView.KernelView, SummaryView.ModelView])
    triton_calls = sum(row[1] for row in tables["KernelView"].rows if "triton" in row[0])
    assert triton_calls == 4
    unattached = [n for n in notes if UNATTACHED in n]
    assert len(unattached) == 2, notes  # the Kernel and the Model tables say so
    assert all(n.startswith("4 GPU records") and "PROFKIT_CUPTI_DRIVER=0" in n for n in unattached), unattached


def test_an_optimizer_in_backward_hooks_leaves_backwards_kernels_to_backward(pk_torch):
    pk_torch.enable()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).cuda()
    optimizers = {p: torch.optim.SGD([p], lr=1e-3) for p in model.parameters()}

    def step_now(p):
        optimizers[p].step()
        optimizers[p].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step_now)  # Optimization on the autograd device thread
    x = torch.randn(256, 1024, device="cuda")

    def train_step():
        model(x).square().mean().backward()

    tables, _ = notes_of(profile(train_step), [SummaryView.ModelView])
    model_table = tables["ModelView"]
    gpu = model_table.columns.index("GPU Total")
    rows = {r[0]: r for r in model_table.rows}
    assert rows["Optimization"][gpu] > 0
    # Backward's matmul gradients are most of the step's GPU time; before the
    # fix they all went to Others.
    assert rows["Backward"][gpu] > rows["Others"][gpu], model_table.rows
    assert rows["Backward"][gpu] > 0.25 * rows["ProfileStep"][gpu], model_table.rows
