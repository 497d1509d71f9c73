"""profkit used the way a large training job uses it: deep nesting, many
steps, many ranks. Each test checks behaviour (the right parents, what is
kept in memory, how much work a step does), not time, and runs in well under
a second."""

import threading

import numpy as np
import pytest

import profkit.cross_rank as cross_rank
import profkit.result as result_module
from profkit import _C
from profkit.result import ProfilerResult, load_profiler_result

OPERATOR = 0
PROFILE_STEP = 2


def record_deep_trees(threads: int, depth: int, trees: int) -> ProfilerResult:
    """`trees` chains `depth` events deep (the recorder's limit is 256) on
    each of `threads` threads."""
    name = _C.intern("deep")

    def work() -> None:
        for _ in range(trees):
            for _ in range(depth):
                _C.begin_event(name, OPERATOR)
            for _ in range(depth):
                _C.end_event()

    _C.set_state(2)
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    _C.set_state(0)
    return ProfilerResult(_C.collect())


class CountingNumpy:
    """numpy, counting the calls of np.searchsorted (one per vectorized pass)."""

    def __init__(self) -> None:
        self.searches = 0

    def searchsorted(self, *args, **kwargs):
        self.searches += 1
        return np.searchsorted(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(np, name)


def test_deep_nesting_parents_match_the_engine():
    result = record_deep_trees(threads=3, depth=256, trees=4)
    events = result.events
    assert len(events) == 3 * 256 * 4
    assert int(events["depth"].max()) == 255
    expected = [result.raw.parent(i) for i in range(len(events))]
    assert events["parent"].tolist() == [-1 if p is None else p for p in expected]


def test_deep_nesting_parents_take_a_fixed_number_of_passes(monkeypatch):
    # One vectorized pass per nesting level made decoding O(events * levels):
    # about 1 s per million events at 256 levels. Passes are counted, not timed.
    depth = np.tile(np.arange(256, dtype=np.uint8), 40)
    thread_first = np.zeros(len(depth), dtype=np.int64)
    counting = CountingNumpy()
    monkeypatch.setattr(result_module, "np", counting)
    parents = result_module._parents(depth, thread_first)
    assert counting.searches <= 2
    monkeypatch.undo()
    index = np.arange(len(depth))
    assert parents.tolist() == np.where(depth == 0, -1, index - 1).tolist()


def test_parents_with_skipped_levels_match_the_nearest_smaller_depth():
    # Depths that skip levels (a hand-made result) still get the nearest
    # earlier event of a smaller depth, on the same thread.
    depth = np.array([0, 2, 1, 3, 0, 1, 0, 3, 9, 2, 1, 4, 3, 2, 1, 0] * 3, dtype=np.uint8)
    thread_first = np.repeat(np.array([0, 16, 32], dtype=np.int64), 16)
    got = result_module._parents(depth, thread_first)
    for i, d in enumerate(depth):
        want = -1
        for j in range(i - 1, int(thread_first[i]) - 1, -1):
            if depth[j] < d:
                want = j
                break
        assert got[i] == want, i


def test_steps_do_not_decode_every_event(monkeypatch):
    # 100k steps in a window of millions of events: .steps decoded the whole
    # events array (seconds, and several times the trace's memory) to read
    # the step events' names.
    _C.set_state(2)
    name = _C.intern("op")
    for step in range(50):
        _C.step_begin(step)
        for _ in range(20):
            _C.begin_event(name, OPERATOR)
            _C.end_event()
        _C.step_end(1)
    _C.set_state(0)
    result = ProfilerResult(_C.collect())

    def refuse():
        raise AssertionError("ProfilerResult.steps decoded every event")

    monkeypatch.setattr(result, "_decode_events", refuse)
    assert result.steps == list(range(50))


def test_cross_rank_summary_holds_one_trace_at_a_time(tmp_path, monkeypatch):
    # `profkit summary --ranks` loaded every rank before reading any: its
    # memory was the sum of all the ranks' traces, not the largest one.
    paths = []
    for rank in range(4):
        _C.set_rank(rank, 4)
        _C.set_state(2)
        _C.step_begin(0)
        _C.begin_event(_C.intern("op"), OPERATOR)
        _C.end_event()
        _C.step_end(1)
        _C.set_state(0)
        path = tmp_path / f"rank{rank}.pktrace"
        _C.collect().save(str(path))
        paths.append(path)
    _C.set_rank(-1, -1)

    alive = []
    loaded = cross_rank._as_result

    def tracked(source):
        result, path = loaded(source)
        alive.append(path)
        return result, path

    real_figures = cross_rank.rank_figures
    open_at_figures = []

    def figures(result, name, source=""):
        open_at_figures.append(len(alive) - len(open_at_figures))
        return real_figures(result, name, source)

    monkeypatch.setattr(cross_rank, "_as_result", tracked)
    monkeypatch.setattr(cross_rank, "rank_figures", figures)
    summary = cross_rank.cross_rank_summary(paths)
    assert [r.rank for r in summary.ranks] == [0, 1, 2, 3]
    assert open_at_figures == [1, 1, 1, 1]


def test_cross_rank_summary_names_count_checked_before_loading(tmp_path):
    with pytest.raises(ValueError, match="2 names for 1 sources"):
        cross_rank.cross_rank_summary([tmp_path / "missing.pktrace"], names=["a", "b"])


def test_deep_nesting_round_trips_through_both_formats(tmp_path):
    result = record_deep_trees(threads=2, depth=256, trees=2)
    for path in (tmp_path / "deep.pktrace", tmp_path / "deep.trace.json"):
        if path.suffix == ".json":
            result.export_chrome_tracing(str(path))
        else:
            result.save(str(path))
        back = load_profiler_result(str(path))
        assert back.events["depth"].tolist() == result.events["depth"].tolist()
        assert back.events["parent"].tolist() == result.events["parent"].tolist()
        assert "Operator Summary" in back.summary()
