"""Summary tables of a recorded run (SPEC §6), computed by the engine.

The engine (``cpp/summary/``) computes every table from a ``profkit._C.Result``
-- just collected or loaded from a file -- so Python, the C ABI and a C++
framework all get the same numbers. This module checks the arguments, asks the
engine for the text or for the rows (as JSON), and wraps the rows in
:class:`SummaryTable`.

``summary_text(result, ...)`` returns the tables laid out like
``paddle.profiler``'s; ``summary_data(result, ...)`` returns the same rows as
data, one :class:`SummaryTable` per view, keyed by the SummaryView name
(``"OverView"``, ``"OperatorView"``, ...), each convertible to a pandas
DataFrame.
"""

from __future__ import annotations

import enum
import json
import math
import operator
import textwrap
from dataclasses import dataclass, fields
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from ._enums import SortedKeys

__all__ = ["SummaryOptions", "SummaryTable", "summary_text", "summary_data", "SORT_KEYS", "VIEWS", "TIME_UNITS"]

# Names in value order: SortedKeys and SummaryView use these values, and so
# does the C ABI (pk_sort_key, pk_summary_view, pk_time_unit).
SORT_KEYS = ("CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal", "GPUAvg", "GPUMax", "GPUMin", "CPUSelf")
VIEWS = (
    "DeviceView",
    "OverView",
    "ModelView",
    "DistributedView",
    "KernelView",
    "OperatorView",
    "MemoryView",
    "MemoryManipulationView",
    "UDFView",
)
TIME_UNITS = ("s", "ms", "us", "ns")
_ROW_LIMIT_MAX = 2**32 - 1  # the C ABI's field; anything larger means "all"


@dataclass(frozen=True)
class SummaryTable:
    """One summary view as data.

    ``columns[0]`` is the row label (a name, an event type, a device); the
    other cells are numbers whose meaning ``kinds`` gives: ``"time"`` in
    ``time_unit``, ``"percent"``, ``"count"``, ``"bytes"``, ``"id"`` (a
    thread id), ``"flops"`` (floating-point operations), ``"text"`` (a
    string: the Operator table's input shapes). A missing value
    (the CPU time of a GPU kernel, a ratio with nothing to divide by) is
    ``None``. In nested tables (``nested``) each row's ``levels`` entry says
    how deep it sits under the rows above it.
    A table with no rows says why in ``empty_reason``.
    """

    view: str
    title: str
    columns: List[str]
    kinds: List[str]
    rows: List[List[Any]]
    levels: List[int]
    nested: bool
    notes: List[str]
    empty_reason: str
    time_unit: str

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"SummaryTable({self.title!r}, {len(self.rows)} rows, columns={self.columns!r})"

    def to_pandas(self):
        """The rows as a pandas DataFrame (missing values as NaN).

        Nested tables get a ``Level`` column after the label. Needs pandas.
        """
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError(
                "SummaryTable.to_pandas() needs pandas, which is not installed: "
                "pip install pandas (or pip install 'profkit[pandas]')"
            ) from error
        rows = [[row[0]] + [math.nan if v is None else v for v in row[1:]] for row in self.rows]
        frame = pd.DataFrame(rows, columns=list(self.columns))
        for column, kind in zip(self.columns[1:], self.kinds[1:]):
            if kind == "text":
                continue  # strings, NaN where missing
            frame[column] = pd.to_numeric(frame[column])
            if kind in ("count", "bytes", "id", "flops") and not frame[column].isna().any():
                frame[column] = frame[column].astype("int64")
        if self.nested:
            frame.insert(1, "Level", pd.Series(self.levels, dtype="int64"))
        return frame


