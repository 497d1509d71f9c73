"""torch.distributed's collectives and point-to-point calls as Communication events.

    import profkit
    from profkit.integrations import torch_distributed

    torch_distributed.enable()                      # dist.all_reduce(...) & co. are recorded
    ddp = torch_distributed.instrument_ddp(DDP(model))  # and DDP's gradient all-reduces

What is recorded, while a profkit recording window is open:

- Every call of the public torch.distributed functions below, looked up as
  ``torch.distributed.<name>`` (``dist.all_reduce(t)``), becomes a
  Communication event on the calling thread, named after the function
  ("all_reduce"), with arguments ``bytes`` (the tensors this rank sends or
  reduces; for recv/irecv the tensor it receives), ``out_bytes`` (the output
  buffers, when they are separate: all_gather, gather, reduce_scatter,
  all_to_all...), ``dtype``, ``group_size``, ``async_op`` and, where there
  is one, ``peer`` (src/dst; a group_src/group_dst is recorded as the global
  rank it stands for). A blocking call's event spans the whole call; a call
  that raised gets ``error`` (the exception's type name).
- An asynchronous call (``async_op=True``, isend/irecv, batch_isend_irecv)
  returns at once, so its event only spans the launch. For CPU tensors
  (gloo), a second event "<name> (in flight)" on the thread
  "profkit: collectives in flight" spans from when profkit's waiter thread
  picks the work up (microseconds after the launch; or when the work
  launched before it completes, since the waiter takes them in order) until
  the work completes — the time the communication was really under way, for
  the Distributed Summary's Overlap; ``error`` marks a work that failed. The waiter waits on the work's future,
  never on the work: gloo's send/recv works have no future and wake only
  one waiter, so isend/irecv on gloo get no in-flight event (waiting on them
  too would hang the caller's own wait). CUDA tensors get none either:
  waiting from another thread would make that thread's stream wait, and GPU
  tracing shows the NCCL kernels anyway.
- DDP reduces gradients in C++ (its Reducer), not through these functions.
  ``instrument_ddp(model)`` registers torch's own ``allreduce_hook`` (the
  same reduction, through Python) as the model's communication hook, so the
  bucket all-reduces show as "all_reduce" events with a ``ddp_bucket``
  argument, plus their in-flight time; and, on CPU, the end of backward where
  DDP waits for the reductions becomes a "DDP wait for all_reduce" event on
  the backward thread (the communication that computation did not hide). A
  custom hook is instrumented the same way: ``instrument_ddp(model,
  hook=powerSGD_hook, state=...)``. The Python hook costs a few microseconds
  per bucket.

Not recorded: functions bound before ``enable()`` (``from torch.distributed
import all_reduce``), torch.distributed's internal calls (an object
collective is one event; its inner tensor collectives are not separate),
functional collectives (``torch.distributed._functional_collectives``, used
by DTensor and torch.compile; in code that torch.compile traces, a wrapped
call is the original one, which dynamo turns into a functional collective
or a graph break exactly as without profkit), DDP's own C++ traffic (the parameter
broadcast at construction is recorded: it goes through
``dist._broadcast_coalesced``), and NCCL/gloo internals.

Cost: outside a recording window a wrapped call costs two extra Python calls
(itself and torch's is_dynamo_compiling) and a flag test (a few tenths of a
microsecond); inside, a few
microseconds per call for the event and its arguments.

``enable()`` and ``disable()`` are idempotent and thread-safe. This module
imports without torch; ``enable()`` and ``instrument_ddp()`` raise a clear
error when torch (or torch.distributed) is not available.
"""

import contextlib
import functools
import inspect
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _C, _window_listeners
from .._C import RecordEvent
from .._python_stacks import asked_by_profkit, calls_user_code
from ._collective_calls import (
    COLLECTIVES,
    COMMUNICATION,
    DDP_WAIT_NAME,
    EVENT_NAMES,
    Call,
    Spec,
    annotate,
    annotate_failure,
    arg_key,
    ddp_context,
    describe,
    is_async,
)
from ._collectives_in_flight import (
    IN_FLIGHT_SUFFIX,
    IN_FLIGHT_THREAD_NAME,
    WINDOW_END_WAIT_S,
    finish_in_flight,
    track,
    wait_in_flight,
)
from ._torch_version import require_supported_torch

