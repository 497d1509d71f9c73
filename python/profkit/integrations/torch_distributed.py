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
  is one, ``peer`` (src/dst). A blocking call's event spans the whole call.
- An asynchronous call (``async_op=True``, isend/irecv, batch_isend_irecv)
  returns at once, so its event only spans the launch. For CPU tensors
  (gloo), a second event "<name> (in flight)" on the thread
  "profkit: collectives in flight" spans from when profkit's waiter thread
  picks the work up (microseconds after the launch; or when the work
  launched before it completes, since the waiter takes them in order) until
  the work completes — the time the communication was really under way, for
  the Distributed Summary's Overlap. The waiter waits on the work's future,
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
by DTensor and torch.compile), DDP's own C++ traffic (the parameter
broadcast at construction is recorded: it goes through
``dist._broadcast_coalesced``), and NCCL/gloo internals.

Cost: outside a recording window a wrapped call costs one extra Python call
and a flag test (about a quarter of a microsecond); inside, a few
microseconds per call for the event and its arguments.

``enable()`` and ``disable()`` are idempotent and thread-safe. This module
imports without torch; ``enable()`` and ``instrument_ddp()`` raise a clear
error when torch (or torch.distributed) is not available.
"""

import functools
import inspect
import queue
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _C, _window_listeners
from .._C import RecordEvent

__all__ = ["enable", "disable", "is_enabled", "instrument_ddp", "wait_in_flight", "COLLECTIVES", "IN_FLIGHT_SUFFIX"]

_COMMUNICATION = 12  # TracerEventType.Communication
IN_FLIGHT_SUFFIX = " (in flight)"
IN_FLIGHT_THREAD_NAME = "profkit: collectives in flight"


class _Spec:
    """Which parameters of a function hold what this rank sends and receives."""

    def __init__(
        self,
        sent: Sequence[str] = (),
        received: Sequence[str] = (),
        peer: Optional[str] = None,
        group: Optional[str] = "group",
        positional: bool = False,
    ) -> None:
        self.sent = tuple(sent)  # -> "bytes"
        self.received = tuple(received)  # -> "out_bytes" (or "bytes" when nothing is sent)
        self.peer = peer
        self.group = group
        self.positional = positional  # a builtin without a signature


#: The functions enable() wraps (those present in the installed torch), and
#: where their payload is.
COLLECTIVES: Dict[str, _Spec] = {
    "all_reduce": _Spec(sent=["tensor"]),
    "all_reduce_coalesced": _Spec(sent=["tensors"]),
    "broadcast": _Spec(sent=["tensor"], peer="src"),
    "reduce": _Spec(sent=["tensor"], peer="dst"),
    "all_gather": _Spec(sent=["tensor"], received=["tensor_list"]),
    "all_gather_into_tensor": _Spec(sent=["input_tensor"], received=["output_tensor"]),
    "all_gather_single": _Spec(sent=["input_tensor"], received=["output_tensor"]),
    "_all_gather_base": _Spec(sent=["input_tensor"], received=["output_tensor"]),
    "all_gather_coalesced": _Spec(sent=["input_tensor_list"], received=["output_tensor_lists"]),
    "reduce_scatter": _Spec(sent=["input_list"], received=["output"]),
    "reduce_scatter_tensor": _Spec(sent=["input"], received=["output"]),
    "reduce_scatter_single": _Spec(sent=["input"], received=["output"]),
    "_reduce_scatter_base": _Spec(sent=["input"], received=["output"]),
    "gather": _Spec(sent=["tensor"], received=["gather_list"], peer="dst"),
    "scatter": _Spec(sent=["scatter_list"], received=["tensor"], peer="src"),
    "all_to_all": _Spec(sent=["input_tensor_list"], received=["output_tensor_list"]),
    "all_to_all_single": _Spec(sent=["input"], received=["output"]),
    "barrier": _Spec(),
    "monitored_barrier": _Spec(),
    "send": _Spec(sent=["tensor"], peer="dst"),
    "recv": _Spec(received=["tensor"], peer="src"),
    "isend": _Spec(sent=["tensor"], peer="dst"),
    "irecv": _Spec(received=["tensor"], peer="src"),
    "batch_isend_irecv": _Spec(sent=["p2p_op_list"], group=None),
    "all_gather_object": _Spec(),
    "gather_object": _Spec(peer="dst"),
    "broadcast_object_list": _Spec(peer="src"),
    "scatter_object_list": _Spec(peer="src"),
    "send_object_list": _Spec(peer="dst"),
    "recv_object_list": _Spec(peer="src"),
    # DDP's parameter and buffer broadcasts: (process_group, tensors, buffer_size, src).
    "_broadcast_coalesced": _Spec(sent=["1"], peer="3", group="0", positional=True),
}

_ALWAYS_ASYNC = {"isend", "irecv", "batch_isend_irecv"}
_EVENT_NAMES = {"_broadcast_coalesced": "broadcast_coalesced", "_all_gather_base": "all_gather_into_tensor",
                "_reduce_scatter_base": "reduce_scatter_tensor"}

_lock = threading.Lock()
_originals: Dict[str, Callable[..., Any]] = {}  # name -> the function enable() replaced
_wrappers: Dict[str, Callable[..., Any]] = {}  # name -> its wrapper
_p2pop_saved: Optional[Tuple[type, Dict[str, Any]]] = None  # P2POp and its own __init__/__new__
_context = threading.local()  # ddp_bucket while a DDP hook runs

_KEYS: Dict[str, int] = {}


def _key(name: str) -> int:
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = _C.intern(name)
    return key


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
    return dist


# ---- what a call moves ------------------------------------------------------------


def _payload(value: Any) -> Tuple[Optional[int], Any]:
    """(bytes, first tensor) of a tensor, a P2POp, or a list of them (or of
    lists); (None, None) when there is no tensor."""
    if value is None:
        return None, None
    nbytes = getattr(value, "nbytes", None)
    if nbytes is not None and hasattr(value, "element_size"):  # a tensor
        return int(nbytes), value
    tensor = getattr(value, "tensor", None)  # a P2POp
    if tensor is not None:
        return _payload(tensor)
    if isinstance(value, (list, tuple)):
        total, first = None, None
        for item in value:
            n, t = _payload(item)
            if n is not None:
                total = n if total is None else total + n
                if first is None:
                    first = t
        return total, first
    return None, None


def _payloads(bound: Dict[str, Any], names: Sequence[str], tensor: Any) -> Tuple[Optional[int], Any]:
    """Total bytes of the named arguments, and the first tensor (``tensor`` if already found)."""
    total = None
    for name in names:
        n, t = _payload(bound.get(name))
        if n is not None:
            total = n if total is None else total + n
            if tensor is None:
                tensor = t
    return total, tensor


class _Call:
    """The facts of one call, for the event's arguments and in-flight tracking."""

    __slots__ = ("args", "cpu")

    def __init__(self) -> None:
        self.args: List[Tuple[str, Any]] = []
        self.cpu = False


