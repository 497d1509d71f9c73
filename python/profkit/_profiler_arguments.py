"""The Profiler's arguments, checked: targets, on_trace_ready, the options
paddle.profiler has that profkit does not support, whole numbers, and
``step(num_samples)``. A bad value raises TypeError or ValueError naming the
argument; an option that will not be honoured warns (ProfilerWarning).

The functions that warn are called from ``Profiler.__init__`` itself: their
stacklevel names the line that made the Profiler. Stateless; safe from any
thread.
"""

import operator
import warnings
from typing import Any, Iterable, List, Optional, Set, Tuple

from . import _C
from ._enums import ProfilerTarget
from ._warnings import ProfilerWarning
from .export_callbacks import export_chrome_tracing, export_protobuf

# The engine's least memory cap: one record buffer (pk_set_memory_cap refuses
# less; a test holds the two together).
MIN_MEMORY_CAP = 256 * 1024

# The largest whole number the engine takes: its counts and sizes are
# uint64_t (pk_set_memory_cap's bytes). A larger memory_cap passed the
# constructor and failed at start() with pybind11's "incompatible function
# arguments".
MAX_WHOLE_NUMBER = 2**64 - 1

# The largest num_samples: the engine records it as an event argument, a
# signed 64-bit integer, so a count from 2**63 on read back as negative.
MAX_SAMPLES = 2**63 - 1

# paddle.profiler's targets that profkit has no tracer for.
_UNTRACEABLE_TARGETS = frozenset({ProfilerTarget.XPU, ProfilerTarget.CUSTOM_DEVICE})

# warnings.warn's stacklevel for the line that called Profiler(...): this
# module's function, Profiler.__init__, its caller.
_CALLER_OF_INIT = 3


def resolve_targets(targets: Optional[Iterable[ProfilerTarget]]) -> Tuple[Set[ProfilerTarget], Optional[str]]:
    """The devices to trace: None or an empty list means the CPU plus the GPU
    when it can be traced. Also, when the GPU was asked for and cannot be
    traced, why (the Profiler warns once per process); else None."""
    gpu_ok, reason = _C.gpu_available()
    if isinstance(targets, ProfilerTarget):
        targets = [targets]
    if targets is not None and (isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable)):
        raise TypeError(
            "Profiler: targets must be a ProfilerTarget or a list of them (ProfilerTarget.CPU, ProfilerTarget.GPU), "
            f"not {type(targets).__name__}"
        )
    resolved: Set[ProfilerTarget] = set()
    for target in targets or ():
        if not isinstance(target, ProfilerTarget):
            raise TypeError(f"Profiler: targets must be ProfilerTarget values, got {target!r}")
        resolved.add(target)
    if not resolved:
        # paddle.profiler's `if targets:` -- an empty list is the default too.
        return ({ProfilerTarget.CPU, ProfilerTarget.GPU} if gpu_ok else {ProfilerTarget.CPU}), None
    unsupported = sorted((t for t in resolved if t in _UNTRACEABLE_TARGETS), key=lambda t: t.value)
    if unsupported:
        warnings.warn(
            f"profkit: cannot trace {', '.join(t.name for t in unsupported)} (only the CPU and CUDA GPUs); "
            "profiling without it",
            ProfilerWarning,
            stacklevel=_CALLER_OF_INIT,
        )
        resolved.difference_update(unsupported)
    gpu_unavailable = None
    if ProfilerTarget.GPU in resolved and not gpu_ok:
        gpu_unavailable = reason
        resolved.discard(ProfilerTarget.GPU)
    resolved.add(ProfilerTarget.CPU)  # the host is always profiled
    return resolved, gpu_unavailable


def check_on_trace_ready(on_trace_ready: Any) -> None:
    if on_trace_ready is not None and not callable(on_trace_ready):
        raise TypeError(f"Profiler: on_trace_ready must be callable, not {type(on_trace_ready).__name__}")
    if on_trace_ready is export_chrome_tracing or on_trace_ready is export_protobuf:
        # The factory itself, not the callback it makes: it would fail only
        # when the first window ends, after the steps were recorded.
        name = on_trace_ready.__name__
        raise TypeError(
            f"Profiler: on_trace_ready={name} is the function that makes the callback; "
            f"call it with the directory to write to: on_trace_ready=profkit.{name}('./profiler_log')"
        )


def warn_unsupported(emit_nvtx: bool, custom_device_types: Optional[Iterable[str]]) -> List[str]:
    """Warns about each option that is set but not supported; returns
    custom_device_types as a list (kept for ``prof.custom_device_types``)."""
    if emit_nvtx:
        warnings.warn("profkit: emit_nvtx is not supported and is ignored", ProfilerWarning, stacklevel=_CALLER_OF_INIT)
    if isinstance(custom_device_types, str):
        # One device name, not a list of one-letter devices ("npu" -> ['n', 'p', 'u']).
        custom_device_types = [custom_device_types]
    devices = list(custom_device_types or [])
    if devices:
        warnings.warn(
            f"profkit: custom devices {devices} are not supported; profiling CPU and GPU only",
            ProfilerWarning,
            stacklevel=_CALLER_OF_INIT,
        )
    return devices


def check_samples(num_samples: Optional[int]) -> Optional[int]:
    """``step(num_samples)``: None, or an int in [0, 2**63)."""
    if num_samples is None:
        return None
    if isinstance(num_samples, bool):
        raise TypeError("Profiler.step: num_samples must be an int or None, not bool")
    try:
        n = operator.index(num_samples)
    except TypeError:
        raise TypeError(f"Profiler.step: num_samples must be an int or None, not {type(num_samples).__name__}") from None
    if n < 0 or n > MAX_SAMPLES:
        raise ValueError(f"Profiler.step: num_samples must be >= 0 and < 2**63, got {n}")
    return n


def whole_number(name: str, value: Any, *, minimum: int, maximum: int = MAX_WHOLE_NUMBER) -> int:
    """``value`` as an int in [minimum, maximum], or a TypeError/ValueError
    naming the argument. The default maximum is what the engine's uint64_t
    takes, checked here so that a bad value fails where it was given, not
    later at start()."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Profiler: {name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"Profiler: {name} must be >= {minimum}, got {value}")
    if value > maximum:
        limit = "2**64 - 1" if maximum == MAX_WHOLE_NUMBER else str(maximum)
        raise ValueError(f"Profiler: {name} must be <= {limit}, got {value}")
    return value