__all__ = [
    "enable",
    "disable",
    "is_enabled",
    "instrument_ddp",
    "wait_in_flight",
    "COLLECTIVES",
    "IN_FLIGHT_SUFFIX",
    "IN_FLIGHT_THREAD_NAME",
    "WINDOW_END_WAIT_S",
    "DDP_WAIT_NAME",
]

_lock = threading.Lock()
# Whether the wrappers were asked for through enable() (by a user or
# instrument_ddp), not only by profkit.integrations.torch, whose disable()
# must then leave them on.
_asked_for = False
_originals: Dict[str, Callable[..., Any]] = {}  # name -> the function enable() replaced
_wrappers: Dict[str, Callable[..., Any]] = {}  # name -> its wrapper
_p2pop_saved: Optional[Tuple[type, Dict[str, Any]]] = None  # P2POp and its own __init__/__new__


def _torch_distributed():
    try:
        import torch.distributed as dist  # noqa: PLC0415 - torch is optional
    except ImportError as e:
        raise ImportError(
            "profkit.integrations.torch_distributed needs PyTorch (import torch.distributed failed: "
            f"{e}); install torch, or leave this integration off"
        ) from e
    if not dist.is_available():
        raise RuntimeError(
            "profkit.integrations.torch_distributed: this PyTorch build has no torch.distributed "
            "(torch.distributed.is_available() is False)"
        )
    import torch  # noqa: PLC0415 - imported with torch.distributed above

    require_supported_torch(torch, "profkit.integrations.torch_distributed")
    return dist


# ---- wrapping ----------------------------------------------------------------------


def _is_compiling_function() -> Callable[[], bool]:
    """torch.compiler.is_dynamo_compiling (a bare ``return False`` outside
    dynamo's tracing, which folds it to True), else is_compiling, else a
    function that says False (a torch without torch.compiler)."""
    import torch  # noqa: PLC0415 - only called once torch.distributed is imported

    compiler = getattr(torch, "compiler", None)
    for name in ("is_dynamo_compiling", "is_compiling"):
        found = getattr(compiler, name, None)
        if callable(found):
            return found
    return _never_compiling


def _never_compiling() -> bool:
    return False


