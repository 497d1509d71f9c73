"""Benchmark mode: step timing, reader cost and throughput (SPEC §7).

Every Profiler runs a StepTimer (with ``timer_only=True`` it is all the
Profiler does). ``Profiler.step(num_samples)`` closes one step's timing. A
step's reader cost is the data loading that ended during it: the engine
times every outermost data-loading range (``profkit.dataloader_range()``,
``profkit.wrap_dataloader()``, the PyTorch integration's DataLoader hook, a
framework's ``pk_data_loading_begin``/``end``) into one process total, and
the timer reads that total at step boundaries.

Statistics are exact: averages divide by the number of steps they cover,
max and min are taken over every covered step, and throughput (ips) is total
samples (or steps) over total batch time. The Perf Summary leaves out the
first ``warmup_steps`` steps (10, as paddle.profiler) when the run has more
steps than that, and says so. Memory stays bounded however long the run:
steps are kept as raw figures only until ``_FOLD_STEPS`` of them are, then
folded into exact running totals (a week at 50 steps/s would otherwise keep
~1.7 GB of per-step figures).

Thread-safety: a StepTimer belongs to the thread that drives its Profiler.
Reader cost is the data loading marked on the thread that calls ``step()``
(what the loop waited for); loading marked on other threads (a prefetcher)
overlaps the loop and is not counted. ``start()``
may run on another thread than the loop that steps: the first step then
counts no reader cost, since the two threads' reader totals cannot be
subtracted (the steps after it are marked on the stepping thread).
"""

import copy
import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from . import _C

__all__ = ["StepTimer", "PerfSummary", "DEFAULT_WARMUP_STEPS"]

DEFAULT_WARMUP_STEPS = 10
_NS_PER_S = 1e9
#: Steps kept as raw figures before they are folded into running totals.
_FOLD_STEPS = 4096

#: The clock of benchmark mode (replaceable in tests).
clock_ns = time.perf_counter_ns

#: The calling thread's reader time so far, in ns (replaceable in tests):
#: what the loop calling step() waited for its batches. Fetches on other
#: threads (a background prefetcher) overlap the loop, so they are not its cost.
reader_time_ns = _C.thread_reader_time_ns


@dataclass(frozen=True)
class PerfStats:
    """avg / max / min of one quantity over the covered steps."""

    avg: float
    max: float
    min: float


@dataclass(frozen=True)
class PerfSummary:
    """What ``stop()`` prints: the run's step timing statistics.

    Times are in seconds; ips in ``ips_unit`` (``"samples/s"``,
    ``"images/s"``..., or ``"steps/s"`` when some step had no num_samples).
    """

    steps: int  # steps covered
    first_step: int  # index of the first covered step
    total_steps: int  # steps timed in the run
    reader_ratio: float  # percent of batch time spent loading data
    reader_cost: PerfStats
    batch_cost: PerfStats
    ips: PerfStats
    ips_unit: str

    def format(self) -> str:
        """The Perf Summary table, in paddle.profiler's layout."""
        lines = ["Perf Summary".center(100, "=")]
        if self.first_step > 0:
            lines.append(
                f"Steps: {self.steps} of {self.total_steps} (the first {self.first_step} are warm-up and left out)"
            )
        else:
            lines.append(f"Steps: {self.steps} (all)")
        lines.append(f"Reader Ratio: {self.reader_ratio:.3f}%")
        lines.append(f"Time Unit: s, IPS Unit: {self.ips_unit}")
        lines.append(_row("", "avg", "max", "min"))
        for item, stats in (("reader_cost", self.reader_cost), ("batch_cost", self.batch_cost), ("ips", self.ips)):
            lines.append(_row(item, f"{stats.avg:.5f}", f"{stats.max:.5f}", f"{stats.min:.5f}"))
        return "\n".join(lines)


def _row(*cells: str) -> str:
    return "| " + " | ".join(cell.center(15) for cell in cells) + " |"


def _ips_of(work: Optional[int], batch_ns: int) -> float:
    return work / (batch_ns / _NS_PER_S) if batch_ns > 0 else 0.0


