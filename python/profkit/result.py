"""ProfilerResult: a collected or loaded trace, for analysis in Python.

``Profiler.profiler_result`` holds the latest window; ``load_profiler_result``
reads a ``.pktrace`` file, or a ``.trace.json`` that profkit wrote, back. Both
give the same type, with:

- ``events``: host events as a NumPy structured array (names decoded, thread,
  parent), ``device_events``, ``event_args``, ``memory_events``;
- ``to_pandas()`` (pandas installed) and ``_repr_html_`` for notebooks;
- ``info`` (run facts: host, pid, rank, span, dropped counts), ``metadata``,
  ``threads``, ``devices``, ``steps``;
- ``save(path)``, ``export_chrome_tracing(path)``, ``export_stacks(path)``
  (folded stacks for flame graphs), ``summary()``.

Thread-safety: a ProfilerResult is read-only; its arrays are computed once
(on first use) and may be read from several threads.
"""

import html
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from . import _C, _gzip_files, _records, _summary
from ._enums import SortedKeys, SummaryView, TracerEventType

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["ProfilerResult", "load_profiler_result", "EVENT_DTYPE", "DEVICE_EVENT_DTYPE", "EVENT_ARG_DTYPE"]

PathLike = Union[str, "os.PathLike[str]"]

#: The ``info`` counts of what a recording did not keep, in the order they are reported.
RECORDING_LOSS_KEYS = (
    "dropped_events",
    "unmatched_ends",
    "overflowed_events",
    "unfinished_events",
    "lost_event_args",
    "dropped_device_records",
)

#: Host events, decoded: one row per event, thread by thread, by start time.
EVENT_DTYPE = np.dtype(
    [
        ("name", object),  # str
        ("type", "u1"),  # TracerEventType value
        ("thread", "<u4"),  # index into .threads
        ("tid", "<u8"),  # OS thread id
        ("start_ns", "<u8"),  # engine clock (wall clock = + info["clock_offset_ns"])
        ("end_ns", "<u8"),
        ("duration_ns", "<u8"),
        ("depth", "u1"),  # nesting depth on its thread, 0 = outermost
        ("flags", "<u2"),  # 1 = instant event
        ("parent", "<i8"),  # index of the enclosing event, -1 for none
    ]
)

#: GPU activity, decoded.
DEVICE_EVENT_DTYPE = np.dtype(
    [
        ("name", object),
        ("type", "u1"),  # Kernel, Memcpy or Memset
        ("device", "<u2"),
        ("stream", "<u4"),
        ("context", "<u4"),
        ("correlation_id", "<u4"),
        ("start_ns", "<u8"),
        ("end_ns", "<u8"),
        ("duration_ns", "<u8"),
        ("launch_event", "<i8"),  # host event index of the launching call, -1 for none
        ("flags", "u1"),
    ]
)

#: Event arguments (num_samples of a step, input shapes...), decoded.
EVENT_ARG_DTYPE = np.dtype([("event", "<i8"), ("key", object), ("value", object)])

_TYPE_NAMES = [t.name for t in TracerEventType]

#: export_stacks' metrics, as torch.profiler names them -> pk_stacks_metric
#: (self_cuda_time_total is torch's older name of self_device_time_total).
STACKS_METRICS = {"self_cpu_time_total": 0, "self_device_time_total": 1, "self_cuda_time_total": 1}


# Up to this many nesting levels, _parents makes one pass per level.
_LEVELS_PER_PASS = 8


def _parents(depth: np.ndarray, thread_first: np.ndarray) -> np.ndarray:
    """Index of each event's parent (-1 for none), as the C ABI's pk_result_parent.

    The parent is the nearest earlier event of the same thread one or more
    levels up (events are sorted by start, enclosing events first).
    """
    n = len(depth)
    parent = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parent
    # A vectorized pass per level is fastest for shallow nesting, but it is
    # O(n * levels): seconds per million events at the 256 levels a deep call
    # stack reaches. Past a few levels, and as long as depth rises by at most
    # one from an event to the next (as the builder lays events out and the
    # loader checks), the nearest earlier event of a smaller depth is the last
    # earlier event one level up: one sort by (depth, index) and one binary
    # search per event, O(n log n) however deep the nesting.
    levels = int(np.count_nonzero(np.bincount(depth)))
    if levels <= _LEVELS_PER_PASS or np.any(np.diff(depth.astype(np.int16)) > 1):
        return _parents_by_level(depth, thread_first, parent)
    keys = depth.astype(np.int64)  # becomes depth * n + index, sorted
    keys *= n
    keys += np.arange(n, dtype=np.int64)
    keys.sort()
    child = np.flatnonzero(depth)
    level_start = depth[child].astype(np.int64)  # becomes (depth - 1) * n: where the level above starts
    level_start -= 1
    level_start *= n
    pos = np.searchsorted(keys, level_start + child)
    pos -= 1
    found_key = keys[np.maximum(pos, 0)]
    ok = (pos >= 0) & (found_key >= level_start)
    found = found_key % n
    ok &= found >= thread_first[child]
    parent[child] = np.where(ok, found, -1)
    return parent


