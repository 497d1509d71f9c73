"""Schedulers (SPEC §2): make_scheduler, (start, end) pairs, None, validation."""

import itertools
import pickle

import pytest

from profkit import ProfilerState, make_scheduler
from profkit.scheduler import FOREVER, scheduler_from_argument, steady_until

C, Y, R, A = ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN


def states(scheduler, n):
    return [scheduler(s) for s in range(n)]


def test_make_scheduler_three_repeats():
    s = make_scheduler(closed=1, ready=1, record=4, repeat=3)
    assert states(s, 20) == [C, Y, R, R, R, A] * 3 + [C, C]


def test_spec_example_closed1_ready2_record3_repeat1():
    s = make_scheduler(closed=1, ready=2, record=3, repeat=1)
    assert states(s, 8) == [C, Y, Y, R, R, A, C, C]


def test_skip_first():
    s = make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=3)
    assert states(s, 13) == [C, C, C] + [C, Y, R, A] * 2 + [C, C]


def test_ready_zero_goes_from_closed_to_record():
    s = make_scheduler(closed=2, ready=0, record=2, repeat=2)
    assert states(s, 9) == [C, C, R, A, C, C, R, A, C]


def test_record_one_is_record_and_return_only():
    s = make_scheduler(closed=0, ready=0, record=1)
    assert states(s, 4) == [A, A, A, A]


def test_repeat_zero_cycles_forever():
    s = make_scheduler(closed=1, ready=0, record=1)
    assert states(s, 1000)[-4:] == [C, A, C, A]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(closed=-1, ready=0, record=1), "closed"),
        (dict(closed=0, ready=-1, record=1), "ready"),
        (dict(closed=0, ready=0, record=0), "record"),
        (dict(closed=0, ready=0, record=-2), "record"),
        (dict(closed=0, ready=0, record=1, repeat=-1), "repeat"),
        (dict(closed=0, ready=0, record=1, skip_first=-1), "skip_first"),
        (dict(closed=1.5, ready=0, record=1), "closed"),
        (dict(closed="1", ready=0, record=1), "closed"),
        (dict(closed=True, ready=0, record=1), "closed"),
        (dict(closed=0, ready=0, record=None), "record"),
    ],
)
def test_make_scheduler_rejects_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_scheduler(**kwargs)


def test_make_scheduler_is_keyword_only():
    with pytest.raises(TypeError):
        make_scheduler(1, 1, 1)  # type: ignore[misc]


def test_make_scheduler_repr_and_pickle():
    s = make_scheduler(closed=1, ready=1, record=4, repeat=3)
    assert repr(s) == "make_scheduler(closed=1, ready=1, record=4, repeat=3, skip_first=0)"
    assert pickle.loads(pickle.dumps(s)) == s


def test_pair_2_10_records_steps_2_to_9():
    s = scheduler_from_argument((2, 10))
    assert states(s, 12) == [C, Y] + [R] * 7 + [A, C, C]
    assert [k for k in range(12) if s(k).is_recording] == list(range(2, 10))


def test_half_open_list_3_14():
    s = scheduler_from_argument([3, 14])
    assert states(s, 16) == [C, C, Y] + [R] * 10 + [A, C, C]


def test_pair_starting_at_zero_and_one():
    assert states(scheduler_from_argument((0, 2)), 4) == [R, A, C, C]
    assert states(scheduler_from_argument((1, 3)), 5) == [Y, R, A, C, C]


@pytest.mark.parametrize("pair", [(5, 5), (6, 2), (1, 2, 3), (1,), (-1, 3), ("a", 3)])
def test_invalid_pairs_raise_value_error(pair):
    with pytest.raises(ValueError):
        scheduler_from_argument(pair)


def test_none_records_every_step_and_callables_pass_through():
    s = scheduler_from_argument(None)
    assert states(s, 5) == [R] * 5

    def custom(step):
        return A

    assert scheduler_from_argument(custom) is custom


def test_other_types_raise_type_error():
    with pytest.raises(TypeError, match="scheduler"):
        scheduler_from_argument("2,10")  # type: ignore[arg-type]


# ---- steady_until: what lets Profiler.step() skip asking the scheduler -----------------
def check_steady_until(scheduler, steps, horizon):
    """Every step strictly before steady_until is in the state of the step asked about."""
    for step in range(steps):
        until = steady_until(scheduler, step)
        assert until > step, (scheduler, step)
        state = scheduler(step)
        for later in range(step + 1, min(until, step + horizon)):
            assert scheduler(later) is state, (scheduler, step, later, until)
        if until < FOREVER:
            # Exact for make_scheduler: the state does change at `until`,
            # except where CLOSED runs on into the next cycle's CLOSED steps
            # and where a one-step cycle repeats RECORD_AND_RETURN.
            assert scheduler(until) is not state or state in (C, A), (scheduler, step, until)


@pytest.mark.parametrize(
    "closed,ready,record,repeat,skip_first",
    [p for p in itertools.product([0, 1, 3], [0, 1, 2], [1, 2, 5], [0, 1, 3], [0, 2]) if p[0] + p[1] + p[2] > 0],
)
def test_steady_until_matches_make_scheduler_step_by_step(closed, ready, record, repeat, skip_first):
    s = make_scheduler(closed=closed, ready=ready, record=record, repeat=repeat, skip_first=skip_first)
    check_steady_until(s, steps=60, horizon=80)


def test_steady_until_of_pairs_and_none():
    check_steady_until(scheduler_from_argument((3, 14)), steps=40, horizon=60)
    check_steady_until(scheduler_from_argument((0, 1)), steps=10, horizon=20)
    assert steady_until(scheduler_from_argument(None), 7) == FOREVER


def test_steady_until_is_one_step_for_any_other_callable():
    assert steady_until(lambda step: R, 5) == 6
    assert steady_until(make_scheduler(closed=1, ready=1, record=2).__call__, 0) == 1  # a bound method is "any callable"