class _Totals:
    """Exact statistics of a run of steps, folded from their raw figures.

    ips per step depends on whether every covered step has num_samples
    (samples/s) or not (steps/s), known only at the end: both extremes are kept.
    """

    def __init__(self) -> None:
        self.steps = 0
        self.batch_sum = self.reader_sum = self.samples_sum = 0
        self.all_samples = True
        self.batch_max = self.reader_max = self.sample_ips_max = self.step_ips_max = float("-inf")
        self.batch_min = self.reader_min = self.sample_ips_min = self.step_ips_min = float("inf")

    def add(self, batch: List[int], reader: List[int], samples: List[Optional[int]]) -> None:
        # Through NumPy: ~70 ns a step to fold, where built-ins over the lists
        # took ~270 (min/max compare Python ints one by one).
        if not batch:
            return
        b = np.fromiter(batch, np.int64, len(batch))
        r = np.fromiter(reader, np.int64, len(reader))
        self.steps += len(batch)
        self.batch_sum += int(b.sum())
        self.reader_sum += int(r.sum())
        shortest, longest = int(b.min()), int(b.max())
        self.batch_max, self.batch_min = max(self.batch_max, longest), min(self.batch_min, shortest)
        self.reader_max = max(self.reader_max, int(r.max()))
        self.reader_min = min(self.reader_min, int(r.min()))
        # A step's ips is 0 when its batch time is 0 (a coarse clock), else
        # 1/batch in steps/s: its extremes come from the batch extremes.
        positive = b[b > 0] if shortest <= 0 else b
        self.step_ips_max = max(self.step_ips_max, _ips_of(1, int(positive.min())) if positive.size else 0.0)
        self.step_ips_min = min(self.step_ips_min, 0.0 if shortest <= 0 else _ips_of(1, longest))
        if not self.all_samples:
            return
        n = np.array(samples, dtype=np.float64)  # None -> NaN
        if np.isnan(n).any():
            self.all_samples = False
            return
        per_ns = np.divide(n, b, out=np.zeros(len(b)), where=b > 0)
        self.samples_sum += sum(samples)  # type: ignore[arg-type]  # exact, past 2**53 too
        self.sample_ips_max = max(self.sample_ips_max, float(per_ns.max()) * _NS_PER_S)
        self.sample_ips_min = min(self.sample_ips_min, float(per_ns.min()) * _NS_PER_S)

    def merge(self, other: "_Totals") -> None:
        """Adds another run of steps' totals to these."""
        if other.steps == 0:
            return
        self.steps += other.steps
        self.batch_sum += other.batch_sum
        self.reader_sum += other.reader_sum
        self.batch_max, self.batch_min = max(self.batch_max, other.batch_max), min(self.batch_min, other.batch_min)
        self.reader_max, self.reader_min = max(self.reader_max, other.reader_max), min(self.reader_min, other.reader_min)
        self.step_ips_max = max(self.step_ips_max, other.step_ips_max)
        self.step_ips_min = min(self.step_ips_min, other.step_ips_min)
        if self.all_samples and other.all_samples:
            self.samples_sum += other.samples_sum
            self.sample_ips_max = max(self.sample_ips_max, other.sample_ips_max)
            self.sample_ips_min = min(self.sample_ips_min, other.sample_ips_min)
        else:
            self.all_samples = False

    def combined(self, batch: List[int], reader: List[int], samples: List[Optional[int]]) -> "_Totals":
        """These totals and those steps', leaving these unchanged."""
        both = copy.copy(self)
        both.add(batch, reader, samples)
        return both


_thread_tokens = threading.local()


def _thread_token() -> object:
    """An object of this thread's own. Not its ident: a thread started after
    another ended may get the same ident, and its reader total starts anew."""
    token = getattr(_thread_tokens, "token", None)
    if token is None:
        token = _thread_tokens.token = object()
    return token