def _parents_by_level(depth: np.ndarray, thread_first: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """_parents by one vectorized pass per depth level (any depths)."""
    index = np.arange(len(depth), dtype=np.int64)
    for d in np.unique(depth):
        if d == 0:
            continue
        children = index[depth == d]
        candidates = index[depth < d]
        if len(candidates) == 0:
            continue
        pos = np.searchsorted(candidates, children) - 1
        found = candidates[np.maximum(pos, 0)]
        ok = (pos >= 0) & (found >= thread_first[children])
        parent[children] = np.where(ok, found, -1)
    return parent


def _format_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3f} us"
    return f"{ns:.0f} ns"


class SummaryText(str):
    """The summary tables as text (a ``str``). IPython and Jupyter show it as
    the tables themselves: a plain ``str`` as a cell's value is shown as its
    repr, the tables squeezed onto one line with ``\\n`` escapes."""

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class ProfilerResult:
    """One recording window's trace (collected, or loaded from a ``.pktrace`` or profkit ``.trace.json`` file)."""

    def __init__(self, result: "_C.Result", path: Optional[str] = None) -> None:
        self._result = result
        #: The file it was loaded from, or None.
        self.path = path
        self._info: Optional[Dict[str, Any]] = None
        self._strings: Optional[List[str]] = None
        self._threads: Optional[List[Dict[str, Any]]] = None
        self._events: Optional[np.ndarray] = None
        self._device_events: Optional[np.ndarray] = None
        self._event_args: Optional[np.ndarray] = None

    # ---- the engine's view ----------------------------------------------------
    @property
    def raw(self) -> "_C.Result":
        """The engine's result object (``profkit._C.Result``)."""
        return self._result

    @property
    def info(self) -> Dict[str, Any]:
        """Run facts: profkit_version, hostname, pid, rank, world_size, span_index,
        start_ns / end_ns, clock_offset_ns, counts (host, device, threads), the
        dropped / unmatched / overflowed / unfinished event counts, first_step and
        step_count, CPU times."""
        if self._info is None:
            self._info = self._result.info()
        return dict(self._info)

    @property
    def metadata(self) -> Dict[str, str]:
        """Free-form run metadata (``_C.set_metadata``), e.g. ``{"model": "resnet50"}``."""
        return self._result.metadata()

    @property
    def threads(self) -> List[Dict[str, Any]]:
        """One dict per thread: tid, name, first_event, event_count."""
        if self._threads is None:
            self._threads = self._result.threads()
        return [dict(t) for t in self._threads]

    @property
    def devices(self) -> List[Dict[str, Any]]:
        """The GPUs that appear in the trace, with their properties."""
        return self._result.devices()

    @property
    def strings(self) -> List[str]:
        """The string table that event names and string arguments index."""
        if self._strings is None:
            self._strings = self._result.strings()
        return self._strings

    @property
    def start_ns(self) -> int:
        """Start of the recorded span (engine clock, ns)."""
        return int(self.info["start_ns"])

    @property
    def end_ns(self) -> int:
        """End of the recorded span (engine clock, ns)."""
        return int(self.info["end_ns"])

    @property
    def duration_ns(self) -> int:
        """Length of the recorded span, ns."""
        return self.end_ns - self.start_ns

    # ---- events ---------------------------------------------------------------
    @property
    def host_events(self) -> np.ndarray:
        """Host events as the engine's frozen records (names are string-table indices), zero-copy."""
        return _records.view(self._result.host_events, _records.HOST_EVENT)

    @property
    def events(self) -> np.ndarray:
        """Host events as a structured array with decoded names (see EVENT_DTYPE)."""
        if self._events is None:
            self._events = self._decode_events()
        return self._events

    def _decode_events(self) -> np.ndarray:
        raw = self.host_events
        n = len(raw)
        out = np.empty(n, dtype=EVENT_DTYPE)
        if n == 0:
            return out
        names = np.array(self.strings, dtype=object)
        threads = self._threads if self._threads is not None else self._result.threads()
        self._threads = threads
        thread_index = np.zeros(n, dtype=np.uint32)
        tids = np.zeros(n, dtype=np.uint64)
        thread_first = np.zeros(n, dtype=np.int64)
        for k, t in enumerate(threads):
            first, count = t["first_event"], t["event_count"]
            thread_index[first : first + count] = k
            tids[first : first + count] = t["tid"]
            thread_first[first : first + count] = first
        out["name"] = names[raw["name"]]
        out["type"] = raw["type"]
        out["thread"] = thread_index
        out["tid"] = tids
        out["start_ns"] = raw["start_ns"]
        out["end_ns"] = raw["end_ns"]
        out["duration_ns"] = raw["end_ns"] - raw["start_ns"]
        out["depth"] = raw["depth"]
        out["flags"] = raw["flags"]
        out["parent"] = _parents(raw["depth"], thread_first)
        out.flags.writeable = False
        return out

    @property
    def device_events(self) -> np.ndarray:
        """GPU activity as a structured array with decoded names (see DEVICE_EVENT_DTYPE)."""
        if self._device_events is None:
            raw = _records.view(self._result.device_events, _records.DEVICE_EVENT)
            out = np.empty(len(raw), dtype=DEVICE_EVENT_DTYPE)
            if len(raw):
                names = np.array(self.strings, dtype=object)
                out["name"] = names[raw["name"]]
                for field in ("type", "device", "stream", "context", "correlation_id", "start_ns", "end_ns", "flags"):
                    out[field] = raw[field]
                out["duration_ns"] = raw["end_ns"] - raw["start_ns"]
                launch = raw["launch_event"]
                out["launch_event"] = np.where(launch == _records.NO_EVENT, -1, launch.astype(np.int64))
            out.flags.writeable = False
            self._device_events = out
        return self._device_events

    @property
    def event_args(self) -> np.ndarray:
        """Event arguments: event index, key, value (int, or str for string arguments)."""
        # Built once: a result never changes (the engine's records are
        # frozen), and decoding is a Python loop over every argument.
        if self._event_args is None:
            self._event_args = self._decode_event_args()
        return self._event_args

    def _decode_event_args(self) -> np.ndarray:
        raw = _records.view(self._result.event_args, _records.EVENT_ARG)
        out = np.empty(len(raw), dtype=EVENT_ARG_DTYPE)
        strings = self.strings
        out["event"] = raw["event"].astype(np.int64)
        out["key"] = [strings[k] for k in raw["key"]]
        out["value"] = [strings[v] if kind == 1 else int(v) for kind, v in zip(raw["kind"], raw["value"])]
        out.flags.writeable = False  # shared by every caller, as .events is
        return out

    @property
    def memory_events(self) -> np.ndarray:
        """Allocations and frees (the engine's records, zero-copy)."""
        return _records.view(self._result.memory_events, _records.MEMORY_EVENT)

    @property
    def steps(self) -> List[int]:
        """The step numbers recorded (from the ProfileStep#n events), ascending.

        Other ProfileStep-type events (a user's ``RecordEvent("ProfileStep#warmup",
        TracerEventType.ProfileStep)``) are not steps and are left out."""
        # From the raw records, decoding only the steps' names: .events would
        # decode every event (seconds and GBs for tens of millions of them).
        raw = self.host_events
        strings = self.strings
        names = [strings[i] for i in raw["name"][raw["type"] == int(TracerEventType.ProfileStep)]]
        prefix = "ProfileStep#"
        # isdecimal() and isascii(): int() would take " 3", "+3", "3_0" or "٣" too.
        return sorted(
            int(n[len(prefix) :])
            for n in names
            if n.startswith(prefix) and n[len(prefix) :].isascii() and n[len(prefix) :].isdecimal()
        )

    def event_counts(self) -> Dict[str, int]:
        """Number of events per TracerEventType name (host and GPU), largest first."""
        host = np.bincount(self.host_events["type"], minlength=len(_TYPE_NAMES))
        device = np.bincount(
            _records.view(self._result.device_events, _records.DEVICE_EVENT)["type"], minlength=len(_TYPE_NAMES)
        )
        counts = host + device
        named = {_TYPE_NAMES[t]: int(c) for t, c in enumerate(counts[: len(_TYPE_NAMES)]) if c > 0}
        return dict(sorted(named.items(), key=lambda kv: (-kv[1], kv[0])))

    def top_events(self, n: int = 10) -> List[Tuple[str, str, int, int]]:
        """The ``n`` host (name, type) pairs with the most total time: (name, type, calls, total_ns).

        Instant events (moments, not calls) are left out, as the summary tables leave them out."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"top_events: n must be an int >= 0, got {n!r}")
        raw = self.host_events
        raw = raw[(raw["flags"] & _records.HOST_EVENT_INSTANT) == 0]
        if len(raw) == 0:
            return []
        key = raw["name"].astype(np.int64) * 256 + raw["type"]
        unique, inverse = np.unique(key, return_inverse=True)
        total = np.bincount(inverse, weights=(raw["end_ns"] - raw["start_ns"]).astype(np.float64))
        calls = np.bincount(inverse)
        order = np.argsort(-total, kind="stable")[:n]
        strings = self.strings
        return [
            (strings[int(unique[i]) // 256], _type_name(int(unique[i]) % 256), int(calls[i]), int(total[i]))
            for i in order
        ]

    def __len__(self) -> int:
        """Number of host events."""
        return len(self._result.host_events)

    # ---- pandas and notebooks -------------------------------------------------
    def to_pandas(self, kind: str = "host") -> "pandas.DataFrame":
        """Events as a pandas DataFrame (``kind`` "host" or "device"), with a ``type_name`` column.

        Raises ImportError when pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "ProfilerResult.to_pandas() needs pandas: pip install pandas (or pip install 'profkit[pandas]')"
            ) from e
        if kind == "host":
            array = self.events
        elif kind == "device":
            array = self.device_events
        else:
            raise ValueError(f"to_pandas: kind must be 'host' or 'device', got {kind!r}")
        frame = pd.DataFrame({name: array[name] for name in array.dtype.names})
        frame["type_name"] = pd.Categorical([_type_name(t) for t in array["type"]], categories=_TYPE_NAMES)
        return frame

    @property
    def events_df(self) -> "pandas.DataFrame":
        """``to_pandas()``: host events as a DataFrame."""
        return self.to_pandas()

    def __repr__(self) -> str:
        info = self.info
        where = f" from {self.path!r}" if self.path else ""
        lost = info["dropped_events"] + info["overflowed_events"] + info["dropped_device_records"]
        return (
            f"<ProfilerResult{where}: {_count(info['host_event_count'], 'host event')}, "
            f"{_count(info['device_event_count'], 'GPU event')}, {_count(info['thread_count'], 'thread')}, "
            f"{_format_ns(self.duration_ns)} on {info['hostname']} pid {info['pid']}"
            + (f"; {_count(lost, 'event')} lost while recording (see .info)" if lost else "")
            + ">"
        )

    def _repr_html_(self) -> str:
        info = self.info
        esc = html.escape
        rows = [
            ("host", info["hostname"]),
            ("pid", info["pid"]),
            ("rank / world size", f"{info['rank']} / {info['world_size']}" if info["rank"] >= 0 else "unknown"),
            ("profkit", f"{info['profkit_version']} (schema {info['schema_version']})"),
            ("span", f"#{info['span_index']}: {_format_ns(self.duration_ns)}"),
            (
                "steps",
                f"{info['first_step']}–{info['first_step'] + info['step_count'] - 1}" if info["step_count"] else "none",
            ),
            ("threads", info["thread_count"]),
            ("host / GPU events", f"{info['host_event_count']} / {info['device_event_count']}"),
        ]
        lost = {k: info[k] for k in RECORDING_LOSS_KEYS if info[k]}
        if lost:
            rows.append(("not recorded", ", ".join(f"{k}={v}" for k, v in lost.items())))
        rows.extend((f"metadata: {k}", v) for k, v in self.metadata.items())
        if self.path:
            rows.insert(0, ("file", self.path))

        def table(header: Iterable[str], body: Iterable[Iterable[Any]]) -> str:
            head = "".join(f"<th>{esc(str(h))}</th>" for h in header)
            lines = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>" for row in body)
            return f"<table><thead><tr>{head}</tr></thead><tbody>{lines}</tbody></table>"

        top = [(name, kind, calls, _format_ns(total)) for name, kind, calls, total in self.top_events(10)]
        return (
            "<div class='profkit-result'><h4>profkit trace</h4>"
            + table(("", ""), rows)
            + "<h5>Events per type</h5>"
            + table(("type", "events"), self.event_counts().items())
            + "<h5>Top events by total time</h5>"
            + table(("name", "type", "calls", "total"), top)
            + "</div>"
        )

    # ---- writing and summaries ------------------------------------------------
    def save(self, path: PathLike, format: Optional[str] = None) -> None:
        """Writes the trace (temp file + rename): ``format="pb"`` a ``.pktrace`` file, ``"json"`` Chrome trace JSON.

        paddle.profiler's ``ProfilerResult.save(path, format)`` takes the
        same formats. Without ``format`` the path's suffix decides: ``.json``
        writes Chrome trace JSON, anything else ``.pktrace``. A name ending
        in ``.gz`` (``run.trace.json.gz``, ``run.pktrace.gz``) writes the
        file gzip-compressed, and the suffix before it decides the format.
        Suffixes are matched in any case (``run.JSON.GZ``).
        """
        if format is None:
            format = "json" if _gzip_files.without_gzip_suffix(path)[-len(".json") :].lower() == ".json" else "pb"
        if format == "json":
            self.export_chrome_tracing(path)
        elif format in ("pb", "pktrace"):
            if _gzip_files.is_gzip_name(path):
                _gzip_files.write_gzipped(path, self._result.save)
            else:
                self._result.save(os.fsencode(path))  # bytes: a name that is not UTF-8 still works
        else:
            raise ValueError(
                f"ProfilerResult.save: format must be 'json' or 'pb' (or None: by the suffix), got {format!r}"
            )

    def export_chrome_tracing(self, path: PathLike, label_durations: bool = False, include_flows: bool = True) -> None:
        """Writes the trace as Chrome trace JSON (chrome://tracing, ui.perfetto.dev).

        ``label_durations`` appends each event's duration to its name;
        ``include_flows`` draws arrows from CUDA launches to their GPU work.
        A name ending in ``.gz`` writes it gzip-compressed (ui.perfetto.dev
        opens that as it is; ``load_profiler_result`` reads it back).
        """

        def write(target: bytes) -> None:
            try:
                self._result.export_chrome(target, label_durations=label_durations, include_flows=include_flows)
            except ValueError as e:
                # What a loaded trace holds that Chrome JSON cannot (a time past
                # INT64_MAX ns): say which file it came from.
                if self.path is None:
                    raise
                raise ValueError(f"{e} (in the trace loaded from {os.fsdecode(self.path)!r})") from e

        if _gzip_files.is_gzip_name(path):
            _gzip_files.write_gzipped(path, write)
        else:
            write(os.fsencode(path))

    def export_stacks(self, path: PathLike, metric: str = "self_cpu_time_total") -> None:
        """Writes folded stacks for a flame graph, as torch.profiler's ``export_stacks``.

        One line per distinct stack: frames root-first joined by ``;``, a
        space, and the time under it in whole microseconds; view it with
        ``flamegraph.pl --countname us. FILE > out.svg`` or on
        https://www.speedscope.app. ``metric`` is ``"self_cpu_time_total"``
        (each host event's time outside the events nested in it; where a
        later event crosses it, starting inside it and ending after it, up
        to that event's start only, so every moment counts once) or
        ``"self_cuda_time_total"`` / ``"self_device_time_total"`` (GPU work,
        under the stack of the call that launched it). Stacks under 0.5 µs
        are left out; every ``ProfileStep#<n>`` is the frame ``ProfileStep``.
        The file is written through a temporary renamed into place; a name
        ending in ``.gz`` writes it gzip-compressed
        (``gzip -dc FILE.gz | flamegraph.pl``).

        Raises:
            ValueError: ``metric`` is not one of those names.
            FileNotFoundError: the directory of ``path`` does not exist.
        """
        code = STACKS_METRICS.get(metric) if isinstance(metric, str) else None
        if code is None:
            valid = ", ".join(repr(m) for m in STACKS_METRICS)
            raise ValueError(f"export_stacks: metric must be one of {valid}, got {metric!r}")

        def write(target: bytes) -> None:
            self._result.export_stacks(target, code)

        if _gzip_files.is_gzip_name(path):
            _gzip_files.write_gzipped(path, write)
        else:
            write(os.fsencode(path))  # bytes: see save()

    @_summary.with_options_doc
    def summary(
        self,
        sorted_by: Union[SortedKeys, int] = SortedKeys.CPUTotal,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: str = "ms",
        views: Union[None, SummaryView, Iterable[SummaryView]] = None,
        row_limit: Optional[int] = None,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
    ) -> SummaryText:
        """The summary tables (SPEC §6) as text.

        A ``str``; as a notebook cell's value it is shown as the tables."""
        options = _summary.SummaryOptions.from_arguments(locals())
        return SummaryText(_summary.summary_text(self._result, options))

    @_summary.with_options_doc
    def summary_data(
        self,
        sorted_by: Union[SortedKeys, int] = SortedKeys.CPUTotal,
        op_detail: bool = True,
        thread_sep: bool = False,
        time_unit: str = "ms",
        views: Union[None, SummaryView, Iterable[SummaryView]] = None,
        row_limit: Optional[int] = None,
        group_by_input_shape: bool = False,
        group_by_stack_n: int = 0,
    ) -> Dict[str, Any]:
        """The summary tables as data: one ``SummaryTable`` per view (``.to_pandas()``)."""
        options = _summary.SummaryOptions.from_arguments(locals())
        return _summary.summary_data(self._result, options)


