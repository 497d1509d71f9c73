"""The pure-Python operator recorder (backend="python"): the same event types as the native hook."""

import collections

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402
from profkit.integrations._torch_fallback import format_shapes  # noqa: E402

from torch_helpers import enclosing_types, make_loader, names_of_type, train  # noqa: E402

OPERATOR = int(TracerEventType.Operator)


def dispatch_modes():
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return _get_current_dispatch_mode_stack()


def test_fallback_records_the_same_event_types(pk_torch):
    pk_torch.enable(backend="python")
    assert pk_torch.backend() == "python"
    events = train(make_loader()).profiler_result.events
    types = {TracerEventType(int(t)).name for t in events["type"]}
    assert types == {"Operator", "Forward", "Backward", "Optimization", "Dataloader", "ProfileStep"}
    operators = collections.Counter(names_of_type(events, OPERATOR))
    # named as RecordFunction names them; composite operators show what they decompose into
    assert operators["aten::convolution"] == 3 and operators["aten::addmm"] == 3
    assert operators["aten::convolution_backward"] == 3 and operators["aten::mm"] >= 3
    assert not [n for n in operators if n.startswith("profiler::")]
    assert all({int(TracerEventType.Forward)} <= around for around in enclosing_types(events, "aten::convolution"))
    assert all(
        {int(TracerEventType.Backward)} <= around for around in enclosing_types(events, "aten::convolution_backward")
    )


def test_fallback_mode_is_pushed_only_inside_windows(pk_torch):
    pk_torch.enable(backend="python")
    seen = []

    def watch(step):
        seen.append(len(dispatch_modes()))
        return profkit.ProfilerState.RECORD_AND_RETURN if step == 1 else profkit.ProfilerState.CLOSED

    train(make_loader(n=12), scheduler=watch)
    assert seen[:3] == [0, 0, 1] and dispatch_modes() == []
    pk_torch.enable(backend="python")
    with profkit.Profiler(on_trace_ready=lambda p: None):
        assert len(dispatch_modes()) == 1
        pk_torch.disable()
        assert dispatch_modes() == []


def test_fallback_records_shapes(pk_torch):
    pk_torch.enable(backend="python", record_shapes=True)
    result = train(make_loader(n=4, batch_size=4)).profiler_result
    events = result.events
    shapes = {events["name"][a["event"]]: a["value"] for a in result.event_args if a["key"] == "input_shapes"}
    assert shapes["aten::addmm"] == "[[3], [4, 32], [32, 3]]"  # the arguments passed (beta, alpha defaulted)


def test_shapes_layout_matches_torch_profilers():
    t = torch.zeros
    assert format_shapes([t(2, 3), t(3), 1.0, None, [t(1), t(2, 2)], []], torch.Tensor) == (
        "[[2, 3], [3], [], [], [[1], [2, 2]], []]"
    )


def test_environment_variable_picks_the_fallback(pk_torch, monkeypatch):
    monkeypatch.setenv("PROFKIT_TORCH_BACKEND", "python")
    pk_torch.enable()
    assert pk_torch.backend() == "python"
    monkeypatch.setenv("PROFKIT_TORCH_BACKEND", "native")
    pk_torch.enable()  # "auto" now means native: the recorder is swapped
    assert pk_torch.backend() == "native"


def test_switching_backends_leaves_one_recorder(pk_torch):
    pk_torch.enable(backend="native")
    native = pk_torch._current.native
    pk_torch.enable(backend="python")
    assert not native.installed() and pk_torch.backend() == "python"
    events = train(make_loader(n=4, batch_size=4)).profiler_result.events
    assert collections.Counter(names_of_type(events, OPERATOR))["aten::addmm"] == 1  # recorded once, not twice


def test_fallback_takes_optimizer_steps_from_hooks(pk_torch):
    import torch.optim.optimizer as optimizer_module

    before = len(optimizer_module._global_optimizer_pre_hooks)
    pk_torch.enable(backend="python")
    assert len(optimizer_module._global_optimizer_pre_hooks) == before + 1
    events = train(make_loader(n=4, batch_size=4)).profiler_result.events
    assert names_of_type(events, int(TracerEventType.Optimization)) == ["SGD.step"]
    pk_torch.disable()
    assert len(optimizer_module._global_optimizer_pre_hooks) == before