def _describe(name: str, spec: _Spec, params: Optional[Tuple[str, ...]], has_async: bool, args: tuple,
              kwargs: dict) -> _Call:
    call = _Call()
    if params is None:  # a builtin without a signature: arguments by position
        params = tuple(str(i) for i in range(len(args)))
    bound: Dict[str, Any] = dict(zip(params, args))
    if kwargs:
        bound.update(kwargs)
    sent, tensor = _payloads(bound, spec.sent, None)
    received, tensor = _payloads(bound, spec.received, tensor)
    if sent is not None:
        call.args.append(("bytes", sent))
        if received is not None:
            call.args.append(("out_bytes", received))
    elif received is not None:
        call.args.append(("bytes", received))
    if tensor is not None:
        call.args.append(("dtype", _dtype_name(tensor.dtype)))
        call.cpu = tensor.device.type == "cpu"
    if spec.group is not None:
        size = _group_size(bound.get(spec.group))
        if size is not None:
            call.args.append(("group_size", size))
    if spec.peer is not None and isinstance(bound.get(spec.peer), int):
        call.args.append(("peer", bound[spec.peer]))
    if name in _ALWAYS_ASYNC:
        call.args.append(("async_op", 1))
    elif has_async:
        call.args.append(("async_op", int(bool(bound.get("async_op", False)))))
    if name == "batch_isend_irecv" and isinstance(bound.get("p2p_op_list"), list):
        call.args.append(("ops", len(bound["p2p_op_list"])))
    bucket = getattr(_context, "ddp_bucket", None)
    if bucket is not None:
        call.args.append(("ddp_bucket", bucket))
    return call


def _group_size(group: Any) -> Optional[int]:
    try:
        if group is None:  # the default group, without get_world_size()'s layers
            c10d = sys.modules["torch.distributed.distributed_c10d"]
            group = c10d.GroupMember.WORLD
        return int(group.size())
    except Exception:  # not initialized, not a member, another torch: leave it out
        return None


_DTYPE_NAMES: Dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    text = _DTYPE_NAMES.get(dtype)
    if text is None:
        text = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return text


def _annotate(args: Sequence[Tuple[str, Any]]) -> None:
    for key, value in args:
        if isinstance(value, str):
            _C.event_arg_str(_key(key), value)
        else:
            _C.event_arg_int(_key(key), int(value))


# ---- collectives in flight --------------------------------------------------------


class _InFlight:
    """A daemon thread that waits for asynchronous CPU collectives in launch
    order and records how long each was under way."""

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._start_lock = threading.Lock()

    def track(self, name: str, futures: List[Any], args: Sequence[Tuple[str, Any]]) -> None:
        if not futures:
            return
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    thread = threading.Thread(target=self._run, name=IN_FLIGHT_THREAD_NAME, daemon=True)
                    thread.start()
                    self._thread = thread
        self._queue.put((name + IN_FLIGHT_SUFFIX, futures, args))

    def drain(self, timeout: float = 10.0) -> bool:
        """Waits until every work tracked so far has been waited for (tests, and
        before a window closes). True if it finished in time."""
        if self._thread is None:
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def _run(self) -> None:
        try:
            _C.set_thread_name(IN_FLIGHT_THREAD_NAME)
        except RuntimeError:  # pragma: no cover - naming is cosmetic
            pass
        while True:
            item = self._queue.get()
            if isinstance(item, threading.Event):
                item.set()
                continue
            name, futures, args = item
            event = RecordEvent(name, _COMMUNICATION)
            event.begin()
            try:
                _annotate(args)
                for future in futures:
                    try:
                        future.wait()  # any number of threads may wait on a future
                    except Exception:  # the caller sees the failure on its own wait
                        pass
            finally:
                event.end()
            del futures, item