def _count(n: int, noun: str) -> str:
    """``1 thread``, ``2 threads``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _type_name(value: int) -> str:
    return _TYPE_NAMES[value] if 0 <= value < len(_TYPE_NAMES) else f"type{value}"


def load_profiler_result(path: PathLike) -> ProfilerResult:
    """Reads a trace file back into a ProfilerResult: a ``.pktrace`` (written by
    ``export_protobuf``, ``Profiler.export(format="pb")`` or ``ProfilerResult.save``)
    or a Chrome trace ``.trace.json`` that profkit wrote (``export_chrome_tracing``,
    the default ``on_trace_ready``, or ``Profiler.export``). The format is told
    by the file's content, not its name.

    Both give the same result, except that JSON cannot carry invalid UTF-8 in
    names (it comes back as U+FFFD) and keeps kernels' occupancy figures to 6
    significant digits. A ``.pktrace`` is smaller and loads faster (its
    records are read in place, not parsed). Either may be gzip-compressed
    (``run.trace.json.gz``, as ``export_chrome_tracing(..., use_gzip=True)``
    writes, or a file gzipped to be shared): it is decompressed first.

    A pipe or FIFO works too (``profkit info <(cat run.pktrace.gz)``,
    ``/dev/stdin``): it is read once, into a temporary copy.

    The file is verified before use: one that is cut short, or damaged in
    a way the checks can see (indices out of range, times or nesting that
    no recording has, a span that ends before it starts), raises ValueError
    naming the file and what is wrong.

    Raises:
        FileNotFoundError: there is no such file.
        ValueError: the file is empty, truncated, corrupt (its gzip
            compression included), from a newer profkit, or not a profkit trace -- such as
            torch.profiler's JSON or a timeline merged by ``profkit merge``
            (the message says which).
    """
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"load_profiler_result: path must be a str or os.PathLike, not {type(path).__name__}") from None
    if os.path.isdir(path):
        raise IsADirectoryError(f"load_profiler_result: {path!r} is a directory, not a trace file")
    if _gzip_files.is_stream(path):
        # A pipe or FIFO (`profkit info <(cat t.pktrace.gz)`, /dev/stdin) can
        # be read only once: read here, into a copy, to see whether it is
        # gzip-compressed (the engine reads only plain traces).
        return ProfilerResult(_gzip_files.load_stream(path, _load_named(path)), path=path)
    if _gzip_files.is_gzip_file(path):  # by content: a gzipped trace need not be named .gz
        return ProfilerResult(_gzip_files.load_gunzipped(path, _load_named(path)), path=path)
    return ProfilerResult(_C.load(os.fsencode(path)), path=path)  # bytes: see save()


def _load_named(path: Union[str, bytes]) -> Any:
    """_C.load for a copy of ``path`` (decompressed, or read once from a
    pipe), whose errors name ``path``, not the copy."""

    def load(plain: bytes, decompressed: bool = True) -> Any:
        try:
            return _C.load(plain)
        except ValueError as e:
            shown = os.fsdecode(path) + (" (decompressed)" if decompressed else "")
            raise ValueError(str(e).replace(os.fsdecode(plain), shown)) from e

    return load

