"""paddle.profiler compatibility: Profiler options and targets that
paddle.profiler acts on and profkit does not must say so, as emit_nvtx and
custom_device_types do; an empty targets list means every device, as in
paddle; and make_scheduler gives, step by step, the states of
paddle.profiler's own formula (python/paddle/profiler/profiler.py,
getScheduleState)."""

import itertools
import warnings

import pytest

from profkit import Profiler, ProfilerState, ProfilerTarget, ProfilerWarning, _C, make_scheduler


def test_with_flops_is_kept_for_framework_integrations_without_a_warning():
    # paddle.profiler counts FLOPs when with_flops=True; here the PyTorch
    # integration reads prof.with_flops (tests/python/test_torch_flops.py).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Profiler(with_flops=True, timer_only=True).with_flops is True
        assert Profiler(with_flops=False, timer_only=True).with_flops is False


@pytest.mark.parametrize("target", [ProfilerTarget.XPU, ProfilerTarget.CUSTOM_DEVICE])
def test_paddle_only_targets_warn_and_are_left_out(target):
    # A paddle script names ProfilerTarget.CUSTOM_DEVICE with custom_device_types;
    # without the member it would stop at an AttributeError.
    assert target.value == {"XPU": 2, "CUSTOM_DEVICE": 3}[target.name]  # paddle's values
    with pytest.warns(ProfilerWarning, match=f"cannot trace {target.name}") as record:
        p = Profiler(targets=[ProfilerTarget.CPU, target], timer_only=True)
    assert record[0].filename == __file__
    assert ProfilerTarget.CPU in p.targets and target not in p.targets


def test_empty_targets_means_every_traceable_device(monkeypatch):
    # paddle.profiler: `if targets:` -- [] is the default, not "no GPU".
    monkeypatch.setattr(_C, "gpu_available", lambda: (True, "pretend"))
    assert Profiler(targets=[], timer_only=True).targets == {ProfilerTarget.CPU, ProfilerTarget.GPU}
    assert Profiler(targets=[ProfilerTarget.CPU], timer_only=True).targets == {ProfilerTarget.CPU}


def _paddle_state(closed, ready, record, repeat, skip_first, step):
    """paddle.profiler.make_scheduler's getScheduleState, restated."""
    if step < skip_first:
        return ProfilerState.CLOSED
    step -= skip_first
    period = closed + ready + record
    if repeat > 0 and step // period >= repeat:
        return ProfilerState.CLOSED
    m = step % period
    if m < closed:
        return ProfilerState.CLOSED
    if m < closed + ready:
        return ProfilerState.READY
    return ProfilerState.RECORD if m < period - 1 else ProfilerState.RECORD_AND_RETURN


def test_make_scheduler_matches_paddle_step_by_step_including_zeros():
    for closed, ready, record, repeat, skip_first in itertools.product(range(3), range(3), range(1, 4), range(3), range(3)):
        s = make_scheduler(closed=closed, ready=ready, record=record, repeat=repeat, skip_first=skip_first)
        for step in range(40):
            assert s(step) is _paddle_state(closed, ready, record, repeat, skip_first, step), (
                closed, ready, record, repeat, skip_first, step)
