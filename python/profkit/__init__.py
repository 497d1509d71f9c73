"""profkit: a low-overhead profiler for PyTorch-like frameworks.

The paddle.profiler API on a C++ engine: scripts written for paddle.profiler
run with ``import profkit as profiler``::

    import profkit as profiler

    with profiler.Profiler(scheduler=(2, 5), on_trace_ready=profiler.export_chrome_tracing("./log")) as prof:
        for batch in loader:
            with profiler.RecordEvent("forward"):
                ...
            prof.step(num_samples=len(batch))
    prof.summary()

The engine is ``libprofkit.so`` behind a stable C ABI (``get_include()``,
``get_library()``), so C/C++ framework hooks and this package record into the
same trace. PyTorch's operators, passes, optimizer steps and data loading are
recorded once ``profkit.integrations.torch.enable()`` is called.
"""

from . import _C
from ._C import RecordEvent
from ._enums import ProfilerState, ProfilerTarget, SortedKeys, SummaryView, TracerEventType
from ._paths import get_cmake_dir, get_include, get_library
from ._warnings import ProfilerWarning
from .dataloader import dataloader_range, wrap_dataloader
from .cross_rank import CrossRankSummary, cross_rank_summary
from .export_callbacks import export_chrome_tracing, export_protobuf
from .merge import MergeError, merge_traces
from .profiler import Profiler
from .result import ProfilerResult, load_profiler_result
from .scheduler import make_scheduler

__version__: str = _C.version()

__all__ = [
    "ProfilerState",
    "ProfilerTarget",
    "SortedKeys",
    "SummaryView",
    "TracerEventType",
    "make_scheduler",
    "export_chrome_tracing",
    "export_protobuf",
    "load_profiler_result",
    "RecordEvent",
    "Profiler",
    "ProfilerResult",
    "ProfilerWarning",
    "dataloader_range",
    "wrap_dataloader",
    "merge_traces",
    "MergeError",
    "cross_rank_summary",
    "CrossRankSummary",
    "get_include",
    "get_library",
    "get_cmake_dir",
    "__version__",
]
