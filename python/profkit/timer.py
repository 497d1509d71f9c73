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
steps than that, and says so.

Thread-safety: a StepTimer belongs to the thread that drives its Profiler.
Data loading may be marked on any thread; all of it counts. ``start()``
may run on another thread than the loop that steps: the first step then
counts no reader cost, since the two threads' reader totals cannot be
subtracted (the steps after it are marked on the stepping thread).
"""

import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

from . import _C

__all__ = ["StepTimer", "PerfSummary", "DEFAULT_WARMUP_STEPS"]

DEFAULT_WARMUP_STEPS = 10
_NS_PER_S = 1e9

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
        self._batch_ns: List[int] = []
        self._reader_ns: List[int] = []
        self._samples: List[Optional[int]] = []
        self._step_start = 0
        self._reader_mark = 0  # reader_time_ns() when the step in progress began
        # The thread restart_step() read _reader_mark on, until the next step
        # checks it; None once step() has taken the mark on its own thread.
        self._reader_thread: Optional[int] = None
        self._info_from = 0  # first step not yet reported by step_info
        self._running = False

    @property
    def steps(self) -> int:
        """Steps timed since start()."""
        return len(self._batch_ns)

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
        """Starts a run: forgets earlier steps and begins timing step 0."""
        self._batch_ns.clear()
        self._reader_ns.clear()
        self._samples.clear()
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
        self._batch_ns.append(now - self._step_start)
        reader = reader_total - self._reader_mark
        if self._reader_thread is not None:
            # The first step since restart_step(): reader totals are per
            # thread, and a mark read on another thread (start() there,
            # step() here) is not comparable, so this step counts none.
            if self._reader_thread != threading.get_ident():
                reader = 0
            self._reader_thread = None
        self._reader_ns.append(reader)
        self._samples.append(num_samples)
        self._reader_mark = reader_total
        self._step_start = now

    def restart_step(self) -> None:
        """Restarts the step in progress now (leaves out the profiler's own work, such as on_trace_ready)."""
        self._step_start = clock_ns()
        self._reader_mark = reader_time_ns()
        self._reader_thread = threading.get_ident()

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
        batch = self._batch_ns[first:]
        n = len(batch)
        total_batch = sum(batch)
        reader_avg = sum(self._reader_ns[first:]) / n / _NS_PER_S if n else 0.0
        batch_avg = total_batch / n / _NS_PER_S if n else 0.0
        work, ips_unit = self._work(self._samples[first:])
        ips = work / (total_batch / _NS_PER_S) if total_batch > 0 else 0.0
        return f"reader_cost: {reader_avg:.5f} s batch_cost: {batch_avg:.5f} s ips: {ips:.3f} {ips_unit}"

    def summary(self) -> Optional[PerfSummary]:
        """Statistics of the run (None before the first step)."""
        total = len(self._batch_ns)
        if total == 0:
            return None
        first = self.warmup_steps if total > self.warmup_steps else 0
        batch = self._batch_ns[first:]
        reader = self._reader_ns[first:]
        samples = self._samples[first:]
        n = len(batch)
        work, ips_unit = self._work(samples)
        per_step_ips = [
            (s if s is not None and ips_unit != "steps/s" else 1) / (b / _NS_PER_S) if b > 0 else 0.0
            for s, b in zip(samples, batch)
        ]
        total_batch = sum(batch)
        return PerfSummary(
            steps=n,
            first_step=first,
            total_steps=total,
            reader_ratio=100.0 * sum(reader) / total_batch if total_batch > 0 else 0.0,
            reader_cost=PerfStats(sum(reader) / n / _NS_PER_S, max(reader) / _NS_PER_S, min(reader) / _NS_PER_S),
            batch_cost=PerfStats(total_batch / n / _NS_PER_S, max(batch) / _NS_PER_S, min(batch) / _NS_PER_S),
            ips=PerfStats(
                work / (total_batch / _NS_PER_S) if total_batch > 0 else 0.0, max(per_step_ips), min(per_step_ips)
            ),
            ips_unit=ips_unit,
        )

    def _work(self, samples: List[Optional[int]]) -> Tuple[int, str]:
        """What ips counts over these steps: (amount, unit)."""
        if samples and all(s is not None for s in samples):
            return sum(samples), f"{self.unit}/s"  # type: ignore[arg-type]
        return len(samples), "steps/s"
