"""What a torch.distributed call moves: the arguments of its Communication event.

``COLLECTIVES`` names the functions ``torch_distributed.enable()`` wraps and,
for each, which parameters hold what this rank sends and receives.
``describe()`` turns one call's arguments into the event's arguments
(``bytes``, ``out_bytes``, ``dtype``, ``group_size``, ``peer``,
``async_op``, ``ops``, ``ddp_bucket``, ``error``); ``annotate()`` attaches them to the
event open on the calling thread.

Thread-safety: ``describe()`` and ``annotate()`` run on any thread; the
name caches are dicts filled under the GIL, and ``ddp_context`` is per
thread.
"""

import numbers
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _C
from .._enums import TracerEventType

__all__ = [
    "COMMUNICATION",
    "Spec",
    "COLLECTIVES",
    "EVENT_NAMES",
    "Call",
    "describe",
    "annotate",
    "annotate_failure",
    "is_async",
    "ddp_context",
    "arg_key",
    "DDP_WAIT_NAME",
]

#: The event type of every call and in-flight event.
COMMUNICATION = int(TracerEventType.Communication)


class Spec:
    """Which parameters of a function hold what this rank sends and receives."""

    def __init__(
        self,
        sent: Sequence[str] = (),
        received: Sequence[str] = (),
        peer: Optional[str] = None,
        group: Optional[str] = "group",
        positional: bool = False,
        p2p_ops: Optional[str] = None,
    ) -> None:
        self.sent = tuple(sent)  # -> "bytes"
        self.received = tuple(received)  # -> "out_bytes" (or "bytes" when nothing is sent)
        # A list of P2POps: each one's tensor is sent or received by its op.
        self.p2p_ops = p2p_ops
        self.peer = peer  # a global rank: "src" or "dst"
        # The same peer as a rank within ``group`` (torch 2.6+: group_src /
        # group_dst), recorded as the global rank it stands for.
        self.group_peer = {"src": "group_src", "dst": "group_dst"}.get(peer or "")
        self.group = group
        self.positional = positional  # a builtin without a signature


#: The functions enable() wraps (those present in the installed torch), and
#: where their payload is.
COLLECTIVES: Dict[str, Spec] = {
    "all_reduce": Spec(sent=["tensor"]),
    "all_reduce_coalesced": Spec(sent=["tensors"]),
    "broadcast": Spec(sent=["tensor"], peer="src"),
    "reduce": Spec(sent=["tensor"], peer="dst"),
    "all_gather": Spec(sent=["tensor"], received=["tensor_list"]),
    "all_gather_into_tensor": Spec(sent=["input_tensor"], received=["output_tensor"]),
    "all_gather_single": Spec(sent=["input_tensor"], received=["output_tensor"]),
    "_all_gather_base": Spec(sent=["input_tensor"], received=["output_tensor"]),
    "all_gather_coalesced": Spec(sent=["input_tensor_list"], received=["output_tensor_lists"]),
    "reduce_scatter": Spec(sent=["input_list"], received=["output"]),
    "reduce_scatter_tensor": Spec(sent=["input"], received=["output"]),
    "reduce_scatter_single": Spec(sent=["input"], received=["output"]),
    "_reduce_scatter_base": Spec(sent=["input"], received=["output"]),
    "gather": Spec(sent=["tensor"], received=["gather_list"], peer="dst"),
    "scatter": Spec(sent=["scatter_list"], received=["tensor"], peer="src"),
    "all_to_all": Spec(sent=["input_tensor_list"], received=["output_tensor_list"]),
    "all_to_all_single": Spec(sent=["input"], received=["output"]),
    "barrier": Spec(),
    "monitored_barrier": Spec(),
    "send": Spec(sent=["tensor"], peer="dst"),
    "recv": Spec(received=["tensor"], peer="src"),
    "isend": Spec(sent=["tensor"], peer="dst"),
    "irecv": Spec(received=["tensor"], peer="src"),
    "batch_isend_irecv": Spec(p2p_ops="p2p_op_list", group=None),
    "all_gather_object": Spec(),
    "gather_object": Spec(peer="dst"),
    "broadcast_object_list": Spec(peer="src"),
    "scatter_object_list": Spec(peer="src"),
    "send_object_list": Spec(peer="dst"),
    "recv_object_list": Spec(peer="src"),
    # DDP's parameter and buffer broadcasts: (process_group, tensors, buffer_size, src).
    "_broadcast_coalesced": Spec(sent=["1"], peer="3", group="0", positional=True),
}

#: Event names of the functions whose own name is private or an old alias.
EVENT_NAMES = {
    "_broadcast_coalesced": "broadcast_coalesced",
    "_all_gather_base": "all_gather_into_tensor",
    "_reduce_scatter_base": "reduce_scatter_tensor",
}

#: The Communication event instrument_ddp records for DDP's wait on its
#: gradient all-reduces: a marker of waiting, not a collective of its own.
DDP_WAIT_NAME = "DDP wait for all_reduce"

_ALWAYS_ASYNC = {"isend", "irecv", "batch_isend_irecv"}

#: ddp_bucket while a DDP communication hook runs on this thread
#: (torch_distributed.instrument_ddp sets it).
ddp_context = threading.local()

_KEYS: Dict[str, int] = {}


def arg_key(name: str) -> int:
    """The engine's id of an argument key, interned once; that of "" while
    the engine's name table is full (the collective is not the one to fail)."""
    found = _KEYS.get(name)
    if found is None:
        try:
            found = _KEYS[name] = _C.intern(name)
        except MemoryError:
            return 0
    return found


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


#: P2POp.op values (torch's functions, by name) that send; the others receive.
_SENDING_OPS = {"isend", "send"}
_RECEIVING_OPS = {"irecv", "recv"}