def _choice(value: Any, what: str, names: Iterable[str], enum_name: str) -> int:
    """The index of `value` among `names`: an int, a name, an enum member
    (matched by its name), or another object with a ``.value``. ``enum_name``:
    the enumeration to name when a member of another one is given."""
    names = tuple(names)
    valid = ", ".join(f"{name} ({index})" for index, name in enumerate(names))
    if isinstance(value, enum.Enum):
        # An enum member counts by its name: a member of another enum
        # (summary(sorted_by=SummaryView.OperatorView), views=SortedKeys.CPUTotal,
        # or TracerEventType, an IntEnum) would otherwise pass by its value
        # and silently pick an unrelated table or order. Names also accept
        # paddle.profiler's own SortedKeys / SummaryView members.
        if value.name in names:
            return names.index(value.name)
        raise ValueError(
            f"{what} must be one of {valid}; got {type(value).__name__}.{value.name}, a member of another "
            f"enumeration (use {enum_name} members)"
        )
    raw = getattr(value, "value", value)
    if isinstance(raw, str):
        if raw in names:
            return names.index(raw)
    elif not isinstance(raw, bool):
        try:
            index = operator.index(raw)
        except TypeError:
            pass
        else:
            if 0 <= index < len(names):
                return index
    raise ValueError(f"{what} must be one of {valid}; got {value!r}")


def _views_mask(views: Any) -> int:
    if views is None:
        return 0  # every view
    if isinstance(views, Iterable) and not isinstance(views, (str, bytes, enum.Enum)):
        chosen = list(views)  # a list, a set, a generator...
        if not chosen:
            raise ValueError("views is empty: pass None for every table, or one or more SummaryView values")
    else:
        chosen = [views]
    mask = 0
    for view in chosen:
        mask |= 1 << _choice(view, "views", VIEWS, "SummaryView")
    return mask


def _row_limit(row_limit: Any) -> int:
    if row_limit is None:
        return 0
    if isinstance(row_limit, bool):
        raise ValueError(f"row_limit must be a positive int or None; got {row_limit!r}")
    try:
        limit = operator.index(row_limit)
    except TypeError:
        raise ValueError(f"row_limit must be a positive int or None; got {row_limit!r}") from None
    if limit <= 0:
        raise ValueError(f"row_limit must be a positive int or None; got {row_limit!r}")
    return 0 if limit > _ROW_LIMIT_MAX else limit


_STACK_FRAMES_MAX = 255  # a trace nests at most 256 levels


def _stack_n(group_by_stack_n: Any) -> int:
    message = f"group_by_stack_n must be an int from 0 (off) to {_STACK_FRAMES_MAX}; got {group_by_stack_n!r}"
    if isinstance(group_by_stack_n, bool):
        raise ValueError(message)
    try:
        n = operator.index(group_by_stack_n)
    except TypeError:
        raise ValueError(message) from None
    if not 0 <= n <= _STACK_FRAMES_MAX:
        raise ValueError(message)
    return n


def check_time_unit(time_unit: Any) -> int:
    """The index of `time_unit` among TIME_UNITS, or a ValueError naming them."""
    if isinstance(time_unit, str) and time_unit in TIME_UNITS:
        return TIME_UNITS.index(time_unit)
    valid = ", ".join(repr(u) for u in TIME_UNITS)
    raise ValueError(f"time_unit must be one of {valid}; got {time_unit!r}")


# What each option means: SummaryOptions' docstring, and appended to each
# entry point's (with_options_doc), so that help() shows it everywhere.
OPTIONS_DOC = """\
    sorted_by: a SortedKeys member, its value (0-8) or its name; orders the
        rows of the Operator, Kernel, Memory Manipulation and UserDefined
        tables (Min keys ascending, the others descending; CPUSelf by the
        Operator table's self CPU time, the others' CPU total).
    op_detail: nest inner events and GPU work under each operator, and
        under each device of the Memory table the events its memory was
        allocated and freed in.
    thread_sep: one group of Operator and UserDefined rows per thread.
    time_unit: "s", "ms", "us" or "ns".
    views: None for every table, or one SummaryView (member, value or name)
        or a list of them.
    row_limit: at most this many top-level rows per table (per thread with
        thread_sep; in the Memory table, event rows per device); None for all.
    group_by_input_shape: one Operator row per operator and input shapes,
        with an "Input Shapes" column, as torch.profiler's
        key_averages(group_by_input_shape=True); the shapes are recorded
        with record_shapes=True.
    group_by_stack_n: N > 0 for one Operator row per operator and source
        location, the innermost N Python function frames around its calls
        (built-in calls left out), in a "Source Location" column, as
        torch.profiler's key_averages(group_by_stack_n=N); the frames are
        recorded with with_stack=True. 0 (default): off.
"""
_RAISES_DOC = """
    Raises:
        ValueError: an option out of range (the message names the valid values).
"""


