"""Benchmark mode (SPEC §7): step timing, reader cost, step_info and the Perf
Summary, on a fake clock so every figure is exact."""

import time

import pytest

import profkit
from profkit import Profiler, _C, dataloader_range, make_scheduler, wrap_dataloader
from profkit import timer as timer_module
from profkit.timer import StepTimer

MS = 1_000_000


class FakeClock:
    """The timer's clock and the engine's reader-time total, both under the test's control."""

    def __init__(self):
        self.now = 1_000 * MS
        self.reader_total = 7 * MS

    def __call__(self):
        return self.now

    def reader_time_ns(self):
        return self.reader_total

    def advance(self, ns):
        self.now += ns

    def load(self, ns):
        """ns of data loading: the clock and the reader total move together."""
        self.now += ns
        self.reader_total += ns


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(timer_module, "clock_ns", fake)
    monkeypatch.setattr(timer_module, "reader_time_ns", fake.reader_time_ns)
    return fake


def run_steps(timer, clock, batches_ms, readers_ms=None, samples=None):
    for k, batch in enumerate(batches_ms):
        reader = readers_ms[k] if readers_ms else 0
        clock.load(reader * MS)
        clock.advance((batch - reader) * MS)
        timer.step(samples[k] if samples else None)


def test_step_info_format_and_averages_since_the_last_call(clock):
    t = StepTimer()
    t.start()
    run_steps(t, clock, [10, 20, 30], readers_ms=[1, 2, 3], samples=[4, 4, 4])
    # 12 samples in 60 ms = 200 samples/s; reader 2 ms, batch 20 ms on average.
    assert t.step_info() == "reader_cost: 0.00200 s batch_cost: 0.02000 s ips: 200.000 samples/s"
    run_steps(t, clock, [50], readers_ms=[10], samples=[10])
    assert t.step_info(unit="images") == "reader_cost: 0.01000 s batch_cost: 0.05000 s ips: 200.000 images/s"
    assert t.step_info() == "reader_cost: 0.00000 s batch_cost: 0.00000 s ips: 0.000 steps/s"
    run_steps(t, clock, [50], samples=[5])
    assert t.step_info().endswith(" ips: 100.000 images/s")  # the unit last given is kept


def test_steps_without_num_samples_count_steps(clock):
    t = StepTimer()
    t.start()
    run_steps(t, clock, [100, 400])
    assert t.step_info("images") == "reader_cost: 0.00000 s batch_cost: 0.25000 s ips: 4.000 steps/s"


def test_summary_is_exact_and_leaves_out_the_warm_up(clock):
    t = StepTimer(warmup_steps=10)
    t.start()
    batches = [1000] * 10 + [10, 20, 30, 40, 100]  # increasing, then a jump: Paddle's elif misses the min
    readers = [500] * 10 + [1, 2, 3, 4, 5]
    run_steps(t, clock, batches, readers_ms=readers, samples=[8] * 15)
    s = t.summary()
    assert (s.steps, s.first_step, s.total_steps) == (5, 10, 15)
    assert s.batch_cost.avg == pytest.approx(0.040)  # 200 ms / 5 steps, not / 4
    assert (s.batch_cost.max, s.batch_cost.min) == (pytest.approx(0.1), pytest.approx(0.01))
    assert s.reader_cost.avg == pytest.approx(0.003)
    assert (s.reader_cost.max, s.reader_cost.min) == (pytest.approx(0.005), pytest.approx(0.001))
    assert s.ips.avg == pytest.approx(40 / 0.2)  # total samples / total time
    assert (s.ips.max, s.ips.min) == (pytest.approx(800.0), pytest.approx(80.0))
    assert s.reader_ratio == pytest.approx(100 * 15 / 200)
    assert s.ips_unit == "samples/s"


def test_short_runs_are_summarized_whole(clock):
    t = StepTimer(warmup_steps=10)
    t.start()
    run_steps(t, clock, [10, 30])
    s = t.summary()
    assert (s.steps, s.first_step) == (2, 0)
    assert s.batch_cost.avg == pytest.approx(0.02)
    assert s.ips_unit == "steps/s" and s.ips.avg == pytest.approx(50.0)


def test_no_steps_no_summary(clock):
    t = StepTimer()
    t.start()
    assert t.summary() is None


