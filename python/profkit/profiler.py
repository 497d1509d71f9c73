"""Profiler: paddle.profiler.Profiler on profkit's engine (SPEC §1-3, §7).

    with profkit.Profiler(scheduler=(2, 5), on_trace_ready=profkit.export_chrome_tracing("./log")) as prof:
        for batch in loader:
            train(batch)
            prof.step()
    prof.summary()

A Profiler drives the process-wide engine through the states its scheduler
gives each step (see _lifecycle.py for what each transition does), times
every step (benchmark mode, printed as the Perf Summary at ``stop()``), and
hands each finished recording window to ``on_trace_ready``.

Differences from paddle.profiler (fixes):
- leaving RECORD without RECORD_AND_RETURN delivers the window with a
  ProfilerWarning instead of dropping it;
- a second Profiler started while one is recording raises RuntimeError;
- an exception raised by ``on_trace_ready`` propagates and leaves the
  Profiler consistent (it goes on stepping, or is fully stopped);
- the Perf Summary's averages are exact and its max/min correct.

Thread-safety: drive a Profiler from one thread (the training loop's);
RecordEvent and dataloader ranges may come from any thread. stop() may also
come from a signal handler or another thread while step() runs: it takes
effect when that step() returns.
"""

import atexit
import functools
import os
import sys
import warnings
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple, Union

from . import _C, _lifecycle, _multiprocessing_children, _python_stacks, _rank, _summary, _window_listeners
from ._enums import ProfilerState, ProfilerTarget, SortedKeys, SummaryView
from ._profiler_arguments import (
    MIN_MEMORY_CAP,
    check_on_trace_ready,
    check_samples,
    resolve_targets,
    warn_unsupported,
    whole_number,
)
from ._warnings import ProfilerWarning, warn_at_caller
from .export_callbacks import export_chrome_tracing
from .result import PathLike, ProfilerResult
from .scheduler import Scheduler, SchedulerArg, predictable, scheduler_from_argument, steady_until
from .timer import DEFAULT_WARMUP_STEPS, PerfSummary, StepTimer

__all__ = ["Profiler", "DEFAULT_LOG_DIR"]

#: Where the default on_trace_ready writes (paddle.profiler's default).
DEFAULT_LOG_DIR = "./profiler_log/"

_python_stacks.install()  # with_stack's tracer follows the recording windows

_CLOSED = ProfilerState.CLOSED

# The Profiler that drives the engine now (timer-only ones do not), held
# weakly: a started Profiler that the program dropped without stop() (a
# training error outside a `with` block, a notebook cell run again) closes
# the engine when it is collected instead of blocking every later Profiler
# for the life of the process.
_active_ref: Optional["weakref.ReferenceType[Profiler]"] = None


def _active_profiler() -> Optional["Profiler"]:
    """The started Profiler that drives the engine now, if any."""
    ref = _active_ref
    return ref() if ref is not None else None


def _close_engine_discarding(memory_cap_before: Optional[int]) -> None:
    """Closes the engine for a Profiler that cannot deliver its window and
    drops what the window holds, so that the next Profiler starts clean."""
    _window_listeners.notify(None, _CLOSED)  # type: ignore[arg-type]
    try:
        _C.step_end(0)  # while recording still, so that no step stays open for the next Profiler
    except RuntimeError:
        pass  # no step open
    _C.set_state(_CLOSED.value)
    _C.set_gpu_tracing(False)
    if memory_cap_before is not None:
        _C.set_memory_cap(memory_cap_before)
    _C.collect()


def _abandoned(memory_cap_before: Optional[int], ref: "weakref.ReferenceType[Profiler]") -> None:
    """Weakref callback: a started Profiler was garbage-collected without stop()."""
    global _active_ref
    if _active_ref is not ref:
        return
    _active_ref = None
    try:
        _close_engine_discarding(memory_cap_before)
        warnings.warn(
            "profkit: a started Profiler was garbage-collected without stop(); its recording window was "
            "discarded and profiling stopped. Call stop(), or use `with Profiler(...) as prof:`.",
            ProfilerWarning,
            stacklevel=2,
        )
    except Exception:  # pragma: no cover - interpreter shutdown: the engine goes with the process
        return


def _stop_at_exit() -> None:
    """atexit: a Profiler still started when the interpreter exits is stopped,
    so that its window reaches on_trace_ready (the default one writes the
    trace files) instead of being lost: discarded when the Profiler was
    collected at shutdown, or silently when a daemon thread kept it alive."""
    profiler = _active_profiler()
    if profiler is None or profiler._in_callback:
        return
    # Stopped even when the warning is raised as an error (-W error).
    try:
        warnings.warn(
            f"profkit: the interpreter is exiting with a Profiler started (at step {profiler.step_num}); stopping "
            "it so that its recording window is delivered. Call stop(), or use `with Profiler(...) as prof:`.",
            ProfilerWarning,
            stacklevel=1,
        )
    finally:
        profiler.stop()