def _make_wrapper(name: str, original: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    event_name = EVENT_NAMES.get(name, name)
    # Parameter names, to find arguments by name however they were passed
    # (zip with the positional arguments: cheaper than Signature.bind).
    params: Optional[Tuple[str, ...]] = None
    has_async = False
    if not spec.positional:
        try:
            parameters = inspect.signature(original).parameters
        except (TypeError, ValueError):
            parameters = {}
        positional_kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params = tuple(p.name for p in parameters.values() if p.kind in positional_kinds)
        has_async = "async_op" in parameters
    is_recording = _C.is_recording
    # Through profkit's own function: with_stack leaves its calls out (they
    # showed as the program's calls in every collective).
    is_compiling = asked_by_profkit(_is_compiling_function())

    @calls_user_code
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # Asked first, for torch.compile: dynamo folds is_compiling() to True
        # and traces the original call (rewriting all_reduce & co. into
        # functional collectives, which profkit does not see), where it could
        # not trace is_recording() -- a graph break, an error under
        # fullgraph=True.
        if is_compiling() or not is_recording():
            return original(*args, **kwargs)
        try:
            call: Optional[Call] = describe(name, spec, params, has_async, args, kwargs)
        except Exception:  # never let profiling break the call; record it without arguments
            call = None
        if call is not None and not call.member:
            return original(*args, **kwargs)  # this rank is not in the group: torch only warns
        event = RecordEvent(event_name, COMMUNICATION)
        event.begin()
        try:
            if call is not None:
                try:
                    annotate(call.args)
                except Exception:  # as above: the call goes on, with fewer arguments
                    pass
            try:
                result = original(*args, **kwargs)
            except BaseException as error:
                annotate_failure(error)
                raise
            if call is not None and name == "recv" and isinstance(result, int) and "peer" not in dict(call.args):
                annotate([("peer", result)])  # from any source (src=None): torch returns the sender's rank
        finally:
            event.end()
        if call is not None and call.cpu and result is not None and is_async(name, call):
            track(event_name, result, call.args)
        return result

    functools.update_wrapper(wrapper, original)
    wrapper.__profkit_original__ = original  # type: ignore[attr-defined]
    return wrapper


def _unwrap(op: Any) -> Any:
    return getattr(op, "__profkit_original__", op)


def _patch_p2pop(dist: Any) -> None:
    """P2POp checks `op is isend/irecv` against torch's own functions; hand it
    the original when it is given our wrapper."""
    global _p2pop_saved
    cls = getattr(dist, "P2POp", None)
    if cls is None or _p2pop_saved is not None:
        return
    _p2pop_saved = (cls, {k: cls.__dict__.get(k) for k in ("__init__", "__new__")})
    original_init, original_new = cls.__init__, cls.__new__

    @functools.wraps(original_init)
    def __init__(self: Any, op: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, _unwrap(op), *args, **kwargs)

    @functools.wraps(original_new)
    def __new__(cls_: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        return original_new(cls_, _unwrap(op), *args, **kwargs)

    cls.__init__ = __init__
    cls.__new__ = staticmethod(__new__)


def _unpatch_p2pop() -> None:
    global _p2pop_saved
    if _p2pop_saved is None:
        return
    cls, saved = _p2pop_saved
    for key, value in saved.items():
        if value is None:
            delattr(cls, key)
        else:
            setattr(cls, key, value)
    _p2pop_saved = None


def enable() -> List[str]:
    """Records torch.distributed's collectives and p2p calls from now on.

    Replaces the functions in COLLECTIVES on the ``torch.distributed`` module
    with thin wrappers (nearly free outside recording windows). Idempotent.
    Stays on until disable(), whatever ``profkit.integrations.torch`` does.

    Returns:
        the names of the functions wrapped.

    Raises:
        ImportError: PyTorch is not installed.
        RuntimeError: this PyTorch has no torch.distributed.
    """
    global _asked_for
    dist = _torch_distributed()
    with _lock:
        _asked_for = True
        return _wrap(dist)


def _enable_for_integration() -> bool:
    """enable() on behalf of ``profkit.integrations.torch.enable()``; True when it was off.

    Unlike enable(), it marks the wrappers as the integration's own, which
    _disable_for_integration() takes down unless someone asked for them
    (enable(), instrument_ddp()) in the meantime.
    """
    dist = _torch_distributed()
    with _lock:
        if _originals:
            return False
        _wrap(dist)
        return True


def _disable_for_integration() -> None:
    """disable(), unless enable() or instrument_ddp() has asked for the wrappers since they went on."""
    try:
        import torch.distributed as dist  # noqa: PLC0415
    except ImportError:
        return
    with _lock:  # one section: an enable() on another thread cannot fall between the check and the unwrapping
        if not _asked_for:
            _unwrap_locked(dist)


def _wrap(dist: Any) -> List[str]:
    """Under _lock: puts the wrappers on ``dist`` (those not on already)."""
    for name, spec in COLLECTIVES.items():
        current = getattr(dist, name, None)
        if current is None or name in _originals:
            continue
        wrapper = _make_wrapper(name, current, spec)
        _originals[name] = current
        _wrappers[name] = wrapper
        setattr(dist, name, wrapper)
    _patch_p2pop(dist)
    _window_listeners.add_collect_hook(finish_in_flight)
    return sorted(_originals)


def disable() -> None:
    """Puts torch.distributed's own functions back. Idempotent.

    A function someone else replaced after enable() is left as it is.
    """
    try:
        import torch.distributed as dist  # noqa: PLC0415
    except ImportError:
        return
    with _lock:
        _unwrap_locked(dist)


def _unwrap_locked(dist: Any) -> None:
    """Under _lock: disable()'s work."""
    global _asked_for
    _asked_for = False
    for name, original in list(_originals.items()):
        if getattr(dist, name, None) is _wrappers.get(name):
            setattr(dist, name, original)
        del _originals[name]
        _wrappers.pop(name, None)
    _unpatch_p2pop()
    _window_listeners.remove_collect_hook(finish_in_flight)


def is_enabled() -> bool:
    """True between enable() and disable()."""
    return bool(_originals)


class _DdpWaits(threading.local):
    """The DDP wait events open on a thread (final callbacks of a backward pass run on one)."""

    def __init__(self) -> None:
        self.open: List[RecordEvent] = []


_ddp_waits = _DdpWaits()


def _mark_ddp_wait(engine: Any, buckets: int) -> None:
    """Records DDP's wait for its gradient all-reduces at the end of backward.

    Once the last bucket is launched, what is left of backward is DDP's
    finalizer waiting for the reductions. DDP queues it as an autograd final
    callback right after this hook returns, and final callbacks run in order
    once every node of the graph has run: ours, queued first, opens the event
    and queues its end, which comes after the finalizer. The event spans
    [backward's nodes done, finalizer done] on the backward thread: the
    communication that computation did not hide.

    The event is opened in the final callback, not here: this hook runs
    inside the range of an autograd node (torch's RecordFunction, which the
    native hook records), and an event opened inside that range would be
    taken as the one the range's end closes -- the wait would be recorded as
    the node's time and the marker cut to microseconds.
    CPU only: on CUDA that wait is a stream wait, not a CPU one.

    Several DDP models in one backward pass (an encoder and a decoder
    wrapped apart) queue begin A, finalizer A, begin B, finalizer B, and
    each end goes to the back of the queue: A's wait would end after B's
    finalizer, across B's wait. So a wait that begins ends the ones still
    open before it on the thread, whose finalizers have run by then.
    """
    event = RecordEvent(DDP_WAIT_NAME, COMMUNICATION)
    open_waits = _ddp_waits.open

    def end() -> None:
        if event not in open_waits:
            return  # ended when a later model's wait began
        open_waits.remove(event)
        try:
            event.end()
        except RuntimeError:  # pragma: no cover - the callback ran on another thread: leave it out
            pass

    def begin_before_finalizer() -> None:
        while open_waits:  # an earlier model's wait in this backward pass: its finalizer is done
            earlier = open_waits.pop()
            with contextlib.suppress(RuntimeError):
                earlier.end()
        if not _C.is_recording():
            return  # the window closed since the launch
        event.begin()
        open_waits.append(event)
        _C.event_arg_int(arg_key("buckets"), buckets)
        try:
            engine.queue_callback(end)
        except RuntimeError:  # pragma: no cover - callbacks cannot be queued here: end now
            end()

    try:
        engine.queue_callback(begin_before_finalizer)
    except RuntimeError:  # pragma: no cover - not inside a backward pass after all
        pass


def instrument_ddp(model: Any, hook: Optional[Callable[..., Any]] = None, state: Any = None) -> Any:
    """Makes DDP's gradient all-reduces visible to profkit; returns ``model``.

    Registers ``hook`` (default: torch's ``allreduce_hook``, the reduction
    DDP does by default) as the model's communication hook, so each bucket's
    reduction goes through torch.distributed's Python functions, which
    ``enable()`` (called here) records; their events carry ``ddp_bucket``.
    Call it once per model, before the first backward, instead of
    ``model.register_comm_hook(state, hook)``.

    Raises:
        TypeError: ``model`` is not a DistributedDataParallel.
        RuntimeError: the model already has a communication hook.
    """
    enable()
    from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    if not isinstance(model, DistributedDataParallel):
        raise TypeError(
            f"instrument_ddp: expected a torch.nn.parallel.DistributedDataParallel, got {type(model).__name__}"
        )
    if hook is None:
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook  # noqa: PLC0415

        hook = allreduce_hook
    chosen = hook
    is_recording = _C.is_recording

    import torch  # noqa: PLC0415

    engine = torch.autograd.Variable._execution_engine

    # No annotations: DDP checks them against dist.GradBucket and Future[Tensor].
    def profkit_ddp_comm_hook(hook_state, bucket):  # type: ignore[no-untyped-def]
        if not is_recording():
            return chosen(hook_state, bucket)
        ddp_context.ddp_bucket = int(bucket.index())
        try:
            future = chosen(hook_state, bucket)
        finally:
            ddp_context.ddp_bucket = None
        if bucket.is_last() and bucket.buffer().device.type == "cpu":
            _mark_ddp_wait(engine, int(bucket.index()) + 1)
        return future

    profkit_ddp_comm_hook.__qualname__ = f"profkit_ddp_comm_hook[{getattr(chosen, '__name__', 'hook')}]"
    try:
        model.register_comm_hook(state, profkit_ddp_comm_hook)
    except RuntimeError as e:
        raise RuntimeError(
            f"instrument_ddp: DDP refused the hook ({e}). DDP takes one communication hook per model: "
            "pass yours as instrument_ddp(model, hook=your_hook, state=your_state) instead of registering it"
        ) from e
    return model