def _reference_summary(batches, readers, samples, warmup, unit):
    """The Perf Summary's figures computed from every step's raw figures."""
    first = warmup if len(batches) > warmup else 0
    b, r, n = batches[first:], readers[first:], samples[first:]
    by_samples = all(x is not None for x in n)
    per_step = [((x if by_samples else 1) / (y / 1e9)) if y > 0 else 0.0 for x, y in zip(n, b)]
    work = sum(n) if by_samples else len(n)
    figures = [len(b), first]
    figures += [sum(r) / len(b) / 1e9, max(r) / 1e9, min(r) / 1e9]
    figures += [sum(b) / len(b) / 1e9, max(b) / 1e9, min(b) / 1e9]
    figures += [work / (sum(b) / 1e9) if sum(b) > 0 else 0.0, max(per_step), min(per_step)]
    return figures, f"{unit}/s" if by_samples else "steps/s"


@pytest.mark.parametrize("warmup", [0, 3, 10, 25])
@pytest.mark.parametrize("with_samples", [True, False])
def test_folding_steps_into_totals_keeps_every_figure_exact(clock, monkeypatch, warmup, with_samples):
    # Long runs keep running totals instead of every step's figures; fold
    # every 7 steps so that folds land everywhere: inside the warm-up, across
    # its end, between step_info calls.
    import random

    monkeypatch.setattr(timer_module, "_FOLD_STEPS", 7)
    rng = random.Random(warmup)
    t = StepTimer(warmup_steps=warmup)
    t.start()
    batches, readers, samples = [], [], []
    since_info = 0
    for k in range(60):
        batch = rng.choice([0, 1, 2, 5, 9]) * MS
        reader = min(batch, rng.choice([0, 1, 3]) * MS)
        n = rng.choice([1, 4, 8]) if with_samples or k % 5 else None
        clock.load(reader)
        clock.advance(batch - reader)
        t.step(n)
        batches.append(batch), readers.append(reader), samples.append(n)
        since_info += 1
        if rng.random() < 0.15:
            b, r, x = batches[-since_info:], readers[-since_info:], samples[-since_info:]
            by_samples = all(v is not None for v in x)
            work = sum(x) if by_samples else len(x)
            ips = work / (sum(b) / 1e9) if sum(b) > 0 else 0.0
            expected = (
                f"reader_cost: {sum(r) / len(r) / 1e9:.5f} s batch_cost: {sum(b) / len(b) / 1e9:.5f} s "
                f"ips: {ips:.3f} {'samples/s' if by_samples else 'steps/s'}"
            )
            assert t.step_info() == expected
            since_info = 0
    s = t.summary()
    assert t.steps == 60
    figures, unit = _reference_summary(batches, readers, samples, warmup, "samples")
    got = [s.steps, s.first_step]
    for stats in (s.reader_cost, s.batch_cost, s.ips):
        got += [stats.avg, stats.max, stats.min]
    assert got == pytest.approx(figures) and s.ips_unit == unit


def test_a_long_run_keeps_bounded_memory(clock, monkeypatch):
    # Every step's figures kept for the whole run grew ~57 bytes a step
    # (1.7 GB over a week at 50 steps/s).
    import tracemalloc

    monkeypatch.setattr(timer_module, "_FOLD_STEPS", 64)
    t = StepTimer()
    t.start()
    run_steps(t, clock, [2] * 1000, samples=[4] * 1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run_steps(t, clock, [2] * 20000, samples=[4] * 20000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000  # unbounded: > 1 MB
    assert t.steps == 21000 and t.summary().ips.avg == pytest.approx(2000.0)


def test_perf_summary_layout(clock):
    t = StepTimer(warmup_steps=0)
    t.start()
    run_steps(t, clock, [10, 30], readers_ms=[2, 2], samples=[4, 4])
    t.step_info("images")
    lines = t.summary().format().splitlines()
    assert lines[0] == "Perf Summary".center(100, "=")
    assert lines[1] == "Steps: 2 (all)"
    assert lines[2] == "Reader Ratio: 10.000%"
    assert lines[3] == "Time Unit: s, IPS Unit: images/s"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:]]
    assert cells == [
        ["", "avg", "max", "min"],
        ["reader_cost", "0.00200", "0.00200", "0.00200"],
        ["batch_cost", "0.02000", "0.03000", "0.01000"],
        ["ips", "200.00000", "400.00000", "133.33333"],
    ]