atexit.register(_stop_at_exit)

# The process in which _stop_at_exit is registered with multiprocessing's
# finalizers (see _stop_at_exit_of_a_multiprocessing_child).
_finalizer_pid: Optional[int] = None


def _stop_at_exit_of_a_multiprocessing_child() -> None:
    """In a process that multiprocessing started (a DataLoader worker whose
    worker_init_fn profiles, a Pool worker, a fork-started trainer):
    _stop_at_exit at its exit too. A forked or forkserver child ends with
    os._exit() once its target returns, so atexit never runs there, and a
    Profiler still started would lose its window silently; multiprocessing
    runs its own finalizers first (util._exit_function). Once per process:
    each new child starts with the registry cleared."""
    global _finalizer_pid
    mp = sys.modules.get("multiprocessing")
    if mp is None or mp.parent_process() is None or _finalizer_pid == os.getpid():
        return
    from multiprocessing import util

    util.Finalize(None, _stop_at_exit, exitpriority=100)  # before the children it started are joined
    _finalizer_pid = os.getpid()


def _leave_the_parents_session() -> None:
    """In a process that multiprocessing forked from this one (a DataLoader or
    Pool worker; see _multiprocessing_children): a started Profiler is the
    parent's, and the child never returns to the loop that steps it. The
    child stops recording, so that it neither fills buffers no one collects
    nor blocks a Profiler of its own. Nothing of the parent's is lost: the
    engine's fork handler left the parent's records with the parent, and the
    child's since the fork are only multiprocessing's start-up."""
    global _active_ref
    profiler = _active_profiler()
    if profiler is None:
        return
    _active_ref = None
    profiler._started = False
    profiler._steady_until = 0
    profiler._parent_pid = os.getppid()
    try:
        _close_engine_discarding(profiler._memory_cap_before)
    except Exception as e:  # multiprocessing would only log it: say it here
        warnings.warn(
            f"profkit: this process (started by multiprocessing while its parent profiled) could not stop the "
            f"recording it inherited: {e}",
            ProfilerWarning,
            stacklevel=1,
        )


# GPU-unavailable warnings are given once per process.
_gpu_warning_given = False


def _warn_gpu_unavailable(reason: str) -> None:
    """Once per process, at the user's line (``Profiler(...)``, ``with``, ``start()``)."""
    global _gpu_warning_given
    if _gpu_warning_given:
        return
    _gpu_warning_given = True
    warn_at_caller(f"profkit: GPU profiling is not available here ({reason}); profiling the CPU only")