@dataclass(frozen=True)
class SummaryOptions:
    __doc__ = (
        """The summary tables' options, checked when made: their one home.

    Every entry point (``Profiler.summary``, ``ProfilerResult.summary`` /
    ``summary_data``, ``profkit summary``, the functions below) makes one of
    these, so the defaults and checks here are the only ones. Adding an
    option: a field here and its check in ``_check``; the parameter in the
    entry points' signatures (written out for help() and IDEs;
    test_summary_options holds them to these fields and defaults); the CLI
    flag; the engine's side.

"""
        + OPTIONS_DOC
        + _RAISES_DOC
    )

    sorted_by: Any = SortedKeys.CPUTotal
    op_detail: bool = True
    thread_sep: bool = False
    time_unit: str = "ms"
    views: Any = None
    row_limit: Optional[int] = None
    group_by_input_shape: bool = False
    group_by_stack_n: int = 0

    def __post_init__(self) -> None:
        # Checked up front, once: the engine's arguments are kept, so a bad
        # value fails where the options are given, not where they are used.
        object.__setattr__(self, "_engine", self._check())

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> "SummaryOptions":
        """The options from an entry point's ``locals()``: its parameters of
        the same names (other names, such as ``self``, are left out)."""
        return cls(**{f.name: arguments[f.name] for f in fields(cls)})

    def _check(self) -> Dict[str, Any]:
        return {
            "sorted_by": _choice(self.sorted_by, "sorted_by", SORT_KEYS, "SortedKeys"),
            "op_detail": bool(self.op_detail),
            "thread_sep": bool(self.thread_sep),
            "time_unit": check_time_unit(self.time_unit),
            "views": _views_mask(self.views),
            "row_limit": _row_limit(self.row_limit),
            "group_by_input_shape": bool(self.group_by_input_shape),
            "group_by_stack_n": _stack_n(self.group_by_stack_n),
        }

    def engine_arguments(self) -> Dict[str, Any]:
        """The keyword arguments of ``_C.Result.summary_text`` / ``summary_json``."""
        return dict(self._engine)  # type: ignore[attr-defined]


def with_options_doc(function: Callable[..., Any]) -> Callable[..., Any]:
    """Appends what the options mean to an entry point's docstring."""
    doc = (function.__doc__ or "").rstrip()
    function.__doc__ = doc + "\n\n    Args:\n" + textwrap.indent(OPTIONS_DOC, "    ") + _RAISES_DOC
    return function


def _options(options: Optional[SummaryOptions], arguments: Dict[str, Any]) -> SummaryOptions:
    if options is None:
        return SummaryOptions(**arguments)
    if arguments:
        raise TypeError(f"give the summary options as a SummaryOptions or as keywords, not both ({sorted(arguments)})")
    return options


def summary_text(result, options: Optional[SummaryOptions] = None, **arguments: Any) -> str:
    """The summary tables of `result` (a ``profkit._C.Result``) as text.

    ``options``, or the keywords to make them (see :class:`SummaryOptions`).
    Raises ValueError naming the valid values when an argument is out of range.
    """
    return result.summary_text(**_options(options, arguments).engine_arguments())


def summary_data(result, options: Optional[SummaryOptions] = None, **arguments: Any) -> Dict[str, SummaryTable]:
    """The rows of the summary tables as data: ``{view name: SummaryTable}``
    in view order, with the same arguments (and errors) as :func:`summary_text`.
    Times are in the options' time unit. When the recording lost events
    (memory cap, nesting limit, GPU buffers), every table's notes start with
    a ``"Warning: ..."`` line saying so, as the text does."""
    document = json.loads(result.summary_json(**_options(options, arguments).engine_arguments()))
    losses = [f"Warning: {w}" for w in document.get("warnings", [])]
    tables: Dict[str, SummaryTable] = {}
    for t in document["tables"]:
        tables[t["view"]] = SummaryTable(
            view=t["view"],
            title=t["title"],
            columns=t["columns"],
            kinds=t["kinds"],
            rows=t["rows"],
            levels=t["levels"],
            nested=t["nested"],
            notes=losses + t["notes"],
            empty_reason=t["empty_reason"],
            time_unit=document["time_unit"],
        )
    return tables
