"""The pure-Python operator recorder (backend="python"): the same event types as the native hook."""

import collections
import re
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

import profkit  # noqa: E402
from profkit import TracerEventType  # noqa: E402
from profkit.integrations._torch_fallback import format_shapes, schema_inputs  # noqa: E402

from torch_helpers import enclosing_types, make_loader, names_of_type, train  # noqa: E402

nn = torch.nn
OPERATOR = int(TracerEventType.Operator)
OPTIMIZATION = int(TracerEventType.Optimization)


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
    assert shapes["aten::addmm"] == "[[3], [4, 32], [32, 3], [], []]"  # as the native hook: beta, alpha defaulted


def operator_shapes(result):
    """(name, input_shapes) of each Operator event with shapes, in the order they began."""
    events = result.events
    shapes = {int(a["event"]): a["value"] for a in result.event_args if a["key"] == "input_shapes"}
    return [(events["name"][i], shapes[i]) for i in sorted(shapes, key=lambda i: events["start_ns"][i])]


def run_ops(x, v):
    torch.add(x, v)  # alpha (keyword-only) left at its default
    torch.add(x, v, alpha=2)
    x.sum(1, dtype=torch.float64)  # keepdim (positional) defaulted, dtype (keyword) given
    torch.zeros(3, out=v)  # out: a keyword-only tensor


def test_fallback_shapes_list_every_schema_input_as_torch_profiler_does(pk_torch):
    from torch.profiler import ProfilerActivity, profile

    x, v = torch.ones(2, 3), torch.ones(3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as reference:
        run_ops(x, v)
    expected = [(e.name, str(e.input_shapes)) for e in reference.events() if e.cpu_parent is None]
    assert expected == [
        ("aten::add", "[[2, 3], [3], []]"),
        ("aten::add", "[[2, 3], [3], []]"),
        ("aten::sum", "[[2, 3], [], [], []]"),
        ("aten::zeros", "[[], [3]]"),
    ]
    pk_torch.enable(backend="python")
    with profkit.Profiler(on_trace_ready=lambda p: None, record_shapes=True) as prof:
        run_ops(x, v)
    assert operator_shapes(prof.profiler_result) == expected


def saving_and_detaching(x):
    y = x.exp()  # saves its output for backward: a shallow copy
    x.data  # a shallow copy
    x.detach()  # an operator
    y.sum().backward()  # AccumulateGrad's detach: an operator


def test_fallback_records_no_detach_that_only_its_mode_makes(pk_torch):
    # torch's shallow copies call aten::detach through a pushed dispatch
    # mode (not the dispatcher): calls that happen only under the fallback's
    # own mode, and that torch.profiler does not see.
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as reference:
        saving_and_detaching(torch.ones(3, requires_grad=True))
    expected = [e.name for e in reference.events() if e.name == "aten::detach"]
    assert len(expected) == 2
    pk_torch.enable(backend="python")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        saving_and_detaching(torch.ones(3, requires_grad=True))  # no grad yet: AccumulateGrad detaches as above
    assert names_of_type(prof.profiler_result.events, OPERATOR).count("aten::detach") == 2


def test_schema_inputs_put_defaulted_arguments_in_their_places():
    add = tuple((a.name, a.kwarg_only) for a in torch.ops.aten.add.Tensor._schema.arguments)
    assert add == (("self", False), ("other", False), ("alpha", True))
    assert schema_inputs(add, ("x", "y"), {}) == ["x", "y", None]
    assert schema_inputs(add, ("x", "y"), {"alpha": 2}) == ["x", "y", 2]
    addmm = tuple((a.name, a.kwarg_only) for a in torch.ops.aten.addmm.default._schema.arguments)
    assert schema_inputs(addmm, ("b", "m1", "m2"), {"alpha": 3}) == ["b", "m1", "m2", None, 3]


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



def test_a_with_block_restores_the_recorder_in_use_before_it(pk_torch):
    pk_torch.enable(record_shapes=True)  # "auto": the native hook
    outer = pk_torch._current.options
    with pk_torch.enable(backend="python"):
        assert pk_torch.backend() == "python" and pk_torch._current.options.record_shapes is None
        with pk_torch.enable():  # "auto" keeps the recorder in use
            assert pk_torch.backend() == "python"
        assert pk_torch.backend() == "python"
    assert pk_torch.backend() == "native" and pk_torch._current.options == outer
    events = train(make_loader(n=4, batch_size=4)).profiler_result.events
    operators = collections.Counter(names_of_type(events, OPERATOR))
    assert operators["aten::linear"] == 1 and operators["aten::addmm"] == 1  # the native hook's, once
    pk_torch.disable()
    pk_torch.enable(backend="python")
    with pk_torch.enable(backend="native"):
        assert pk_torch.backend() == "native"
    assert pk_torch.backend() == "python" and pk_torch._current.options.backend == "python"


def test_the_fallbacks_one_time_cost_is_paid_in_enable_not_in_a_recorded_step():
    # The first operator through a TorchDispatchMode imports torch._dynamo
    # (seconds). In a fresh process: nothing torch imports should be left
    # for the first recorded step.
    script = (
        "import sys, torch, profkit\n"
        "import profkit.integrations.torch as pk_torch\n"
        "pk_torch.enable(backend='python')\n"
        "before = set(sys.modules)\n"
        "with profkit.Profiler(on_trace_ready=lambda p: None) as prof:\n"
        "    torch.ones(2).mul(2)\n"
        "assert 'aten::mul' in prof.profiler_result.events['name']\n"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('torch')))\n"
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def fail():
    raise RuntimeError("loss is NaN")


