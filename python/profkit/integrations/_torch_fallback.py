"""The pure-Python operator recorder, for when the native hook cannot be built.

A ``TorchDispatchMode`` pushed while a Profiler records turns every aten
operator it sees into an Operator event named like RecordFunction's
(``"aten::addmm"``), with the same ``input_shapes`` argument when asked,
and with ``with_flops`` a ``flops`` argument on the operators that
``torch.utils.flop_counter`` has a formula for.

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
  allocation reporter (the integration warns once when a window asks for it);
- its FLOPs are torch.utils.flop_counter's (FlopCounterMode's): matrix
  products, convolutions (as ``aten::convolution``, what conv2d decomposes
  into) and their backward passes, attention; not ``mul`` or ``add``, which
  the native hook counts as torch.profiler does;
- a pushed dispatch mode changes a little of what torch does: backward
  accumulates a gradient reaching a tensor from several uses out of place
  (``aten::add``, where torch alone runs ``aten::add_``), and torch's
  shallow copies call ``aten::detach`` through the mode (an autograd op
  saving its output, ``tensor.data``); those detaches are not operator calls
  of the program and are left out.

The mode sits at the bottom of the thread's user modes, not on top, so that
users' own ``with SomeMode():`` blocks, which pop whatever is on top, never
pop it and it never pops theirs, however windows and their blocks interleave
(see _ModeStack).

Thread-safety: window() is called with the GIL held, normally by the thread
that drives the Profiler. Torch's mode stack is per thread: a window closed
on another thread than the one it opened on leaves the mode on the opening
thread's stack, inert, until a window opens or closes there again.
"""

import importlib
import threading
from types import FunctionType, ModuleType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .. import _C
from .._enums import TracerEventType
from .._python_stacks import runs_for_profkit
from .._warnings import warn_at_caller

__all__ = ["OperatorRecorder", "format_shapes", "schema_inputs"]

_OPERATOR = int(TracerEventType.Operator)


def _sizes(value: Any, tensor_type: type) -> str:
    if isinstance(value, tensor_type):
        # A nested tensor has no sizes (reading them raises), and a tensor
        # subclass's may fail: "[]", as torch.profiler records them, never an
        # error in the user's operator call.
        if value.is_nested:
            return "[]"
        try:
            return "[" + ", ".join(str(d) for d in value.shape) + "]"
        except Exception:
            return "[]"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, tensor_type) for v in value):
        return "[" + ", ".join(_sizes(v, tensor_type) for v in value) + "]"
    return "[]"


def format_shapes(values: Iterable[Any], tensor_type: type) -> str:
    """``"[[2, 3], [3], []]"``: torch.profiler's Input Dims layout, as the native hook writes it."""
    return "[" + ", ".join(_sizes(v, tensor_type) for v in values) + "]"


def schema_inputs(arguments: Sequence[Tuple[str, bool]], args: Sequence[Any], kwargs: Mapping[str, Any]) -> List[Any]:
    """Every input of the operator's schema in order, None for one left at its default.

    ``arguments`` is the schema's (name, kwarg_only) pairs. __torch_dispatch__
    is passed only the arguments that differ from their defaults, while
    RecordFunction's inputs (torch.profiler's and the native hook's Input
    Dims) hold all of them: ``aten::add.Tensor`` is ``[[3], [3], []]`` with
    alpha defaulted. Defaults are never tensors, so None shows as ``[]`` as
    they do.
    """
    values = []
    for index, (name, kwarg_only) in enumerate(arguments):
        if name in kwargs:
            values.append(kwargs[name])
        elif not kwarg_only and index < len(args):
            values.append(args[index])
        else:
            values.append(None)
    return values


def _name_id(name: str) -> int:
    """The operator's event name ("aten::add", as RecordFunction names it); 0
    (not recorded) for the profiler's own operators, which torch never
    reports to RecordFunction, and when the engine's name table is full: the
    user's operator runs all the same."""
    if name.startswith("profiler::"):
        return 0
    try:
        return _C.intern(name)
    except MemoryError:
        return 0