def test_step_info_unit_must_be_a_str(clock):
    t = StepTimer()
    t.start()
    run_steps(t, clock, [10], samples=[4])
    for bad in (3, b"images", ["images"]):
        with pytest.raises(TypeError, match="step_info: unit must be a str naming what num_samples counts"):
            t.step_info(bad)
    assert t.step_info().endswith("samples/s")  # the refused unit was not kept
    p = Profiler(timer_only=True)
    with pytest.raises(TypeError, match="unit must be a str"):
        p.step_info(unit=8)


def test_invalid_warmup():
    with pytest.raises(ValueError):
        StepTimer(warmup_steps=-1)


# ---- through the Profiler -------------------------------------------------------------


def test_timer_only_times_steps_prints_the_summary_and_records_nothing(capsys):
    # Reader time is the engine's (real time): each step sleeps 2 ms in a range.
    before = _C.counters()["recorded_events"]
    with Profiler(timer_only=True) as p:
        for _ in range(3):
            with dataloader_range():
                time.sleep(0.002)
            time.sleep(0.001)
            p.step(num_samples=5)
        info = p.step_info("images")
    assert info.startswith("reader_cost: ") and info.endswith(" images/s")
    s = p.perf_summary
    assert s.steps == 3
    assert 0.002 <= s.reader_cost.min <= s.reader_cost.max < s.batch_cost.max
    assert 0 < s.reader_ratio < 100
    out = capsys.readouterr().out
    assert "Perf Summary" in out and "Reader Ratio: " in out and "IPS Unit: images/s" in out
    assert _C.counters()["recorded_events"] == before
    assert _C.get_state() == 0


def test_benchmark_is_on_while_profiling_and_callbacks_are_not_step_time(clock, capsys):
    def slow_callback(prof):
        clock.advance(1000 * MS)  # exporting a trace is not the model's time

    with Profiler(scheduler=make_scheduler(closed=0, ready=0, record=1), on_trace_ready=slow_callback) as p:
        for _ in range(4):
            clock.advance(10 * MS)
            p.step(num_samples=2)
    assert p.step_info() == "reader_cost: 0.00000 s batch_cost: 0.01000 s ips: 200.000 samples/s"
    assert "Perf Summary" in capsys.readouterr().out


def test_wrap_dataloader_refuses_a_name_that_is_not_a_str_when_called():
    # It used to fail only at the first batch, naming dataloader_range.
    for bad in (3, b"fetch", ["fetch"]):
        with pytest.raises(TypeError, match="profkit.wrap_dataloader: name must be a str"):
            wrap_dataloader(range(3), name=bad)
    assert list(wrap_dataloader(range(3), name="")) == [0, 1, 2]  # empty: the default name


def test_reader_cost_from_wrap_dataloader():
    class Loader:
        batch_size = 3

        def __init__(self):
            self.items = [1, 2, 3]

        def __iter__(self):
            for item in self.items:
                time.sleep(0.004)  # fetching a batch
                yield item

        def __len__(self):
            return len(self.items)

    loader = wrap_dataloader(Loader())
    assert len(loader) == 3 and loader.batch_size == 3
    seen = []
    with Profiler(timer_only=True) as p:
        for batch in loader:
            seen.append(batch)
            time.sleep(0.002)
            p.step()
    assert seen == [1, 2, 3]
    s = p.perf_summary
    # Each step waited 4 ms for its batch; the time after it is not reader cost.
    assert 0.004 <= s.reader_cost.min
    assert all(r < b for r, b in zip(p._timer._reader_ns, p._timer._batch_ns))


def test_dataloader_ranges_are_recorded_as_dataloader_events():
    windows = []
    with Profiler(on_trace_ready=lambda prof: windows.append(prof.profiler_result)) as p:
        for _ in wrap_dataloader(range(3), name="fetch"):
            p.step()
        with dataloader_range():
            pass
    ev = windows[0].events
    loads = ev[ev["type"] == int(profkit.TracerEventType.Dataloader)]
    # three batches, the fetch that ends the iteration, and the manual range
    assert list(loads["name"]) == ["fetch"] * 4 + ["Dataloader"]
    assert all(ev["name"][loads["parent"]][k].startswith("ProfileStep#") for k in range(5))


def test_reader_time_goes_to_running_timers_only():
    t = StepTimer()
    t.start()
    with dataloader_range():
        time.sleep(0.005)
    t.step()
    t.stop()
    with dataloader_range():  # t is stopped: not its reader time, in this run or the next
        time.sleep(0.02)
    t.start()
    t.step()
    assert t.steps == 1
    assert t._reader_ns == [0]