def custom_optimizer_class(name):
    """A new optimizer class with a step of its own: torch hooks its step when its first optimizer is made."""

    def __init__(self, params):
        torch.optim.Optimizer.__init__(self, params, {})

    def step(self, closure=None):
        if closure is not None:
            closure()

    return type(name, (torch.optim.Optimizer,), {"__init__": __init__, "step": step})


@pytest.mark.parametrize("backend", ["native", "python"])
def test_an_optimizer_step_that_raises_is_recorded_and_closed(pk_torch, backend):
    from profkit.integrations import _torch_hooks

    custom = custom_optimizer_class("Custom")  # hooked by torch after enable()
    pk_torch.enable(backend=backend)
    param = nn.Parameter(torch.ones(3))
    param.grad = torch.ones(3)
    optimizers = [torch.optim.SGD([param], lr=0.1), custom([param])]
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        for optimizer in optimizers * 2:
            with pytest.raises(RuntimeError, match="loss is NaN"):
                optimizer.step(fail)  # raises inside the step, after the pre hooks
            optimizer.step()
            prof.step()
    result = prof.profiler_result
    events = result.events
    assert names_of_type(events, OPTIMIZATION) == ["SGD.step", "SGD.step", "Custom.step", "Custom.step"] * 2
    assert result.info["unfinished_events"] == 0
    if backend == "python":
        assert _torch_hooks._optimizer_steps.open == []  # nothing left open on this thread


def test_a_step_kept_from_before_enable_that_raises_leaves_nothing_open(pk_torch):
    from profkit.integrations import _torch_hooks

    param = nn.Parameter(torch.ones(3))
    param.grad = torch.ones(3)
    optimizer = torch.optim.SGD([param], lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)  # keeps the optimizer's step as it is now
    pk_torch.enable(backend="python")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with pytest.raises(RuntimeError, match="loss is NaN"):
            optimizer.step(fail)
        for _ in range(2):
            optimizer.step()
            scheduler.step()
            prof.step()
    # The step that raised went around the wrappers: its end was not seen, so
    # it is left out, and what it left open is gone at the next step.
    assert names_of_type(prof.profiler_result.events, OPTIMIZATION) == ["SGD.step"] * 2
    assert _torch_hooks._optimizer_steps.open == []


def test_disable_gives_optimizer_classes_back_their_own_steps(pk_torch):
    import torch.optim.optimizer as optimizer_module

    hooked_before, hooked_while_enabled = custom_optimizer_class("Before"), custom_optimizer_class("While")
    own_step = hooked_while_enabled.__dict__["step"]
    param = nn.Parameter(torch.ones(3))
    hooked_before([param])
    torchs_step = hooked_before.__dict__["step"]
    pk_torch.enable(backend="python")
    assert hooked_before.__dict__["step"] is not torchs_step  # wrapped, to end a step that raises
    hooked_while_enabled([param])
    pk_torch.disable()
    assert hooked_before.__dict__["step"] is torchs_step
    step = hooked_while_enabled.__dict__["step"]
    assert step.hooked and step.__wrapped__ is own_step  # torch's wrapper around the class's own
    optimizer = hooked_while_enabled([param])
    assert hooked_while_enabled.__dict__["step"] is step  # not hooked a second time
    calls = []
    handle = optimizer_module.register_optimizer_step_pre_hook(lambda *args: calls.append(1))
    try:
        optimizer.step()
    finally:
        handle.remove()
    assert calls == [1]


