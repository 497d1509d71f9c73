"""Type stubs of profkit._C, the thin binding over the C ABI (capi/include/profkit/profkit.h).

States are pk_state values (CLOSED=0, READY=1, RECORD=2, RECORD_AND_RETURN=3);
event types are pk_event_type values (TracerEventType). Failing calls raise
FileNotFoundError, OSError, ValueError, RuntimeError or MemoryError with the
engine's message.
"""

from types import CodeType, FrameType, TracebackType
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Type, TypeVar, Union

from ._enums import TracerEventType

_F = TypeVar("_F", bound=Callable[..., Any])

# ---- version ----------------------------------------------------------------
def api_version() -> int:
    """(major << 16) | minor of the loaded libprofkit.so."""

def version() -> str:
    """The profkit release of the loaded engine."""

# ---- names and recording ----------------------------------------------------
def intern(name: str) -> int:
    """The stable id of `name`; MemoryError when the engine's name table (4,194,304 names) is full."""
def name_string(id: int) -> Optional[str]: ...
def begin_event(name_id: int, event_type: int) -> None: ...
def begin_event_str(name: str, event_type: int) -> None: ...
def end_event() -> None: ...
def instant_event(name_id: int, event_type: int) -> None: ...
def event_arg_int(key_id: int, value: int) -> None: ...
def event_arg_str(key_id: int, value: str) -> None: ...
def now_ns() -> int:
    """The engine clock (CLOCK_MONOTONIC ns)."""

def data_loading_begin(name_id: int) -> None: ...
def data_loading_end() -> None: ...
def data_loading_depth() -> int: ...
def reader_time_ns() -> int:
    """ns spent in outermost data-loading ranges by every thread since the engine loaded."""

def thread_reader_time_ns() -> int:
    """ns the calling thread spent in its own outermost data-loading ranges so far."""
def set_thread_name(name: str) -> None: ...
def record_memory(device: int, address: int, bytes: int, total_allocated: int, total_reserved: int) -> None: ...
def is_recording() -> bool:
    """True while a recording window is open."""

# ---- state and steps --------------------------------------------------------
def set_state(state: int) -> None: ...
def get_state() -> int: ...
def step(num_samples: int = 0) -> None: ...
def step_begin(step_number: int) -> None: ...
def step_end(num_samples: int = 0) -> None:
    """Ends the open step; RuntimeError when none is open."""

def current_step() -> int: ...

# ---- with_stack's Python call tracer -----------------------------------------
def python_tracer_start(
    own_prefix: str, pass_through: Iterable[CodeType], hidden: Iterable[CodeType] = ()
) -> Tuple[bool, int]:
    """Traces every thread's Python and built-in calls as PythonOp events; (this thread traced, other threads not).
    `hidden`: other code left out with its callees, as profkit's own."""
def python_tracer_pass_through(code: CodeType, hidden: bool = False) -> None:
    """While tracing: profkit code made since python_tracer_start that calls the user's code (callees recorded);
    with hidden=True, code left out with its callees instead."""
def python_tracer_adopt(frame: FrameType) -> None:
    """In a new thread's threading profile hook: traces the thread from `frame`'s call on."""
def python_tracer_stop() -> Tuple[int, bool]:
    """Records this thread's open calls up to now and stops tracing every thread; (threads untraced for lack of
    memory, whether the program replaced the tracer on this thread)."""

# ---- configuration ----------------------------------------------------------
def set_memory_cap(bytes: int) -> None: ...
def get_memory_cap() -> int: ...
def set_rank(rank: int, world_size: int) -> None: ...
def set_metadata(key: str, value: Optional[str]) -> None: ...
def counters() -> Dict[str, int]: ...
def gpu_available() -> Tuple[bool, str]:
    """(available, reason): whether GPU tracing can work here, and why not."""

def set_gpu_tracing(enabled: bool) -> None:
    """RuntimeError with the reason when GPU tracing is unavailable."""

# ---- results ----------------------------------------------------------------
class Column:
    """A read-only column of frozen records (buffer protocol; view it with profkit._records.view)."""

    @property
    def itemsize(self) -> int: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int) -> memoryview: ...

class Result:
    """A collected or loaded trace (owns a pk_result)."""

    def save(self, path: str) -> None: ...
    def export_chrome(self, path: str, label_durations: bool = False, include_flows: bool = True) -> None: ...
    # metric: 0 self CPU time, 1 self device time (pk_stacks_metric).
    def export_stacks(self, path: str, metric: int = 0) -> None: ...
    def export_chrome_placed(
        self,
        path: str,
        *,
        time_base_wall_ns: Optional[int] = None,
        pid: int = -1,
        flow_id_offset: int = 0,
        process_label_prefix: str = "",
        sort_index_offset: int = 0,
        label_durations: bool = False,
        include_flows: bool = True,
    ) -> None: ...
    def info(self) -> Dict[str, Any]: ...
    def threads(self) -> List[Dict[str, Any]]: ...
    def devices(self) -> List[Dict[str, Any]]: ...
    def strings(self) -> List[str]: ...
    def metadata(self) -> Dict[str, str]: ...
    def parent(self, event: int) -> Optional[int]: ...
    def summary_text(
        self,
        sorted_by: int = 0,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: int = 1,
        views: int = 0,
        row_limit: int = 0,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
    ) -> str: ...
    def summary_json(
        self,
        sorted_by: int = 0,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: int = 1,
        views: int = 0,
        row_limit: int = 0,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
    ) -> str: ...
    @property
    def host_events(self) -> Column: ...
    @property
    def event_args(self) -> Column: ...
    @property
    def memory_events(self) -> Column: ...
    @property
    def device_events(self) -> Column: ...
    @property
    def kernel_details(self) -> Column: ...
    @property
    def memory_op_details(self) -> Column: ...

def collect(into: Optional[List[Result]] = None) -> Result:
    """Takes everything recorded since the last collect; also appends it to
    ``into`` (before returning, so that an exception raised as the call
    returns, a Ctrl-C, cannot lose it)."""

def load(path: str) -> Result:
    """Loads a .pktrace file (verified)."""

# ---- user ranges ------------------------------------------------------------
class RecordEvent:
    """A named range of the user's code, recorded on the calling thread (see profkit.RecordEvent)."""

    def __init__(self, name: str, event_type: Union[TracerEventType, int, None] = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def event_type(self) -> TracerEventType: ...
    @property
    def is_open(self) -> bool: ...
    def begin(self) -> None: ...
    def end(self) -> None: ...
    def __enter__(self) -> "RecordEvent": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...
    def __call__(self, function: _F) -> _F: ...
