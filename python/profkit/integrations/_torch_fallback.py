"""The pure-Python operator recorder, for when the native hook cannot be built.

A ``TorchDispatchMode`` pushed while a Profiler records turns every aten
operator it sees into an Operator event named like RecordFunction's
(``"aten::addmm"``), with the same ``input_shapes`` argument when asked.

What differs from the native hook (``_torch_hook.cpp``):

- it is slower: every operator goes through Python (about 5 us each on the
  project's machine, against about 0.2 us natively), so profiled steps slow
  down;
- it sees operators below autograd: composite operators appear as the
  operators they decompose into (``aten::linear`` as ``aten::t`` +
  ``aten::addmm``), operators are not nested inside each other, and the
  autograd engine's ranges for backward nodes do not appear -- only the
  operators they run; record_function ranges do not appear either;
- dispatch modes are per thread: it records the operators of the thread that
  drives the Profiler (and of autograd's threads working for it), not those
  of other threads;
- it records no memory events: ``profile_memory`` needs the native hook's
  allocation reporter (the integration warns once when a window asks for it).

Thread-safety: window() is called by the Profiler's thread with the GIL held.
"""

from types import ModuleType
from typing import Any, Dict, Iterable, List, Optional

from .. import _C
from .._enums import TracerEventType

__all__ = ["OperatorRecorder", "format_shapes"]

_OPERATOR = int(TracerEventType.Operator)


def _sizes(value: Any, tensor_type: type) -> str:
    if isinstance(value, tensor_type):
        return "[" + ", ".join(str(d) for d in value.shape) + "]"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, tensor_type) for v in value):
        return "[" + ", ".join(_sizes(v, tensor_type) for v in value) + "]"
    return "[]"


def format_shapes(values: Iterable[Any], tensor_type: type) -> str:
    """``"[[2, 3], [3], []]"``: torch.profiler's Input Dims layout, as the native hook writes it."""
    return "[" + ", ".join(_sizes(v, tensor_type) for v in values) + "]"


def _name_id(name: str) -> int:
    """The operator's event name ("aten::add", as RecordFunction names it); 0
    for the profiler's own operators, which torch never reports to RecordFunction."""
    return 0 if name.startswith("profiler::") else _C.intern(name)


class OperatorRecorder:
    """Records aten operators through a TorchDispatchMode while a window is open."""

    def __init__(self, torch: ModuleType) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

        tensor_type = torch.Tensor
        names: Dict[Any, int] = {}
        shapes_key = _C.intern("input_shapes")
        begin, end, arg = _C.begin_event, _C.end_event, _C.event_arg_str
        recorder = self

        class ProfkitOperatorMode(TorchDispatchMode):
            @classmethod
            def is_infra_mode(cls) -> bool:
                # An observer, like torch's own infrastructure modes: Dynamo
                # skips compiling frames while a non-infra mode is active,
                # which would leave torch.compile'd frames uncompiled for good.
                return True

            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                name_id = names.get(func)
                if name_id is None:
                    name_id = names[func] = _name_id(func._schema.name)
                if not name_id:
                    return func(*args, **kwargs)
                begin(name_id, _OPERATOR)
                try:
                    if recorder.record_shapes:
                        arg(shapes_key, format_shapes(list(args) + list(kwargs.values()), tensor_type))
                    return func(*args, **kwargs)
                finally:
                    end()

        self._mode_class = ProfkitOperatorMode
        self._current_mode = _get_current_dispatch_mode
        self._pushed: List[Any] = []
        self.record_shapes = False

    @property
    def active(self) -> bool:
        """Whether the mode is pushed now (only inside windows)."""
        return bool(self._pushed)

    def window(self, recording: bool, record_shapes: Optional[bool] = None) -> None:
        """Pushes the mode when a window opens and pops it when it closes."""
        if record_shapes is not None:
            self.record_shapes = record_shapes
        if recording and not self._pushed:
            mode = self._mode_class()
            mode.__enter__()
            self._pushed.append(mode)
        elif not recording and self._pushed:
            mode = self._pushed[-1]
            if self._current_mode() is not mode:
                # Another mode was entered inside the window and is still on
                # top; popping would remove it instead of ours. Ours stays and
                # records only while the engine records.
                return
            self._pushed.pop()
            mode.__exit__(None, None, None)