def _synchronize_gpu() -> None:
    """Waits for the GPU work the program launched so far (torch's current
    device), so that a window's last kernels and copies end inside it:
    CUPTI's flush at the window's end hands work still running over without
    an end time, and the summary could only count it untimed.
    torch.profiler synchronizes likewise when it stops. Without torch, or
    while a stream is being captured into a CUDA graph (synchronizing would
    break the capture), the window is collected as it stands."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        return
    try:
        if cuda.is_initialized() and not cuda.is_current_stream_capturing():
            cuda.synchronize()
    except Exception as e:  # a sticky CUDA error: the window is still delivered
        warn_at_caller(
            f"profkit: could not synchronize the GPU before closing the window ({e}); "
            "GPU work still running is in the trace without an end time"
        )


def _losses(info: Dict[str, Any], memory_cap: int) -> str:
    """What a window's info says it lost while recording, with the remedy; "" when nothing.
    ``memory_cap``: the cap the window recorded under."""
    parts = []
    if info["dropped_events"]:
        parts.append(
            f"{info['dropped_events']} past the engine's memory cap of {memory_cap} bytes "
            "(raise it with Profiler(memory_cap=...), or record fewer steps per window; or, rarely, named after "
            "the engine's name table of 4,194,304 names filled up: name events with stable names, not per-call "
            "strings)"
        )
    if info["overflowed_events"]:
        parts.append(f"{info['overflowed_events']} nested deeper than 256 levels (those are not recorded)")
    if info["dropped_device_records"]:
        parts.append(  # one count for every cause: the info cannot tell them apart
            f"{info['dropped_device_records']} GPU records past the memory cap of {memory_cap} bytes "
            "(raise it with Profiler(memory_cap=...)), for lack of a free CUPTI activity buffer, or naming a "
            "device id past 428"
        )
    return "; ".join(parts)


class Profiler:
    """Profiles a training loop: steps, schedules, traces and step timing.

    Args:
        targets: ProfilerTarget values to trace. None: the CPU, and the GPU
            when CUDA and CUPTI can trace it. Asking for the GPU where it
            cannot be traced warns once (with the reason) and profiles the CPU.
        scheduler: the state of each step. ``(start, end)`` records steps
            ``[start, end)`` once; ``None`` records every step (delivered at
            ``stop()``); any callable ``step -> ProfilerState`` (see
            ``make_scheduler``).
        on_trace_ready: called with this Profiler each time a recording
            window ends; ``prof.profiler_result`` is that window. Default:
            ``export_chrome_tracing("./profiler_log/")``.
        timer_only: only time the steps (benchmark mode); record nothing.
        record_shapes, profile_memory, with_flops: kept for framework
            integrations to read (``prof.record_shapes``...); the engine
            records what integrations send it. profkit.integrations.torch
            reads record_shapes (operators' input shapes), profile_memory
            (torch's allocations and frees) and with_flops (the FLOPs of
            matrix products, convolutions, mul and add: a FLOPs column in
            the Operator summary).
        with_stack: record the Python calls (every Python function and
            built-in function call of every thread, as torch.profiler's
            ``with_stack``) as PythonOp events,
            so that operators and ranges nest under the code that ran them,
            in the timeline and in ``export_stacks``'s flame graphs. It
            costs about 80 ns per Python call and 50 ns per built-in call,
            less than cProfile (BENCHMARKS.md); profkit's own calls are
            left out. A thread whose tracing runs out of memory goes
            untraced for the rest of the window, with a ProfilerWarning.
        emit_nvtx, custom_device_types: not supported; a ProfilerWarning
            says so when set (``prof.custom_device_types`` keeps the value).
        benchmark_warmup_steps: steps the Perf Summary leaves out when the run
            is longer (default 10, as paddle.profiler).
        memory_cap: bytes the engine may use for recorded events, at least
            256 KiB (None: the engine's, 1 GiB by default); in force
            from ``start()`` to ``stop()``. Past it events are dropped and
            counted, and the window that lost them warns.
    """

    def __init__(
        self,
        *,
        targets: Optional[Iterable[ProfilerTarget]] = None,
        scheduler: SchedulerArg = None,
        on_trace_ready: Optional[Callable[["Profiler"], Any]] = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        timer_only: bool = False,
        emit_nvtx: bool = False,
        custom_device_types: Optional[Iterable[str]] = None,
        with_flops: bool = False,
        with_stack: bool = False,
        benchmark_warmup_steps: int = DEFAULT_WARMUP_STEPS,
        memory_cap: Optional[int] = None,
    ) -> None:
        resolved, gpu_unavailable = resolve_targets(targets)
        self.targets: Set[ProfilerTarget] = resolved
        if gpu_unavailable is not None:
            _warn_gpu_unavailable(gpu_unavailable)
        self.scheduler = scheduler  # the setter resolves (start, end) pairs and None
        check_on_trace_ready(on_trace_ready)
        self.on_trace_ready = on_trace_ready
        self.timer_only = bool(timer_only)
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_flops = bool(with_flops)
        self.with_stack = bool(with_stack)
        self.custom_device_types = warn_unsupported(emit_nvtx, custom_device_types)
        #: The number of the step in progress.
        self.step_num = 0
        #: The state of the step in progress, and of the one before it.
        self.current_state = _CLOSED
        self.previous_state = _CLOSED
        self._timer = StepTimer(whole_number("benchmark_warmup_steps", benchmark_warmup_steps, minimum=0))
        self.memory_cap = (
            None if memory_cap is None else whole_number("memory_cap", memory_cap, minimum=MIN_MEMORY_CAP)
        )
        self._memory_cap_before: Optional[int] = None  # the engine's cap, to put back at stop()
        self._result: Optional[ProfilerResult] = None
        self._perf_summary: Optional[PerfSummary] = None
        self._started = False
        self._parent_pid: Optional[int] = None  # set in a multiprocessing child: the Profiler is its parent's
        self._gpu_tracing = False
        self._windows = 0  # windows delivered since start()
        # A window step() was closing when an exception (a KeyboardInterrupt)
        # stopped it: still in the engine (_collect_owed), or collected and
        # not yet handed to _deliver (_undelivered). stop() delivers it.
        self._collect_owed = False
        self._undelivered: Optional["_C.Result"] = None
        # What the engine's collect handed over, put here by _C.collect itself
        # so that an exception raised as the call returns loses nothing;
        # emptied once the result is in _undelivered.
        self._collected: List["_C.Result"] = []
        self._runs = 0  # start()s so far: tells step() that on_trace_ready restarted the Profiler
        self._step_interrupted = False  # a step() was cut short: it began no step (_resume_after_interruption)
        self._in_callback = False
        self._in_step = False  # step() is changing the state (see step())
        self._stop_requested = False  # stop() came during it: step() stops on return
        # Profiler.step()'s shortcut runs while step_num + 1 < _steady_until:
        # 0 when it must not (not started, timer_only, in a transition).
        self._steady_until = 0

    # ---- context manager ------------------------------------------------------
    def __enter__(self) -> "Profiler":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the scheduler -------------------------------------------------------------
    @property
    def scheduler(self) -> Scheduler:
        """The callable ``step -> ProfilerState`` that drives this Profiler."""
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler: SchedulerArg) -> None:
        self._scheduler = scheduler_from_argument(scheduler)
        self._predictable = predictable(self._scheduler)
        self._steady_until = 0  # ask the new scheduler at the next step

    # ---- lifecycle --------------------------------------------------------------
    def start(self) -> None:
        """Starts profiling at step 0 in the state the scheduler gives it.

        Raises:
            RuntimeError: this Profiler is already started, or another one
                is recording (one Profiler drives the engine at a time).
        """
        global _active_ref
        if self._started:
            raise RuntimeError("Profiler.start(): this Profiler is already started; call stop() first")
        if self.timer_only:
            self._begin_run(_CLOSED)
            return
        active = _active_profiler()
        if active is not None:
            raise RuntimeError(
                f"Profiler.start(): another Profiler is active ({active!r}); stop it before starting this one "
                "(profkit records one profiling session per process at a time; "
                "profkit.Profiler.active() returns it, so profkit.Profiler.active().stop() stops it)"
            )
        engine_state = _C.get_state()
        if engine_state != _CLOSED.value:
            raise RuntimeError(
                f"Profiler.start(): the profkit engine is already in state {ProfilerState(engine_state).name}; "
                "something else (a framework hook or direct _C calls) is driving it"
            )
        first = self._scheduled_state(0)
        self._memory_cap_before = _C.get_memory_cap() if self.memory_cap is not None else None
        _multiprocessing_children.run_in_forked_children(_leave_the_parents_session)
        # Everything from claiming the engine to the run's first step is undone
        # together when an exception (a Ctrl-C) cuts it short anywhere: a claim
        # left behind by a Profiler that is not started would refuse every
        # later Profiler ("another Profiler is active") while stop() did
        # nothing, and the engine would go on recording for no one.
        try:
            _active_ref = weakref.ref(self, functools.partial(_abandoned, self._memory_cap_before))
            _stop_at_exit_of_a_multiprocessing_child()
            _rank.apply_rank()  # rank and world size into every Result and file name
            if self.memory_cap is not None:
                _C.set_memory_cap(self.memory_cap)
            self._set_gpu_tracing(ProfilerTarget.GPU in self.targets)
            if self.on_trace_ready is None:
                self.on_trace_ready = export_chrome_tracing(DEFAULT_LOG_DIR)
            if first is not _CLOSED:
                self._set_engine_state(first)
            _C.step_begin(0)
            self._begin_run(first)
        except BaseException:
            _active_ref = None
            self._started = False
            self._steady_until = 0
            self._timer.stop()
            self.current_state = _CLOSED
            self._gpu_tracing = False
            # Also drops what the engine recorded meanwhile, which would
            # otherwise open the next Profiler's first window.
            _close_engine_discarding(self._memory_cap_before)
            self._memory_cap_before = None
            raise

    def _begin_run(self, first: ProfilerState) -> None:
        self._parent_pid = None  # started again in a multiprocessing child: the child's own now
        self.step_num = 0
        self.previous_state = _CLOSED
        self.current_state = first
        self._windows = 0
        self._collect_owed = False
        self._undelivered = None
        self._collected.clear()
        self._step_interrupted = False
        self._perf_summary = None
        self._started = True
        self._runs += 1
        self._timer.start()
        self._steady_until = 0 if self.timer_only else self._next_change()

    def step(self, num_samples: Optional[int] = None) -> None:
        """Ends step ``step_num``, moves to the next one and applies its scheduled state.

        Args:
            num_samples: samples in the step just ended (batch size), for
                ips; None counts steps.

        When the step ends a recording window, ``on_trace_ready`` is called,
        before the next window opens; if it raises, the exception propagates
        and the Profiler stays consistent (the next step is under way all
        the same).
        """
        next_step = self.step_num + 1
        if next_step < self._steady_until and (
            num_samples is None or (type(num_samples) is int and 0 <= num_samples < 9223372036854775808)
        ):
            # The common step: the scheduler keeps the state (steady_until
            # says so without asking it), so nothing but the step changes.
            # Everything else -- transitions, argument errors, a stopped
            # Profiler, a call from on_trace_ready -- takes the full path
            # below (_steady_until is 0 whenever this shortcut must not run).
            self._timer.step(num_samples)
            self.previous_state = self.current_state
            self.step_num = next_step
            _C.step(num_samples or 0)
            return
        self._steady_until = 0
        # From on_trace_ready first: the callback that stop() calls runs on a
        # stopped Profiler, where "not started; call start()" would mislead.
        # (Before _in_step is touched: the step() that called the callback
        # holds it.)
        if self._in_callback:
            raise RuntimeError("Profiler.step() called from on_trace_ready; step the Profiler from the training loop")
        # stop() from a signal handler (a SIGTERM handler flushing the trace)
        # or another thread can come in the middle of this step; done there,
        # the rest of the step would put the stopped engine back in READY or
        # RECORD for no one, and every later Profiler would be refused. So
        # such a stop() waits for this step to end (see _stop_requested).
        # The step is marked running before it checks that the Profiler is
        # started: a stop() that comes before the mark has fully stopped it,
        # and the check says so; one that comes after waits.
        self._in_step = True
        try:
            self._checked_step(num_samples)
        finally:
            self._in_step = False
            if self._stop_requested:
                self._stop_requested = False
                self.stop()

    def _checked_step(self, num_samples: Optional[int]) -> None:
        """step() past its shortcut, marked running: checks the call, then steps."""
        if self._parent_pid is not None:
            raise RuntimeError(
                f"Profiler.step(): this Profiler records in the parent process (pid {self._parent_pid}); this "
                "process was started from it by multiprocessing, where the parent's profiling session does not "
                "go on. Start a Profiler of its own here"
            )
        if not self._started:
            raise RuntimeError("Profiler.step(): the Profiler is not started; call start() or use it in a with block")
        samples = check_samples(num_samples)
        if self.timer_only:
            self._timer.step(samples)
            return
        self._step_transition(samples)

    def _step_transition(self, samples: Optional[int]) -> None:
        """The full path of step(): a step that may change the state."""
        previous = self.current_state
        current = self._scheduled_state(self.step_num + 1)  # may raise: nothing has changed yet
        left_over = self._undelivered
        if left_over is not None and not self._deliver_left_over(left_over):
            return  # its on_trace_ready stopped the Profiler, or started it again
        try:
            transition, result = self._change_step(previous, current, samples)
        except BaseException:
            self._resume_after_interruption()
            raise
        if result is None:
            self._steady_until = self._next_change()
            return
        run = self._runs
        try:
            self._deliver(result, transition.improper)
        finally:
            # on_trace_ready may have stopped the Profiler, or stopped and
            # started it again: then start() has begun the new run's step 0.
            # One that raised (or a warning raised as an error) still leaves
            # the next step under way.
            if self._started and self._runs == run:
                try:
                    self._begin_step_after_delivery(transition.then)
                except BaseException:
                    self._resume_after_interruption()
                    raise

    def _begin_step_after_delivery(self, then: Optional[ProfilerState]) -> None:
        """Enters the next step's state and begins the step, once on_trace_ready
        is done (SPEC §3: collect, call on_trace_ready, then prepare or start
        as the next state needs): opened before the callback, the next window
        would hold the callback's own time and events (a slow exporter, the
        ranges it records) and its span would count them."""
        if then is not None:
            self._set_engine_state(then)
        _C.step_begin(self.step_num)
        self._timer.restart_step()  # the callback's time is not the next step's
        self._steady_until = self._next_change()

    def _change_step(
        self, previous: ProfilerState, current: ProfilerState, samples: Optional[int]
    ) -> Tuple[Optional[_lifecycle.Transition], Optional["_C.Result"]]:
        """Ends step n, moves the engine from ``previous`` to ``current`` and
        begins step n + 1, unless a collected window is returned with its
        transition: its delivery comes first, then the transition's ``then``
        state and step n + 1 (see _step_transition)."""
        # After an interrupted step() the step it was to begin never was,
        # and the one before may or may not have ended: pk_step would begin
        # the wrong number, so the step is ended if it is open (_end_step
        # passes over none) and this one begun by its number.
        interrupted, self._step_interrupted = self._step_interrupted, False
        self._timer.step(samples)
        self.previous_state = previous
        self.current_state = current
        self.step_num += 1
        if current is previous and current is not ProfilerState.RECORD_AND_RETURN:
            if interrupted:
                self._end_step(samples)
                _C.step_begin(self.step_num)
            else:
                _C.step(samples or 0)  # ends step n, begins n+1: one engine call
            return None, None
        transition = _lifecycle.plan(previous, current)
        result = self._apply(transition, functools.partial(self._end_step, samples))
        if result is None:
            _C.step_begin(self.step_num)
        return transition, result

    @staticmethod
    def _end_step(samples: Optional[int]) -> None:
        try:
            _C.step_end(samples or 0)
        except RuntimeError:
            # No step is open: a Ctrl-C landed where no flag could say so
            # (in the finally that begins the step after on_trace_ready, or
            # in _resume_after_interruption itself). The step went unmarked;
            # this one goes on.
            pass

    def _resume_after_interruption(self) -> None:
        """After an exception (a Ctrl-C) cut _change_step (or _begin_step_after_delivery) short, anywhere.

        The Profiler goes on from where the engine is, so that a loop that
        catches the exception (a notebook cell run again) can keep stepping:
        its state is the engine's, and a window the engine closed but did not
        hand over is collected now and delivered by the next step() (or
        stop()). One still recording is simply still open: the next
        transition closes it. Nothing recorded is lost. The step this step()
        was to begin is not begun: a loop that the exception ends has not run
        it (its window ends with the last step that ran), and in one that
        goes on its events fall in the step before (when the interruption
        came before that one ended, it ends at the next step()) or in none;
        the next step() begins the one after."""
        self._steady_until = 0
        self._step_interrupted = True
        # A second Ctrl-C (or a failed collect) here is dropped: the first
        # exception is on its way, and what stays owed (_collect_owed) is
        # collected by the next window's collect or by stop().
        try:
            engine = ProfilerState(_C.get_state())
            self.current_state = engine
            if self._collect_owed:
                if self._collected:  # the collect had returned: its window is here
                    self._undelivered = self._collected[-1]
                elif not engine.is_recording:
                    self._undelivered = _C.collect(self._collected)
            self._collect_owed = False
            self._collected.clear()
        except BaseException:
            pass

    def _deliver_left_over(self, left_over: "_C.Result") -> bool:
        """Delivers the window an interrupted step() collected (_resume_after_interruption)
        before this step changes anything; False when its on_trace_ready
        stopped the Profiler or started it again (this step() is then over)."""
        run = self._runs
        self._deliver(left_over, improper=False)
        return self._started and self._runs == run

    def stop(self) -> None:
        """Ends the step in progress and profiling; delivers the open recording window.

        Prints the Perf Summary of the run (benchmark mode). Stopping a
        Profiler that is not started does nothing. Called while ``step()``
        is running (from a signal handler, or another thread), it stops the
        Profiler when that ``step()`` returns.
        """
        global _active_ref
        if not self._started:
            return
        if self._in_step and not self._in_callback and self._step_running():
            # Called in the middle of step() (see step()): that step() stops
            # the Profiler when it returns.
            self._stop_requested = True
            return
        if self.timer_only:
            self._started = False
            self._steady_until = 0
            self._timer.stop()
            self._perf_summary = self._timer.summary()
            self._print_perf_summary()
            return
        result = None
        # A window that an exception (a Ctrl-C) kept step() from delivering,
        # taken before the collect below puts this one in _undelivered.
        earlier = self._undelivered
        # Planned from the engine's own state, not current_state: a step()
        # that an exception (a Ctrl-C) cut short between the two may have
        # left the engine recording a window that current_state says is
        # over; that window is delivered here, not left in the engine to
        # open the next Profiler's first window. A window whose collect an
        # exception cut short is still the engine's too.
        recording = self._collect_owed or ProfilerState(_C.get_state()).is_recording
        transition = _lifecycle.plan_stop(ProfilerState.RECORD if recording else _CLOSED)
        released = False
        try:
            # Marked stopped inside the try whose finally releases the engine:
            # an exception between the two would leave the engine claimed by
            # a stopped Profiler, refusing every later one.
            self._started = False
            self._steady_until = 0
            self._timer.stop()
            # No step may be open (stop() from on_trace_ready, between two
            # steps): _end_step passes over that.
            result = self._apply(transition, end_step=lambda: self._end_step(0))
            released = True
        finally:
            _active_ref = None
            if not released:
                # An exception (a Ctrl-C) cut the release short: the engine may
                # still record, with a step open, for no one. Its window is
                # dropped rather than left to open the next Profiler's.
                self._collect_owed = False
                try:
                    _close_engine_discarding(self._memory_cap_before)
                except Exception:
                    pass  # the exception under way says what went wrong
            self._set_gpu_tracing(False)
            self._restore_memory_cap()
            self.previous_state = self.current_state
            self.current_state = _CLOSED
        # After the engine is released: an exception here (a Ctrl-C) must not
        # leave it claimed by a Profiler that is already stopped.
        self._perf_summary = self._timer.summary()
        self._print_perf_summary()
        # The earlier window comes first: nothing collected is lost. (From
        # on_trace_ready at a step, there is neither: the callback's window
        # is handed over, and the next one is not open yet.)
        run = self._runs
        try:
            if earlier is not None:
                self._deliver(earlier, improper=False)
        finally:
            if result is not None:
                self._deliver(result, improper=False)
        # A run that on_trace_ready started again has delivered a window (to
        # that callback) before its start() counted windows from 0.
        if self._windows == 0 and self._runs == run:
            warn_at_caller(
                f"profkit: the Profiler stopped at step {self.step_num} without recording any step "
                f"(the scheduler {self.scheduler!r} never reached RECORD); no trace was produced"
            )

    def _step_running(self) -> bool:
        """Whether a step() of this Profiler is running on some thread.

        _in_step says so, but an exception (a Ctrl-C) landing just where
        step() sets or clears it could leave it stale, and a stale flag would
        turn every stop() into a no-op: the stacks are the truth (stop() is
        rare, so walking them costs nothing that matters)."""
        for frame in sys._current_frames().values():
            while frame is not None:
                if frame.f_code is _STEP_CODE and frame.f_locals.get("self") is self:
                    return True
                frame = frame.f_back
        self._in_step = False
        return False

    # ---- benchmark mode -----------------------------------------------------------
    def step_info(self, unit: Optional[str] = None) -> str:
        """``"reader_cost: %.5f s batch_cost: %.5f s ips: %.3f {unit}/s"`` averaged since the last call.

        ``unit`` names what num_samples counts; it is kept for later calls
        and the Perf Summary (``"samples"`` until one is given). Steps
        without num_samples make ips count steps.
        """
        return self._timer.step_info(unit)

    @property
    def perf_summary(self) -> Optional[PerfSummary]:
        """The step timing statistics printed at the last ``stop()`` (None before)."""
        return self._perf_summary

    def _print_perf_summary(self) -> None:
        if self._perf_summary is not None:
            print(self._perf_summary.format(), flush=True)

    # ---- results ----------------------------------------------------------------
    @property
    def profiler_result(self) -> Optional[ProfilerResult]:
        """The latest recording window (None until one ends)."""
        return self._result

    def export(self, path: str, format: str = "json") -> None:
        """Writes the latest window: ``format="json"`` Chrome trace JSON, ``"pb"`` a ``.pktrace`` file."""
        result = self._require_result("export")
        if format not in ("json", "pb", "pktrace"):
            raise ValueError(f"Profiler.export: format must be 'json' or 'pb', got {format!r}")
        result.save(path, format)

    def export_stacks(self, path: PathLike, metric: str = "self_cpu_time_total") -> None:
        """Writes the latest window as folded stacks for a flame graph (torch.profiler's
        ``export_stacks``; see ``ProfilerResult.export_stacks``)::

            prof.export_stacks("run.stacks")  # then: flamegraph.pl --countname us. run.stacks > run.svg
        """
        self._require_result("export_stacks").export_stacks(path, metric)

    @_summary.with_options_doc
    def summary(
        self,
        sorted_by: Union[SortedKeys, int] = SortedKeys.CPUTotal,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: str = "ms",
        views: Union[None, SummaryView, Iterable[SummaryView]] = None,
        row_limit: Optional[int] = None,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
    ) -> None:
        """Prints the summary tables of the latest window (SPEC §6)."""
        result = self._require_result("summary")
        options = _summary.SummaryOptions.from_arguments(locals())
        print(_summary.summary_text(result.raw, options), flush=True)

    def summary_data(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        """The latest window's summary tables as data: ``ProfilerResult.summary_data``, same arguments."""
        return self._require_result("summary_data").summary_data(*args, **kwargs)

    def _require_result(self, what: str) -> ProfilerResult:
        if self._result is None and self.timer_only:
            raise RuntimeError(
                f"Profiler.{what}(): this Profiler has timer_only=True, so it records no trace (only step "
                "timing: step_info() and perf_summary); create it without timer_only to record one"
            )
        if self._result is None:
            raise RuntimeError(
                f"Profiler.{what}(): no trace has been collected yet; a trace is ready after a "
                "RECORD_AND_RETURN step or after stop() while recording"
            )
        return self._result

    # ---- internals ----------------------------------------------------------------
    def _next_change(self) -> int:
        """The first step after step_num that may be in another state (see steady_until); 0 if unknown."""
        if not self._predictable or self.current_state is ProfilerState.RECORD_AND_RETURN:
            return 0  # a callable of the user's is asked every step
        return steady_until(self._scheduler, self.step_num)

    def _scheduled_state(self, step: int) -> ProfilerState:
        state = self.scheduler(step)
        if isinstance(state, ProfilerState):
            return state
        if isinstance(state, int) and not isinstance(state, bool):
            try:
                return ProfilerState(state)
            except ValueError:
                pass
        raise ValueError(
            f"Profiler: the scheduler returned {state!r} for step {step}; it must return a ProfilerState"
        )

    def _apply(self, transition: _lifecycle.Transition, end_step: Callable[[], None]) -> Optional["_C.Result"]:
        """Carries out a transition's engine actions up to the collect, ending
        the running step with ``end_step()``; returns the collected window if
        any. ``transition.then`` is the caller's to enter, once the window is
        delivered (_begin_step_after_delivery; stop() enters none).

        The step ends after the collect hooks and the listeners have heard of
        the change and before the engine changes state: what they close as a
        window ends (the Python calls still open, collectives in flight) ends
        inside the window's last step, as it ran, not after it."""
        result = None
        if transition.deliver:
            if self._gpu_tracing:
                _synchronize_gpu()
            self._collect_owed = True
            _window_listeners.notify_collect(self)  # still recording: integrations may close their events
        if transition.first is not None:
            _window_listeners.notify(self, transition.first)
        end_step()
        if transition.first is not None:
            _C.set_state(transition.first.value)
        if transition.deliver:
            _rank.apply_rank()  # torch.distributed may have been initialized after start()
            result = self._undelivered = _C.collect(self._collected)
            self._collect_owed = False
            self._collected.clear()
        return result

    def _set_engine_state(self, state: ProfilerState) -> None:
        """Puts the engine in ``state``; framework integrations hear of it first (_window_listeners)."""
        _window_listeners.notify(self, state)
        _C.set_state(state.value)

    def _deliver(self, result: "_C.Result", improper: bool) -> None:
        """Hands a collected window to on_trace_ready, after warning of what is wrong with it.

        A warning turned into an error (``-W error``) or a Ctrl-C landing
        among the warnings still lets on_trace_ready have the window; the
        exception follows it."""
        self._result = ProfilerResult(result)
        try:
            self._warn_about_window(self._result.info, improper)
        finally:
            self._hand_over(result)

    def _warn_about_window(self, info: Dict[str, Any], improper: bool) -> None:
        """Warns of the events a window (its ``info``) lost, and of an improper schedule."""
        # The window's own cap: at stop() the engine's is already put back.
        cap = self.memory_cap if self.memory_cap is not None else _C.get_memory_cap()
        lost = _losses(info, cap)
        if lost:
            warn_at_caller(f"profkit: this recording window lost events: {lost}. Its summary and trace files lack them.")
        if improper:
            steps = (
                f"steps {info['first_step']}-{info['first_step'] + info['step_count'] - 1}"
                if info["step_count"]
                else "no whole step"
            )
            warn_at_caller(
                f"profkit: improper schedule: step {self.step_num - 1} was RECORD and step {self.step_num} is "
                f"{self.current_state.name}; the window ({steps}) is delivered now. Make the last recorded step "
                "RECORD_AND_RETURN (make_scheduler does)."
            )

    def _hand_over(self, result: "_C.Result") -> None:
        """Calls on_trace_ready, ``result`` being prof.profiler_result.

        The window leaves _undelivered only now: an exception (a Ctrl-C)
        before this leaves it to the next step() or stop(), which deliver
        it; none after can make it reach on_trace_ready twice."""
        # Kept as it was, not cleared: stop() from on_trace_ready may deliver
        # a window from inside the callback (one an interrupted step() left
        # recording), and the outer callback is still running after it.
        outer = self._in_callback
        try:
            self._in_callback = True
            if self._undelivered is result:
                self._undelivered = None
            self._windows += 1
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        finally:
            self._in_callback = outer

    def _restore_memory_cap(self) -> None:
        if self._memory_cap_before is not None:
            _C.set_memory_cap(self._memory_cap_before)
            self._memory_cap_before = None

    @staticmethod
    def active() -> Optional["Profiler"]:
        """The started Profiler that drives the engine now (None if none).

        One Profiler records at a time; when a script lost its handle to a
        started one (an exception outside a ``with`` block in a notebook),
        ``Profiler.active().stop()`` stops it and delivers its window.
        """
        return _active_profiler()

    def _set_gpu_tracing(self, enabled: bool) -> None:
        """Turns the engine's GPU tracing on or off (off always succeeds)."""
        try:
            _C.set_gpu_tracing(enabled)
        except RuntimeError as e:
            if enabled:
                _warn_gpu_unavailable(str(e))
            self._gpu_tracing = False
            return
        self._gpu_tracing = enabled

    def __repr__(self) -> str:
        status = "started" if self._started else "stopped" if self._runs else "not started"
        mode = ", timer_only" if self.timer_only else ""
        return f"<profkit.Profiler {status} at step {self.step_num} ({self.current_state.name}){mode}>"


# The code of Profiler.step, looked for on the stacks (Profiler._step_running).
_STEP_CODE = Profiler.step.__code__