class _ModeStack:
    """The calling thread's stack of TorchDispatchModes, edited below its top.

    ``with mode:`` pushes on top, and its exit pops whatever is on top: a mode
    of ours pushed when a window opens and popped when it closes would pop a
    user's mode entered in between, and a user's block that began before the
    window and ends inside it would pop ours and leave its own mode behind.
    So ours goes to the bottom of the user modes, where blocks that pop only
    as many modes as they pushed never reach it, and is taken out from under
    them when the window closes. Torch's infra modes (those with a
    ``_mode_key``: FakeTensorMode, FunctionalTensorMode...) live in slots of
    their own below every user mode and are left alone.

    The pushes and pops are torch's raw ones, not ``__enter__``/``__exit__``:
    those also save and restore module flags in LIFO order, which a mode
    taken from the middle would leave wrong for the modes above it. Ours, an
    infra observer, needs none of those flags set.
    """

    def __init__(self) -> None:
        from torch.utils import _python_dispatch as dispatch

        self._modes = dispatch._get_current_dispatch_mode_stack
        self._push = dispatch._push_mode
        self._pop = dispatch._pop_mode

    def holds(self, mode: Any) -> bool:
        return any(m is mode for m in self._modes())

    def insert_at_bottom(self, mode: Any) -> None:
        self._edit(lambda modes: [mode] + modes)

    def remove(self, mode: Any) -> None:
        self._edit(lambda modes: [m for m in modes if m is not mode])

    def _edit(self, change: Callable[[List[Any]], List[Any]]) -> None:
        """Pops the user modes, then pushes back what ``change`` makes of them (bottom first)."""
        user_modes: List[Any] = []
        try:
            above = self._modes()
            while above and getattr(above[-1], "_mode_key", None) is None:
                user_modes.insert(0, self._pop())
                above.pop()
            user_modes = change(user_modes)
        finally:
            for mode in user_modes:
                self._push(mode)


# The wrapper code of our __torch_dispatch__, copied once per process: a copy
# per recorder (one per enable()) was kept for good by runs_for_profkit, a
# leak of about 450 bytes an enable()/disable() cycle.
_dispatch_wrapper_code: Dict[Any, Any] = {}  # torch's wrapper code -> our copy


def _hide_dispatch_plumbing(mode_class: type) -> None:
    """with_stack: leaves out the Python calls torch makes only because the mode is pushed.

    For every operator, torch's dispatcher asks find_torch_dispatch_rule
    whether the mode's class has a rule for it, then calls the mode's
    __torch_dispatch__ through the wrapper that keeps Dynamo out of it
    (torch._compile._disable_dynamo's ``inner``, then eval_frame's ``_fn``).
    Recorded, they were the innermost frames of every operator (its Source
    Location ``eval_frame.py(...): DisableContext.__call__.<locals>._fn``)
    where the native hook, which needs none of them, has the user's code.
    Left out, each with all it calls (our __torch_dispatch__ is left out as
    profkit's own anyway), the operators sit right under the user's built-in
    call. The wrapper's code object is that of every function torch wraps
    the same way (Optimizer.zero_grad, other modes' __torch_dispatch__),
    which stay recorded: ours gets a copy of its own. find_torch_dispatch_rule
    has one function for every mode: the dispatcher's asking it for another
    mode pushed with ours (a user's, torch.compile's) is left out too.
    """
    entry = mode_class.__dict__.get("__torch_dispatch__")
    if isinstance(entry, FunctionType) and getattr(entry, "__wrapped__", None) is not None:
        copy = _dispatch_wrapper_code.get(entry.__code__)
        if copy is None:
            copy = _dispatch_wrapper_code[entry.__code__] = entry.__code__.replace()
        entry.__code__ = copy
        runs_for_profkit(entry)
    try:
        find_rule = importlib.import_module("torch._library.simple_registry").find_torch_dispatch_rule
    except (ImportError, AttributeError):  # an older torch: its dispatcher asks no rule
        return
    if isinstance(find_rule, FunctionType):
        runs_for_profkit(find_rule)


def _flop_formulas() -> Dict[Any, Callable[..., int]]:
    """torch.utils.flop_counter's formulas by operator packet ({} where this
    torch has none): each takes an operator's arguments and ``out_val``."""
    try:
        from torch.utils.flop_counter import flop_registry
    except ImportError:
        return {}
    return dict(flop_registry)