class UserMode(torch.utils._python_dispatch.TorchDispatchMode):
    """A user's own dispatch mode: it notes the operators it sees."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func._schema.name)
        return func(*args, **(kwargs or {}))


def operators(prof):
    return names_of_type(prof.profiler_result.events, OPERATOR)


def test_a_user_mode_entered_inside_a_window_and_exited_after_it_is_left_alone(pk_torch):
    pk_torch.enable(backend="python")
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    prof.start()
    ours = dispatch_modes()[0]
    user = UserMode()
    user.__enter__()
    torch.ones(2).mul(2)
    prof.stop()  # the window closes inside the user's mode
    assert dispatch_modes() == [user]  # ours taken out from under it
    torch.ones(2).div(2)
    user.__exit__(None, None, None)
    assert dispatch_modes() == []
    assert "aten::mul" in user.seen and "aten::div" in user.seen  # the user's mode saw everything
    assert "aten::mul" in operators(prof) and ours not in dispatch_modes()


def test_a_user_mode_entered_before_a_window_and_exited_inside_it_is_left_alone(pk_torch):
    pk_torch.enable(backend="python")
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    with UserMode() as user:
        prof.start()
        assert dispatch_modes()[-1] is user  # ours went under it
        torch.ones(2).mul(2)
    # the user's block popped its own mode, not ours
    assert len(dispatch_modes()) == 1 and dispatch_modes()[0] is not user
    torch.ones(2).div(2)
    prof.stop()
    assert dispatch_modes() == []
    assert {"aten::mul", "aten::div"} <= set(operators(prof))  # recorded on both sides of the user's exit
    assert "aten::div" not in user.seen


def test_user_modes_within_a_window_nest_as_usual(pk_torch):
    pk_torch.enable(backend="python")
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        with UserMode() as outer, UserMode() as inner:
            assert dispatch_modes()[1:] == [outer, inner]
            torch.ones(2).mul(2)
        assert len(dispatch_modes()) == 1
    assert dispatch_modes() == [] and "aten::mul" in inner.seen and "aten::mul" in operators(prof)


def test_a_window_closed_on_another_thread_leaves_the_mode_inert_until_its_thread_comes_back(pk_torch):
    pk_torch.enable(backend="python")
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    prof.start()
    ours = dispatch_modes()[0]
    caught = []
    expected = re.escape(f"closed on thread 'closer'; torch lets only {threading.current_thread().name!r} change")

    def stop_elsewhere():
        with pytest.warns(profkit.ProfilerWarning, match=expected):
            prof.stop()
        caught.append(dispatch_modes())

    closer = threading.Thread(target=stop_elsewhere, name="closer")
    closer.start()
    closer.join()
    assert caught == [[]]  # the closing thread's stack was not touched
    assert dispatch_modes() == [ours] and not ours.live  # still on this thread's stack, recording nothing
    with profkit.Profiler(on_trace_ready=lambda p: None) as again:
        assert dispatch_modes() == [ours] and ours.live  # the same mode, recording again
        torch.ones(2).mul(2)
    assert dispatch_modes() == [] and "aten::mul" in operators(again)


def test_torchs_infra_modes_keep_their_slots_below_ours(pk_torch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    pk_torch.enable(backend="python")
    with FakeTensorMode() as fake, UserMode() as user:
        with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
            assert dispatch_modes()[0] is fake and dispatch_modes()[-1] is user
            torch.ones(2).mul(2)
        assert dispatch_modes() == [fake, user]
    assert dispatch_modes() == [] and "aten::mul" in operators(prof)


def test_enabling_again_and_again_keeps_no_more_hidden_code(pk_torch):
    # Each recorder's copy of the dispatch wrapper's code was kept for good:
    # about 450 bytes an enable()/disable() cycle, without end.
    from profkit import _python_stacks

    pk_torch.enable(backend="python")
    pk_torch.disable()
    hidden = len(_python_stacks._HIDDEN)
    for _ in range(20):
        pk_torch.enable(backend="python")
        pk_torch.disable()
    assert len(_python_stacks._HIDDEN) == hidden