def test_every_running_timer_gets_the_reader_time_of_its_own_steps():
    first, second = StepTimer(), StepTimer()
    first.start()
    with dataloader_range():
        time.sleep(0.003)
    second.start()  # began after that fetch: none of it is second's
    with dataloader_range("outer"), dataloader_range("inner"):  # one range: 2 ms
        time.sleep(0.002)
    first.step()
    second.step()
    assert first._reader_ns[0] >= 0.005 * 1e9
    assert 0.002 * 1e9 <= second._reader_ns[0] < first._reader_ns[0]


def test_batches_prefetched_on_another_thread_are_not_the_loops_reader_cost():
    # A background thread fetches batches (the slow part) into a queue while
    # the loop computes; the loop's own wait is what it costs, and here it
    # fetched nothing itself.
    import queue
    import threading

    ready: "queue.Queue[int]" = queue.Queue()

    def slow_batches():
        for batch in range(3):
            time.sleep(0.004)  # fetching
            yield batch

    def prefetch():
        for batch in wrap_dataloader(slow_batches()):
            ready.put(batch)

    with Profiler(timer_only=True) as p:
        worker = threading.Thread(target=prefetch)
        worker.start()
        worker.join()  # every batch fetched on the other thread
        for _ in range(3):
            ready.get()
            p.step()
        with dataloader_range():  # and one fetch of the loop's own
            time.sleep(0.002)
        p.step()
    assert p._timer._reader_ns[:3] == [0, 0, 0]
    assert p._timer._reader_ns[3] >= 0.002 * 1e9


def test_a_range_inside_another_is_part_of_it():
    """wrap_dataloader around a loader that a framework integration already marks: one event, one reader time."""
    windows = []
    with Profiler(on_trace_ready=lambda prof: windows.append(prof.profiler_result)) as p:
        started = time.perf_counter_ns()
        with dataloader_range("outer"):
            time.sleep(0.002)
            with dataloader_range("inner"):
                time.sleep(0.003)
        around = time.perf_counter_ns() - started
        p.step()
        with dataloader_range("next"):  # the nesting is over: a range of its own
            time.sleep(0.004)
        p.step()
    first, second = p._timer._reader_ns
    # Counted once: at least both sleeps, never more than the time around them.
    assert 0.005 * 1e9 <= first <= around
    assert 0.004 * 1e9 <= second
    ev = windows[0].events
    assert list(ev["name"][ev["type"] == int(profkit.TracerEventType.Dataloader)]) == ["outer", "next"]


def test_a_step_ending_on_another_thread_than_it_began_counts_no_reader_cost():
    # Reader totals are per thread: start() on the main thread after a fetch
    # there, step() on a worker, must not subtract one thread's total from
    # another's (it gave negative reader costs and a negative Reader Ratio).
    import threading

    with dataloader_range():
        time.sleep(0.01)  # the main thread's total is now ahead of the worker's
    p = Profiler(timer_only=True)
    p.start()

    def drive():
        with dataloader_range():
            time.sleep(0.002)
        p.step(8)  # began on the main thread: no comparable mark
        with dataloader_range():
            time.sleep(0.002)
        p.step(8)  # began and ended here: its own fetch

    worker = threading.Thread(target=drive)
    worker.start()
    worker.join()
    p.stop()
    reader = p._timer._reader_ns
    assert reader[0] == 0
    assert reader[1] >= 0.002 * 1e9
    assert p.perf_summary.reader_ratio >= 0 and p.perf_summary.reader_cost.min >= 0


def test_steps_that_move_to_a_new_thread_count_no_reader_cost_however_its_ident():
    # Each epoch on a thread of its own (an executor, a GUI worker): the
    # second thread may get the first's ident once it ended, and its reader
    # total starts anew; a step that began on the first and ends on the
    # second must count none (it gave -29 ms and a negative Reader Ratio).
    import threading

    p = Profiler(timer_only=True, benchmark_warmup_steps=0)
    p.start()
    loads = []

    def epoch(load_s):
        loads.append(threading.get_ident())
        for _ in range(3):
            with dataloader_range():
                time.sleep(load_s)
            p.step(1)

    for load_s in (0.01, 0.001):
        worker = threading.Thread(target=epoch, args=(load_s,))
        worker.start()
        worker.join()
    p.stop()
    reader = p._timer._reader_ns
    assert reader[0] == 0 and reader[3] == 0, reader  # each began on another thread
    assert all(r >= 0.001 * 1e9 for r in reader[1:3] + reader[4:]), reader
    assert p.perf_summary.reader_cost.min >= 0