class OperatorRecorder:
    """Records aten operators through a TorchDispatchMode while a window is open."""

    def __init__(self, torch: ModuleType) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        # torch wraps a mode's __torch_dispatch__ so that Dynamo skips it
        # (torch._compile._disable_dynamo), and that wrapper imports
        # torch._dynamo at its first call: about 2 s, in the first recorded
        # step. Paid here, in enable(), instead.
        importlib.import_module("torch._dynamo")

        tensor_type = torch.Tensor
        # torch's shallow copies (an autograd op saving its output for
        # backward, ``tensor.data``) call aten::detach through the top
        # dispatch mode whenever one is pushed -- ours -- straight from C++,
        # not through the dispatcher: operators that never happen without the
        # mode (torch.profiler and the native hook see none), one per saved
        # output in every forward. Those calls come without the dispatcher's
        # exclusion of the keys above Python (PythonTLSSnapshot among them),
        # which every operator dispatched to the mode carries.
        detach = torch.ops.aten.detach.default
        dispatch_keys = getattr(torch._C, "DispatchKey", None)
        snapshot_key = getattr(dispatch_keys, "PythonTLSSnapshot", None)
        key_excluded = getattr(torch._C, "_dispatch_tls_is_dispatch_key_excluded", None)
        if snapshot_key is None or key_excluded is None:  # an older torch: record them all

            def from_dispatcher() -> bool:
                return True

        else:

            def from_dispatcher() -> bool:
                return bool(key_excluded(snapshot_key))

        names: Dict[Any, int] = {}
        schemas: Dict[Any, Tuple[Tuple[str, bool], ...]] = {}
        shapes_key = _C.intern("input_shapes")
        flops_key = _C.intern("flops")
        begin, end, arg, arg_int = _C.begin_event, _C.end_event, _C.event_arg_str, _C.event_arg_int
        formulas = _flop_formulas()
        recorder = self

        def call_counting_flops(func: Any, args: Any, kwargs: Any) -> Any:
            formula = formulas.get(func._overloadpacket)
            out = func(*args, **kwargs)
            if formula is not None:
                try:
                    flops = int(formula(*args, **kwargs, out_val=out))
                except Exception:  # a formula that does not fit these arguments: no count, the call stands
                    return out
                arg_int(flops_key, flops)
            return out

        class ProfkitOperatorMode(TorchDispatchMode):
            #: False once its window closed: left on its thread's stack by a
            #: window that closed on another thread, it passes operators through.
            live = True
            thread_name = ""

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
                if not name_id or not self.live or (func is detach and not from_dispatcher()):
                    return func(*args, **kwargs)
                begin(name_id, _OPERATOR)
                try:
                    if recorder.record_shapes:
                        schema = schemas.get(func)
                        if schema is None:
                            schema = schemas[func] = tuple((a.name, a.kwarg_only) for a in func._schema.arguments)
                        arg(shapes_key, format_shapes(schema_inputs(schema, args, kwargs), tensor_type))
                    if recorder.with_flops:
                        return call_counting_flops(func, args, kwargs)
                    return func(*args, **kwargs)
                finally:
                    end()

        _hide_dispatch_plumbing(ProfkitOperatorMode)
        self._mode_class = ProfkitOperatorMode
        self._stack = _ModeStack()
        self._modes: Dict[int, Any] = {}  # thread ident -> our mode on that thread's stack
        self._live: Any = None  # the mode recording now, inside a window
        self.record_shapes = False
        self.with_flops = False

    @property
    def active(self) -> bool:
        """Whether a mode records now (only inside windows)."""
        return self._live is not None

    def window(self, recording: bool, record_shapes: Optional[bool] = None, with_flops: Optional[bool] = None) -> None:
        """Puts the mode on this thread's stack when a window opens and takes
        it off when it closes."""
        if record_shapes is not None:
            self.record_shapes = record_shapes
        if with_flops is not None:
            self.with_flops = with_flops
        if recording:
            if self._live is None:
                self._live = self._mode_of_this_thread()
                self._live.live = True
            return
        live, self._live = self._live, None
        if live is not None:
            live.live = False
        mine = self._modes.pop(threading.get_ident(), None)
        if mine is not None:
            self._stack.remove(mine)
        if live is not None and live is not mine:
            warn_at_caller(
                f"profkit: a recording window opened on thread {live.thread_name!r} closed on thread "
                f"{threading.current_thread().name!r}; torch lets only {live.thread_name!r} change its "
                "dispatch mode stack, so the Python operator recorder's mode stays there, recording nothing, "
                "until a window opens or closes on that thread again. Close windows on the thread that "
                "opened them."
            )

    def _mode_of_this_thread(self) -> Any:
        """Ours on this thread's stack: the one left there inert by a window
        closed elsewhere, or a new one at the bottom of the user modes."""
        thread = threading.get_ident()
        mode = self._modes.get(thread)
        if mode is None or not self._stack.holds(mode):
            mode = self._mode_class()
            mode.thread_name = threading.current_thread().name
            self._stack.insert_at_bottom(mode)
            self._modes[thread] = mode
        return mode