class StepTimer:
    """Times steps: batch cost, reader cost and samples of each one.

    Use ``start()``, then ``step(num_samples)`` at the end of every step;
    ``step_info()`` reports the averages since its last call and
    ``summary()`` the statistics of the run.
    """

    def __init__(self, warmup_steps: int = DEFAULT_WARMUP_STEPS) -> None:
        if warmup_steps < 0:
            raise ValueError(f"StepTimer: warmup_steps must be >= 0, got {warmup_steps}")
        self.warmup_steps = warmup_steps
        self.unit = "samples"
        # The steps not yet folded: raw figures of steps _folded, _folded+1...
        self._batch_ns: List[int] = []
        self._reader_ns: List[int] = []
        self._samples: List[Optional[int]] = []
        self._folded = 0  # steps folded into the totals below
        self._warmup_totals = _Totals()  # folded steps before warmup_steps
        self._measured_totals = _Totals()  # folded steps from warmup_steps on
        self._info_totals = _Totals()  # folded steps not yet reported by step_info
        self._step_start = 0
        self._reader_mark = 0  # reader_time_ns() when the step in progress began
        self._mark_thread: object = None  # _thread_token() of the thread that read _reader_mark
        self._info_from = 0  # first unfolded step (an index into _batch_ns) not yet reported by step_info
        self._running = False

    @property
    def steps(self) -> int:
        """Steps timed since start()."""
        return self._folded + len(self._batch_ns)

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        """Starts a run: forgets earlier steps and begins timing step 0."""
        self._batch_ns.clear()
        self._reader_ns.clear()
        self._samples.clear()
        self._folded = 0
        self._warmup_totals = _Totals()
        self._measured_totals = _Totals()
        self._info_totals = _Totals()
        self._info_from = 0
        self._running = True
        self.restart_step()

    def stop(self) -> None:
        """Ends the run; the step in progress is not counted."""
        self._running = False

    def step(self, num_samples: Optional[int] = None) -> None:
        """Closes the step in progress and begins timing the next one."""
        now = clock_ns()
        reader_total = reader_time_ns()
        thread = _thread_token()
        # Reader totals are per thread: a mark read on another thread (start()
        # there, step() here, or an epoch run on a new thread) is not
        # comparable, so such a step counts none.
        reader = reader_total - self._reader_mark if thread is self._mark_thread else 0
        # The three lists hold one entry per step: an exception between the
        # appends (a Ctrl-C's KeyboardInterrupt lands between any two
        # bytecodes) would leave them of different lengths, and every later
        # step_info() and the Perf Summary at stop() would then raise.
        steps = len(self._batch_ns)
        try:
            self._batch_ns.append(now - self._step_start)
            self._reader_ns.append(reader)
            self._samples.append(num_samples)
        except BaseException:
            del self._batch_ns[steps:], self._reader_ns[steps:], self._samples[steps:]
            raise
        self._reader_mark = reader_total
        self._mark_thread = thread
        self._step_start = now
        if len(self._batch_ns) >= _FOLD_STEPS:
            self._fold()

    def _fold(self) -> None:
        """Moves the raw figures into the running totals."""
        batch, reader, samples = self._batch_ns, self._reader_ns, self._samples
        split, info = self._warmup_end(), self._info_from
        # Each step is read once: the segments between the warm-up's end and
        # the first step step_info has not reported go to every total they
        # belong to.
        bounds = sorted({0, split, info, len(batch)})
        for lo, hi in zip(bounds, bounds[1:]):
            segment = _Totals()
            segment.add(batch[lo:hi], reader[lo:hi], samples[lo:hi])
            (self._warmup_totals if hi <= split else self._measured_totals).merge(segment)
            if lo >= info:
                self._info_totals.merge(segment)
        self._folded += len(batch)
        batch.clear()
        reader.clear()
        samples.clear()
        self._info_from = 0

    def _warmup_end(self) -> int:
        """How many of the unfolded steps are warm-up steps."""
        return min(max(self.warmup_steps - self._folded, 0), len(self._batch_ns))

    def restart_step(self) -> None:
        """Restarts the step in progress now (leaves out the profiler's own work, such as on_trace_ready)."""
        self._step_start = clock_ns()
        self._reader_mark = reader_time_ns()
        self._mark_thread = _thread_token()

    def step_info(self, unit: Optional[str] = None) -> str:
        """``"reader_cost: %.5f s batch_cost: %.5f s ips: %.3f {unit}/s"``, averaged over the steps since the last call.

        ``unit`` names what num_samples counts. It is kept: later calls
        without one, and the Perf Summary, use the unit last given
        (``"samples"`` until one is). When a step had no num_samples, ips
        counts steps (``steps/s``). With no step since the last call every
        figure is 0.
        """
        if unit is not None:
            if not isinstance(unit, str):
                # It names what num_samples counts, and would otherwise print as "3/s".
                raise TypeError(
                    f"step_info: unit must be a str naming what num_samples counts (e.g. 'images'), "
                    f"not {type(unit).__name__}"
                )
            self.unit = unit
        first, self._info_from = self._info_from, len(self._batch_ns)
        t = self._info_totals.combined(self._batch_ns[first:], self._reader_ns[first:], self._samples[first:])
        self._info_totals = _Totals()
        n = t.steps
        reader_avg = t.reader_sum / n / _NS_PER_S if n else 0.0
        batch_avg = t.batch_sum / n / _NS_PER_S if n else 0.0
        work, ips_unit = self._work(t)
        ips = _ips_of(work, t.batch_sum)
        return f"reader_cost: {reader_avg:.5f} s batch_cost: {batch_avg:.5f} s ips: {ips:.3f} {ips_unit}"

    def summary(self) -> Optional[PerfSummary]:
        """Statistics of the run (None before the first step)."""
        total = self.steps
        if total == 0:
            return None
        # A run no longer than the warm-up is summarized whole: every step is
        # a warm-up step then.
        whole = total <= self.warmup_steps
        first = 0 if whole else self.warmup_steps
        split = self._warmup_end()
        if whole:
            t = self._warmup_totals.combined(self._batch_ns, self._reader_ns, self._samples)
        else:
            t = self._measured_totals.combined(
                self._batch_ns[split:], self._reader_ns[split:], self._samples[split:]
            )
        n = t.steps
        work, ips_unit = self._work(t)
        by_samples = ips_unit != "steps/s"
        return PerfSummary(
            steps=n,
            first_step=first,
            total_steps=total,
            reader_ratio=100.0 * t.reader_sum / t.batch_sum if t.batch_sum > 0 else 0.0,
            reader_cost=PerfStats(t.reader_sum / n / _NS_PER_S, t.reader_max / _NS_PER_S, t.reader_min / _NS_PER_S),
            batch_cost=PerfStats(t.batch_sum / n / _NS_PER_S, t.batch_max / _NS_PER_S, t.batch_min / _NS_PER_S),
            ips=PerfStats(
                _ips_of(work, t.batch_sum),
                t.sample_ips_max if by_samples else t.step_ips_max,
                t.sample_ips_min if by_samples else t.step_ips_min,
            ),
            ips_unit=ips_unit,
        )

    def _work(self, t: _Totals) -> Tuple[int, str]:
        """What ips counts over these steps: (amount, unit)."""
        if t.steps and t.all_samples:
            return t.samples_sum, f"{self.unit}/s"
        return t.steps, "steps/s"
