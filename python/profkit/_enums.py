"""The enumerations of the paddle.profiler API, with the engine's values.

The values match the C ABI (``pk_state``, ``pk_event_type``) and the summary
module's integer codes, so they pass to the engine as ``int(member.value)``.
"""

from enum import Enum, IntEnum

__all__ = ["ProfilerState", "ProfilerTarget", "SortedKeys", "SummaryView", "TracerEventType"]


class ProfilerState(Enum):
    """What the profiler does during a step; a scheduler returns one per step.

    - ``CLOSED``: not profiling.
    - ``READY``: tracers armed (GPU tracing warms up), nothing kept.
    - ``RECORD``: recording.
    - ``RECORD_AND_RETURN``: recording; at the end of this step the window is
      collected and handed to ``on_trace_ready``.
    """

    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3

    @property
    def is_recording(self) -> bool:
        """True for RECORD and RECORD_AND_RETURN."""
        return self.value >= 2


class ProfilerTarget(Enum):
    """Devices a Profiler traces: the CPU always, the GPU where CUPTI works.

    XPU and CUSTOM_DEVICE are paddle.profiler's, so that scripts naming them
    run; profkit cannot trace them, and a Profiler asked to warns and leaves
    them out.
    """

    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


class SortedKeys(Enum):
    """Order of the rows of the summary tables (``Min`` keys sort ascending)."""

    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7
    #: Self CPU time (profkit's own, not paddle.profiler's): the Operator
    #: table's "Self CPU Total", time in an operator outside the events nested
    #: in it, as torch.profiler's self_cpu_time_total; the other tables order
    #: by CPU total under it.
    CPUSelf = 8


class SummaryView(Enum):
    """The tables ``summary(views=...)`` can print."""

    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8


class TracerEventType(IntEnum):
    """What an event marks (the engine's ``pk_event_type``; the Chrome ``cat``).

    An ``IntEnum``, so plain ints with the same values are accepted wherever
    a TracerEventType is.
    """

    Operator = 0
    Dataloader = 1
    ProfileStep = 2
    CudaRuntime = 3
    Kernel = 4
    Memcpy = 5
    Memset = 6
    UserDefined = 7
    OperatorInner = 8
    Forward = 9
    Backward = 10
    Optimization = 11
    Communication = 12
    PythonOp = 13
    PythonUserDefined = 14