def _p2p_payloads(ops: Any) -> Tuple[Optional[int], Optional[int], Any]:
    """(bytes sent, bytes received, first tensor) of a list of P2POps: an
    irecv's tensor is filled by the peer, not sent to it."""
    sent, received, first = None, None, None
    if not isinstance(ops, (list, tuple)):
        return sent, received, first
    for op in ops:
        kind = getattr(getattr(op, "op", None), "__name__", "")
        n, t = _payload(op)
        if n is None:
            continue
        if kind in _SENDING_OPS:
            sent = n if sent is None else sent + n
        elif kind in _RECEIVING_OPS:
            received = n if received is None else received + n
        else:  # an op this torch added since: neither, rather than a wrong guess
            continue
        if first is None:
            first = t
    return sent, received, first


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


class Call:
    """The facts of one call, for the event's arguments and in-flight tracking."""

    __slots__ = ("args", "cpu", "member")

    def __init__(self) -> None:
        self.args: List[Tuple[str, Any]] = []
        self.cpu = False
        # False when this rank is not in the call's group: torch then only
        # warns and returns, and there is no collective to record.
        self.member = True


def describe(name: str, spec: Spec, params: Optional[Tuple[str, ...]], has_async: bool, args: tuple,
             kwargs: dict) -> Call:
    """The event arguments of one call of ``name``, from its arguments.

    ``params``: the function's positional parameter names (None: a builtin
    without a signature, whose arguments are named by position);
    ``has_async``: whether it takes ``async_op``.
    """
    call = Call()
    if params is None:
        params = tuple(str(i) for i in range(len(args)))
    bound: Dict[str, Any] = dict(zip(params, args))
    if kwargs:
        bound.update(kwargs)
    sent, tensor = _payloads(bound, spec.sent, None)
    received, tensor = _payloads(bound, spec.received, tensor)
    if spec.p2p_ops is not None:
        sent, received, tensor = _p2p_payloads(bound.get(spec.p2p_ops))
    if sent is not None:
        call.args.append(("bytes", sent))
        if received is not None:
            call.args.append(("out_bytes", received))
    elif received is not None:
        call.args.append(("bytes", received))
    group = bound.get(spec.group) if spec.group is not None else None
    if tensor is not None:
        call.args.append(("dtype", _dtype_name(tensor.dtype)))
        call.cpu = tensor.device.type == "cpu"
    elif name == "barrier":  # no tensor of the caller's: where it runs is the group's backend
        call.cpu = _backend_runs_on_the_cpu(group)
    if spec.group is not None:
        call.member = not _not_a_member(group)
        size = _group_size(group) if call.member else None
        if size is not None:
            call.args.append(("group_size", size))
    peer = _peer(bound, spec, group)
    if peer is not None:
        call.args.append(("peer", peer))
    if name in _ALWAYS_ASYNC:
        call.args.append(("async_op", 1))
    elif has_async:
        call.args.append(("async_op", int(bool(bound.get("async_op", False)))))
    if spec.p2p_ops is not None and isinstance(bound.get(spec.p2p_ops), list):
        call.args.append(("ops", len(bound[spec.p2p_ops])))
    bucket = getattr(ddp_context, "ddp_bucket", None)
    if bucket is not None:
        call.args.append(("ddp_bucket", bucket))
    return call


def _rank(value: Any) -> Optional[int]:
    """``value`` as a rank: an int, a NumPy integer too; None for anything else."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return None


def _peer(bound: Dict[str, Any], spec: Spec, group: Any) -> Optional[int]:
    """The global rank of the call's src or dst, however it was given."""
    if spec.peer is None:
        return None
    peer = _rank(bound.get(spec.peer))
    if peer is not None or spec.group_peer is None:
        return peer
    group_rank = _rank(bound.get(spec.group_peer))
    if group_rank is None:
        return None
    if group is None:  # the default group: its ranks are the global ones
        return group_rank
    try:
        return int(sys.modules["torch.distributed"].get_global_rank(group, group_rank))
    except Exception:  # not a rank of the group: torch raises on the call itself
        return None


def is_async(name: str, call: Call) -> bool:
    """Whether the call returned before its communication completed."""
    return name in _ALWAYS_ASYNC or ("async_op", 1) in call.args


def _backend_runs_on_the_cpu(group: Any) -> bool:
    """Whether ``group`` (None: the default one) communicates with gloo, on the CPU."""
    try:
        return sys.modules["torch.distributed"].get_backend(group) == "gloo"
    except Exception:  # not initialized, not a member, another torch: not tracked
        return False


def _not_a_member(group: Any) -> bool:
    """Whether ``group`` is what new_group() gives a rank it leaves out
    (torch's own test, where there is one)."""
    if group is None:
        return False
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    not_in_group = getattr(c10d, "_rank_not_in_group", None)
    try:
        return bool(not_in_group(group)) if not_in_group is not None else False
    except Exception:  # another torch: take it for a member, as before
        return False


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


def annotate(args: Sequence[Tuple[str, Any]]) -> None:
    """Attaches ``(key, value)`` arguments to the event open on this thread."""
    for name, value in args:
        if isinstance(value, str):
            _C.event_arg_str(arg_key(name), value)
        else:
            _C.event_arg_int(arg_key(name), int(value))


def annotate_failure(error: BaseException) -> None:
    """Marks the event open on this thread as a call that failed: an
    ``error`` argument naming the exception's type. The event keeps its time
    (the rank spent it), and the trace shows which calls did not complete."""
    try:
        _C.event_arg_str(arg_key("error"), type(error).__name__)
    except Exception:  # never mask the call's own exception
        pass