_in_flight = _InFlight()


def wait_in_flight(timeout: float = 10.0) -> bool:
    """Blocks until profkit has seen every asynchronous collective launched so
    far complete and recorded its in-flight event; False if ``timeout``
    seconds passed first. The Profiler does this (up to
    WINDOW_END_WAIT_S) before each recording window closes."""
    return _in_flight.drain(timeout)


#: How long the end of a recording window waits for collectives in flight
#: (they normally completed already: the step waited for them). Longer waits
#: give up, and those in-flight events are left out of the window.
WINDOW_END_WAIT_S = 0.5


def _finish_in_flight(_profiler: object = None) -> None:
    _in_flight.drain(WINDOW_END_WAIT_S)


# ---- wrapping ----------------------------------------------------------------------


def _make_wrapper(name: str, original: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    event_name = _EVENT_NAMES.get(name, name)
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

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not is_recording():
            return original(*args, **kwargs)
        event = RecordEvent(event_name, _COMMUNICATION)
        event.begin()
        call = None
        try:
            try:
                call = _describe(name, spec, params, has_async, args, kwargs)
                _annotate(call.args)
            except Exception:  # never let profiling break the call; record it without arguments
                call = None
            result = original(*args, **kwargs)
        finally:
            event.end()
        if call is not None and call.cpu and result is not None and _is_async(name, call):
            _in_flight.track(event_name, _futures(result), call.args)
        return result

    functools.update_wrapper(wrapper, original)
    wrapper.__profkit_original__ = original  # type: ignore[attr-defined]
    return wrapper


def _futures(result: Any) -> List[Any]:
    """The futures of a call's works. Never the works themselves: waiting
    twice on a gloo send/recv work (ours and the caller's) hangs the caller,
    since each completion wakes one waiter. Works without a future (gloo's
    send/recv) are not tracked."""
    futures = []
    for work in result if isinstance(result, list) else [result]:
        try:
            futures.append(work.get_future())
        except Exception:  # "getFuture not implemented": no in-flight event for it
            pass
    return futures


def _is_async(name: str, call: _Call) -> bool:
    return name in _ALWAYS_ASYNC or ("async_op", 1) in call.args


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

    Returns:
        the names of the functions wrapped.

    Raises:
        ImportError: PyTorch is not installed.
        RuntimeError: this PyTorch has no torch.distributed.
    """
    dist = _torch_distributed()
    with _lock:
        for name, spec in COLLECTIVES.items():
            current = getattr(dist, name, None)
            if current is None or name in _originals:
                continue
            wrapper = _make_wrapper(name, current, spec)
            _originals[name] = current
            _wrappers[name] = wrapper
            setattr(dist, name, wrapper)
        _patch_p2pop(dist)
        _window_listeners.add_collect_hook(_finish_in_flight)
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
        for name, original in list(_originals.items()):
            if getattr(dist, name, None) is _wrappers.get(name):
                setattr(dist, name, original)
            del _originals[name]
            _wrappers.pop(name, None)
        _unpatch_p2pop()
        _window_listeners.remove_collect_hook(_finish_in_flight)


def is_enabled() -> bool:
    """True between enable() and disable()."""
    return bool(_originals)


DDP_WAIT_NAME = "DDP wait for all_reduce"


def _mark_ddp_wait(engine: Any, buckets: int) -> None:
    """Records DDP's wait for its gradient all-reduces at the end of backward.

    Once the last bucket is launched, backward has computed every gradient;
    what is left is DDP's finalizer waiting for the reductions. DDP queues
    it as an autograd final callback right after this hook returns, and final
    callbacks run in order, so ours re-queues itself once: the second run
    comes after the finalizer. The event spans [last launch, finalizer done]
    on the backward thread: the communication that computation did not hide.
    CPU only: on CUDA that wait is a stream wait, not a CPU one.
    """
    event = RecordEvent(DDP_WAIT_NAME, _COMMUNICATION)
    event.begin()
    _C.event_arg_int(_key("buckets"), buckets)

    def end() -> None:
        try:
            event.end()
        except RuntimeError:  # pragma: no cover - the callback ran on another thread: leave it out
            pass

    def after_finalizer() -> None:
        try:
            engine.queue_callback(end)
        except RuntimeError:  # pragma: no cover - callbacks cannot be queued here: end now
            end()

    try:
        engine.queue_callback(after_finalizer)
    except RuntimeError:  # pragma: no cover - not inside a backward pass after all
        end()


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
        _context.ddp_bucket = int(bucket.index())
        try:
            future = chosen(hook_state, bucket)
        finally:
            _context.ddp_bucket = None
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
