"""One timeline from the traces of several processes (``profkit merge``).

    profkit.merge_traces({"trainer0": "r0.pktrace", "trainer1": "r1.pktrace"}, "job.trace.json")

Each input is a recording window of one process: a ``.pktrace`` file or a
Chrome trace written by profkit (recognised by its top-level ``"profkit"``
object). The output is one Chrome trace (ui.perfetto.dev, chrome://tracing)
with every input's processes under its NAME ("trainer0: Process 4242 (CPU)
rank 0", its GPUs after it), in the order given.

Alignment: every trace keeps its events on its engine clock and records the
offset to wall-clock time when it was collected; the merged timeline is in
wall-clock time, ts 0 at the earliest input's first event. Processes on one
machine line up to within a microsecond or so (they read the same wall clock
within moments of each other); across machines, as well as their clocks are
synchronised (NTP: typically within a millisecond; PTP: microseconds).

Nothing collides: an input's pids are kept when no earlier input uses them,
otherwise the input moves to a pid no OS hands out (above 4194304, the
largest Linux pid); flow arrows (CUDA launch -> kernel) get ids no other
input uses.

Checks (``MergeError`` naming the files, or warnings with ``strict=False``):
two inputs claiming the same rank of the same world size, inputs whose world
sizes disagree, the same recording window given twice. Always warnings: an
input with no events, inputs whose time ranges do not overlap (probably not
the same run). An unreadable input, or one profkit did not write, is always
an error naming the file.

Speed: ``.pktrace`` inputs are written by the engine straight into place
(ts shifted, pids and flow ids moved, processes labelled) and copied in
large blocks; profkit Chrome JSON inputs are rewritten line by line in
Python, several times slower (see BENCHMARKS.md). Memory stays flat either
way: nothing holds more than one block of text. The output is written to a
temporary file renamed into place.
"""

import json
import mmap
import os
import re
import shutil
import tempfile
import uuid
import warnings
from dataclasses import asdict, dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _C, _records
from ._warnings import ProfilerWarning

__all__ = ["merge_traces", "parse_merge_inputs", "MergeError", "MergeReport", "MergedInput"]

PathLike = Union[str, "os.PathLike[str]"]

# The Chrome export's layout (cpp/export/chrome_trace.cpp): a header line,
# one event per line separated by ",\n", then this footer and the metadata.
_HEADER = b'{"traceEvents":[\n'
_FOOTER = b'\n],\n"displayTimeUnit":"ms",\n"profkit":'
# GPU d of host pid p is p + stride * (d + 1) (chrome_trace.h).
_DEVICE_PROCESS_STRIDE = 10_000_000
# Linux pids are at most 2**22; moved inputs start above, where no natural
# host pid (and, by the stride, no natural GPU pid) can be.
_FIRST_FREE_PID = 4_194_305
# Inputs keep their processes together: input k's sort indexes start here.
_SORT_INDEX_STRIDE = 1000
_COPY_BLOCK = 16 << 20


class MergeError(ValueError):
    """The inputs cannot be merged as given (the message names the files)."""


@dataclass
class MergedInput:
    """What one input contributed to a merged timeline."""

    name: str
    path: str
    format: str  # "pktrace" or "chrome"
    hostname: str
    pid: int  # the OS pid
    trace_pid: int  # the pid in the merged file
    rank: int  # -1 unknown
    world_size: int
    span_index: int
    shift_ns: int  # where this input's ts 0 sits in the merged timeline
    first_wall_ns: int  # wall clock of the first event
    last_wall_ns: int  # wall clock of the end of the window
    event_count: int  # host + GPU events
    lines: int = 0  # trace events written (events, metadata, flows)


@dataclass
class MergeReport:
    """The result of ``merge_traces``: where it went and what went in."""

    output: str
    base_wall_ns: int  # wall clock of ts 0
    inputs: List[MergedInput]
    warnings: List[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        """Trace events written (including metadata and flow events)."""
        return sum(i.lines for i in self.inputs)

    def __repr__(self) -> str:
        names = ", ".join(i.name for i in self.inputs)
        return f"<MergeReport {self.output!r}: {len(self.inputs)} inputs ({names}), {self.events} trace events>"


# ---- inputs ------------------------------------------------------------------------


def parse_merge_inputs(arguments: Sequence[str]) -> List[Tuple[Optional[str], str]]:
    """``NAME=FILE`` or ``FILE`` arguments as (name or None, path).

    An argument that names an existing file is a FILE even if it contains
    ``=``; otherwise the text before the first ``=`` is the NAME.
    """
    parsed: List[Tuple[Optional[str], str]] = []
    for argument in arguments:
        if "=" in argument and not os.path.exists(argument):
            name, path = argument.split("=", 1)
            if not name:
                raise MergeError(f"merge: {argument!r} has an empty NAME; write NAME=FILE (e.g. trainer0=r0.pktrace)")
            if not path:
                raise MergeError(f"merge: {argument!r} has no FILE after '='")
            parsed.append((name, path))
        else:
            parsed.append((None, argument))
    return parsed


def _normalize(inputs: Any) -> List[Tuple[Optional[str], str]]:
    if isinstance(inputs, Mapping):
        return [(str(name), os.fspath(path)) for name, path in inputs.items()]
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if not isinstance(inputs, Iterable):
        raise TypeError(
            "merge: inputs must be {name: path}, or a list of paths, 'NAME=FILE' strings or (name, path) pairs, "
            f"not {type(inputs).__name__}"
        )
    pairs: List[Tuple[Optional[str], str]] = []
    for item in inputs:
        if isinstance(item, tuple) and len(item) == 2:
            pairs.append((None if item[0] is None else str(item[0]), os.fspath(item[1])))
        elif isinstance(item, (str, os.PathLike)):
            pairs.extend(parse_merge_inputs([os.fspath(item)]))
        else:
            raise TypeError(f"merge: an input must be a path, 'NAME=FILE' or a (name, path) pair, not {item!r}")
    return pairs


class _Source:
    """One input, opened: its facts, and how to write its events."""

    def __init__(self, name: Optional[str], path: str) -> None:
        self.name = name
        self.path = path
        self.is_pktrace = False
        self.meta: Dict[str, Any] = {}
        self.pids: List[int] = []  # the pids its events use, host pid first
        self.layout: Optional[Tuple[int, int]] = None  # Chrome events' byte range, when line-per-event
        self.doc: Optional[Dict[str, Any]] = None  # a Chrome file in another layout, parsed
        self._open()

    @property
    def format(self) -> str:
        return "pktrace" if self.is_pktrace else "chrome"

    def _open(self) -> None:
        path = self.path
        if os.path.isdir(path):
            raise MergeError(f"merge: {path!r} is a directory; give trace files (.pktrace or .trace.json)")
        try:
            with open(path, "rb") as f:
                head = f.read(64)
        except OSError as e:
            raise MergeError(f"merge: cannot read {path!r}: {e.strerror or e}") from e
        if not head.strip():
            raise MergeError(f"merge: {path!r} is empty; it is not a profkit trace")
        if head.lstrip().startswith(b"{"):
            self._open_chrome()
        else:
            self._open_pktrace()

    def _open_pktrace(self) -> None:
        try:
            result = self.load()
        except (OSError, ValueError, RuntimeError) as e:
            raise MergeError(f"merge: cannot read {self.path!r} as a profkit trace: {e}") from e
        self.is_pktrace = True
        # Only the facts are kept: the trace is loaded again when its turn to be
        # written comes, so that one input at a time is in memory.
        info = result.info()
        host = _records.view(result.host_events, _records.HOST_EVENT)
        device = _records.view(result.device_events, _records.DEVICE_EVENT)
        # The engine's time base for the export: the first event or the window start.
        first = int(info["start_ns"])
        if len(host):
            first = min(first, int(host["start_ns"].min()))
        timed = device[(device["flags"] & 1) == 0] if len(device) else device  # PK_DEVICE_EVENT_NO_TIMING = 1
        if len(timed):
            first = min(first, int(timed["start_ns"].min()))
        offset = int(info["clock_offset_ns"])
        self.meta = {
            "hostname": info["hostname"],
            "pid": int(info["pid"]),
            "rank": int(info["rank"]),
            "world_size": int(info["world_size"]),
            "span_index": int(info["span_index"]),
            "start_ns": int(info["start_ns"]),
            "first_wall_ns": first + offset,
            "last_wall_ns": max(int(info["end_ns"]), first) + offset,
            "event_count": int(info["host_event_count"]) + int(info["device_event_count"]),
            "flow_ids": len(device),
        }
        pid = self.meta["pid"]
        devices = np.unique(device["device"]) if len(device) else []
        self.pids = [pid] + [pid + _DEVICE_PROCESS_STRIDE * (int(d) + 1) for d in devices]

    def load(self) -> "_C.Result":
        return _C.load(self.path)

    def _open_chrome(self) -> None:
        """Our Chrome JSON: the metadata object is at the end, the process
        metadata events at the start; read both without reading the rest."""
        meta = None
        try:
            with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                footer = m.rfind(_FOOTER)
                if m[: len(_HEADER)] == _HEADER and footer >= 0:
                    tail = m[footer + len(_FOOTER) :].decode("utf-8", "replace").rstrip()
                    try:
                        meta = json.loads(tail[:-1]) if tail.endswith("}") else None  # drop the document's "}"
                    except ValueError:
                        meta = None
                    if isinstance(meta, dict):
                        self.layout = (len(_HEADER), footer)
                        self.pids = self._leading_pids(m, len(_HEADER), footer)
        except (OSError, ValueError) as e:
            raise MergeError(f"merge: cannot read {self.path!r}: {e}") from e
        if self.layout is None:
            meta = self._parse_whole()
        if not isinstance(meta, dict):
            raise MergeError(
                f"merge: {self.path!r} is JSON but not a trace written by profkit (no top-level \"profkit\" object); "
                "merge takes profkit's .pktrace files or the .trace.json files profkit exports"
            )
        if "merged_from" in meta:
            raise MergeError(f"merge: {self.path!r} is already a merged timeline; merge the original per-process files")
        try:
            base_wall = int(meta["base_wall_ns"])
            offset = int(meta["clock_offset_ns"])
            self.meta = {
                "hostname": str(meta.get("hostname", "")),
                "pid": int(meta["pid"]),
                "rank": int(meta.get("rank", -1)),
                "world_size": int(meta.get("world_size", -1)),
                "span_index": int(meta.get("span_index", 0)),
                "start_ns": int(meta.get("start_ns", 0)),
                "first_wall_ns": base_wall,
                "last_wall_ns": max(int(meta.get("end_ns", 0)) + offset, base_wall),
                "event_count": int(meta.get("host_event_count", 0)) + int(meta.get("device_event_count", 0)),
            }
        except (KeyError, TypeError, ValueError) as e:
            raise MergeError(f"merge: {self.path!r} has a damaged \"profkit\" metadata object ({e!r} is missing or wrong)") from e
        pid = self.meta["pid"]
        if pid not in self.pids:
            self.pids.insert(0, pid)
        else:
            self.pids.remove(pid)
            self.pids.insert(0, pid)

    @staticmethod
    def _leading_pids(m: mmap.mmap, start: int, end: int) -> List[int]:
        """The pids named by the process metadata events at the top of the file."""
        pids: List[int] = []
        position = start
        while position < end:
            newline = m.find(b"\n", position, end)
            line = m[position : end if newline < 0 else newline]
            if not line.startswith(b'{"ph":"M"'):
                break
            match = _PID.search(line)
            if match is not None and int(match.group(1)) not in pids:
                pids.append(int(match.group(1)))
            position = end if newline < 0 else newline + 1
        return pids

    def _parse_whole(self) -> Any:
        """A Chrome file in another layout (re-saved by a tool): parse it all."""
        try:
            with open(self.path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise MergeError(f"merge: {self.path!r} is neither a profkit .pktrace file nor valid JSON ({e})") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            raise MergeError(f"merge: {self.path!r} is JSON but not a Chrome trace (no \"traceEvents\" list)")
        meta = doc.get("profkit")
        if not isinstance(meta, dict):
            return None
        self.doc = doc
        for event in doc["traceEvents"]:
            pid = event.get("pid") if isinstance(event, dict) else None
            if isinstance(pid, int) and pid not in self.pids:
                self.pids.append(pid)
        return meta


# ---- checks -----------------------------------------------------------------------


def _check(sources: List[_Source], strict: bool) -> List[str]:
    """Mismatch checks; returns the warnings (errors raise MergeError when strict)."""
    problems: List[str] = []
    notes: List[str] = []
    worlds = {s.meta["world_size"] for s in sources if s.meta["world_size"] > 0}
    if len(worlds) > 1:
        listing = ", ".join(f"{s.path!r} (world size {s.meta['world_size']})" for s in sources if s.meta["world_size"] > 0)
        problems.append(f"the inputs come from different world sizes: {listing}; are they from the same job?")
    by_rank: Dict[Tuple[int, int], _Source] = {}
    seen_windows: Dict[Tuple[str, int, int, int], _Source] = {}
    for s in sources:
        m = s.meta
        window = (m["hostname"], m["pid"], m["span_index"], m["start_ns"])
        if window in seen_windows:
            problems.append(
                f"{seen_windows[window].path!r} and {s.path!r} are the same recording window (host {m['hostname']}, "
                f"pid {m['pid']}, window #{m['span_index']}); give each window once"
            )
            continue
        seen_windows[window] = s
        if m["rank"] >= 0:
            key = (m["rank"], m["world_size"])
            if key in by_rank:
                problems.append(
                    f"{by_rank[key].path!r} and {s.path!r} both claim rank {m['rank']} of world size {m['world_size']}; "
                    "merge one recording window per rank"
                )
            else:
                by_rank[key] = s
    for s in sources:
        if s.meta["event_count"] == 0:
            notes.append(f"{s.path!r} has no events (only its process will show)")
    if len(sources) > 1:
        latest_start = max(sources, key=lambda s: s.meta["first_wall_ns"])
        earliest_end = min(sources, key=lambda s: s.meta["last_wall_ns"])
        if latest_start.meta["first_wall_ns"] > earliest_end.meta["last_wall_ns"]:
            gap = (latest_start.meta["first_wall_ns"] - earliest_end.meta["last_wall_ns"]) / 1e9
            notes.append(
                f"{earliest_end.path!r} ends {gap:.3f} s before {latest_start.path!r} starts: their recording "
                "windows do not overlap (different steps or different runs?)"
            )
    if problems and strict:
        raise MergeError("merge: " + "; ".join(problems) + " (pass strict=False / --allow-mismatch to merge anyway)")
    return problems + notes


def _names(sources: List[_Source]) -> None:
    """Gives every input a unique name: its own, else "rank{r}", else its file's stem."""
    explicit = [s.name for s in sources if s.name is not None]
    duplicates = sorted({n for n in explicit if explicit.count(n) > 1})
    if duplicates:
        raise MergeError(f"merge: the name {duplicates[0]!r} is given to more than one input; names must differ")
    taken = set(explicit)
    for s in sources:
        if s.name is not None:
            continue
        base = os.path.basename(s.path)
        for suffix in (".pktrace", ".trace.json", ".json"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
                break
        candidate = f"rank{s.meta['rank']}" if s.meta["rank"] >= 0 else base
        name, k = candidate, 1
        while name in taken:
            k += 1
            name = f"{candidate}-{k}"
        s.name = name
        taken.add(name)


class _Pids:
    """Pids claimed so far; an input whose pids are taken moves as a block."""

    def __init__(self) -> None:
        self.claimed: set = set()
        self.next_free = _FIRST_FREE_PID

    def place(self, pids: Sequence[int]) -> int:
        """The delta to add to every pid of an input (0: it keeps its pids)."""
        if not pids:
            return 0
        host = pids[0]
        delta = 0
        while any(p + delta in self.claimed for p in pids):
            delta = self.next_free - host
            self.next_free += 1
        self.claimed.update(p + delta for p in pids)
        return delta


# ---- writing ----------------------------------------------------------------------

_PID = re.compile(rb'"pid":(\d+)')


def _number_end(text: str, start: int) -> int:
    """Where the number starting at `start` ends: the next ',' (or the '}')."""
    end = text.find(",", start)
    return end if end >= 0 else text.find("}", start)


def _with_number(head: str, key: str, change: Callable[[str], str]) -> str:
    """`head` with the number after `key` replaced by change(number)."""
    found = head.find(key)
    if found < 0:
        return head
    start = found + len(key)
    end = _number_end(head, start)
    return head[:start] + change(head[start:end]) + head[end:]


def _shift_ts(text: str, shift_ns: int) -> str:
    """A ts in µs with a 3-digit fraction, plus shift_ns, in the same format."""
    whole, _, fraction = text.partition(".")
    ns = int(whole) * 1000 + int((fraction + "000")[:3]) + shift_ns
    return "%d.%03d" % divmod(ns, 1000)


class _LineRewriter:
    """Moves one Chrome input's events into the merged timeline."""

    def __init__(self, prefix: str, shift_ns: int, pid_delta: int, flow_offset: int, sort_offset: int) -> None:
        self.prefix = prefix
        self.shift_ns = shift_ns
        self.pid_delta = pid_delta
        self.flow_offset = flow_offset
        self.sort_offset = sort_offset
        self.max_flow_id = 0

    def line(self, line: str) -> str:
        """One event line (no separator)."""
        if line.startswith('{"ph":"M"'):
            return _dump(self.event(json.loads(line)))
        # Only the fields before "args" are ours; args keys are anybody's. (A
        # key's quotes cannot occur inside a string value: those are escaped.)
        cut = line.find(',"args":')
        head, tail = (line, "") if cut < 0 else (line[:cut], line[cut:])
        if self.shift_ns:
            head = _with_number(head, '"ts":', self._shifted)
        if self.pid_delta:
            head = _with_number(head, '"pid":', self._moved)
        if self.flow_offset and head.startswith(('{"ph":"s"', '{"ph":"f"', '{"ph":"t"')):
            head = _with_number(head, '"id":', self._flow)
        elif head.startswith(('{"ph":"s"', '{"ph":"f"', '{"ph":"t"')):
            found = head.find('"id":')
            if found >= 0:
                self._flow(head[found + 5 : _number_end(head, found + 5)])
        return head + tail

    def _shifted(self, text: str) -> str:
        return _shift_ts(text, self.shift_ns)

    def _moved(self, text: str) -> str:
        return str(int(text) + self.pid_delta)

    def _flow(self, text: str) -> str:
        flow = int(text) + self.flow_offset
        if flow > self.max_flow_id:
            self.max_flow_id = flow
        return str(flow)

    def event(self, event: Dict[str, Any]) -> Dict[str, Any]:
        """One event as a dict (metadata events, and files in another layout)."""
        if isinstance(event.get("pid"), int):
            event["pid"] += self.pid_delta
        if event.get("ph") == "M":
            args = event.get("args")
            if isinstance(args, dict):
                if event.get("name") == "process_name" and isinstance(args.get("name"), str):
                    args["name"] = self.prefix + args["name"]
                elif event.get("name") == "process_sort_index" and isinstance(args.get("sort_index"), int):
                    args["sort_index"] += self.sort_offset
            return event
        ts = event.get("ts")
        if isinstance(ts, (int, float)) and self.shift_ns:
            event["ts"] = round(ts + self.shift_ns / 1000.0, 3)
        if event.get("ph") in ("s", "t", "f") and isinstance(event.get("id"), int):
            event["id"] += self.flow_offset
            self.max_flow_id = max(self.max_flow_id, event["id"])
        return event


def _dump(event: Dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


class _Writer:
    """The merged file: events from each input in turn, ",\n" between them."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.first = True

    def block(self, data: Union[bytes, memoryview]) -> None:
        """A run of whole event lines joined by ",\n" (no leading or trailing separator)."""
        if not data:
            return
        if not self.first:
            self.out.write(b",\n")
        self.first = False
        self.out.write(data)


def _copy_range(source: IO[bytes], start: int, end: int, writer: _Writer) -> int:
    """Copies bytes [start, end) of an event block through one reused buffer;
    returns the lines copied."""
    if end <= start:
        return 0
    buffer = bytearray(min(_COPY_BLOCK, end - start))
    view = memoryview(buffer)
    source.seek(start)
    lines = 1
    remaining = end - start
    first = True
    while remaining > 0:
        n = source.readinto(view[: min(len(buffer), remaining)])
        if not n:  # pragma: no cover - the file shrank under us
            raise MergeError("merge: a temporary export was cut short")
        lines += buffer.count(b"\n", 0, n)
        if first:
            writer.block(view[:n])
            first = False
        else:
            writer.out.write(view[:n])
        remaining -= n
    return lines


def _write_pktrace(s: _Source, writer: _Writer, scratch: str, base_wall_ns: int, placed: Dict[str, Any]) -> int:
    temp = os.path.join(scratch, "input.trace.json")
    try:
        result = s.load()
    except (OSError, ValueError, RuntimeError) as e:  # pragma: no cover - it was readable a moment ago
        raise MergeError(f"merge: cannot read {s.path!r} as a profkit trace: {e}") from e
    result.export_chrome_placed(
        temp,
        time_base_wall_ns=base_wall_ns,
        pid=s.meta["pid"] + placed["pid_delta"],
        flow_id_offset=placed["flow_offset"],
        process_label_prefix=placed["prefix"],
        sort_index_offset=placed["sort_offset"],
        include_flows=placed["include_flows"],
    )
    del result  # unmapped before the copy: one input's memory at a time
    try:
        with open(temp, "rb") as f:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:  # rfind reads only the tail
                footer = m.rfind(_FOOTER)
                header_ok = m[: len(_HEADER)] == _HEADER
            if not header_ok or footer < 0:  # pragma: no cover - the engine's own layout
                raise MergeError(f"merge: the engine wrote {s.path!r} in an unexpected layout")
            return _copy_range(f, len(_HEADER), footer, writer)
    finally:
        os.unlink(temp)


def _write_chrome(s: _Source, writer: _Writer, rewriter: _LineRewriter, include_flows: bool) -> int:
    lines = 0
    pending: List[str] = []

    def flush() -> None:
        if pending:
            writer.block("".join(pending).encode("utf-8"))
            pending.clear()

    def keep(event_line: str) -> bool:
        return include_flows or not event_line.startswith(('{"ph":"s"', '{"ph":"t"', '{"ph":"f"'))

    if s.doc is not None:
        for event in s.doc["traceEvents"]:
            if not isinstance(event, dict):
                continue
            if not include_flows and event.get("ph") in ("s", "t", "f"):
                continue
            pending.append(("" if not pending else ",\n") + _dump(rewriter.event(event)))
            lines += 1
            if len(pending) >= 4096:
                flush()
        flush()
        return lines
    assert s.layout is not None
    start, end = s.layout
    rewrite = rewriter.line
    with open(s.path, "rb") as f:
        f.seek(start)
        remaining = end - start
        carry = b""
        while remaining > 0:
            block = f.read(min(remaining, _COPY_BLOCK // 4))
            if not block:  # pragma: no cover - the file shrank under us
                raise MergeError(f"merge: {s.path!r} changed while it was being read")
            remaining -= len(block)
            block = carry + block
            cut = block.rfind(b"\n") + 1 if remaining > 0 else len(block)
            carry = block[cut:]
            out = []
            for text in block[:cut].decode("utf-8").split("\n"):
                if text.endswith(","):
                    text = text[:-1]
                if not text or not keep(text):
                    continue
                out.append(rewrite(text))
            lines += len(out)
            writer.block(",\n".join(out).encode("utf-8"))
    return lines


def merge_traces(
    inputs: Union[Mapping[str, PathLike], Iterable[Union[PathLike, Tuple[Optional[str], PathLike]]]],
    output: PathLike,
    *,
    strict: bool = True,
    include_flows: bool = True,
) -> MergeReport:
    """Merges the traces of several processes into one Chrome trace timeline.

    Args:
        inputs: ``{name: path}``, or paths / ``"NAME=FILE"`` strings /
            ``(name, path)`` pairs. Unnamed inputs are called ``rank{r}``
            when their rank is known, else after their file. Each path is a
            ``.pktrace`` file or a Chrome trace profkit wrote.
        output: the ``.trace.json`` to write (temp file + rename).
        strict: raise MergeError on mismatched inputs (same rank twice,
            world sizes that disagree, one window given twice); False turns
            these into warnings.
        include_flows: keep the CUDA launch -> GPU work arrows.

    Returns:
        a MergeReport: the output path, the wall-clock time of ts 0, and per
        input its name, rank, pid in the merged file and time shift.

    Raises:
        MergeError: an input is missing, unreadable, not written by
            profkit, already merged, or (strict) mismatched; the message
            names the file.
    """
    pairs = _normalize(inputs)
    if not pairs:
        raise MergeError("merge: no inputs; give one or more NAME=FILE (or FILE) arguments")
    output = os.fspath(output)
    sources = [_Source(name, path) for name, path in pairs]
    for s in sources:
        if os.path.exists(output) and os.path.samefile(s.path, output):
            raise MergeError(f"merge: the output {output!r} is also an input; write the merged timeline elsewhere")
    _names(sources)
    problems = _check(sources, strict)
    for message in problems:
        warnings.warn(f"profkit merge: {message}", ProfilerWarning, stacklevel=2)

    base_wall_ns = min(s.meta["first_wall_ns"] for s in sources)
    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    pids = _Pids()
    merged: List[MergedInput] = []
    # Created like any file (mode from the umask, unlike mkstemp's 0600), under a name nobody else uses.
    temp = os.path.join(directory, f".{os.path.basename(output)}.{uuid.uuid4().hex}.tmp")
    scratch = tempfile.mkdtemp(dir=directory, prefix=".merge-")
    try:
        with open(temp, "xb") as out:
            out.write(_HEADER)
            writer = _Writer(out)
            flow_offset = 0
            for k, s in enumerate(sources):
                assert s.name is not None
                pid_delta = pids.place(s.pids)
                shift = s.meta["first_wall_ns"] - base_wall_ns
                placed = {
                    "pid_delta": pid_delta,
                    "flow_offset": flow_offset,
                    "prefix": f"{s.name}: ",
                    "sort_offset": k * _SORT_INDEX_STRIDE,
                    "include_flows": include_flows,
                }
                if s.is_pktrace:
                    lines = _write_pktrace(s, writer, scratch, base_wall_ns, placed)
                    flow_offset += s.meta["flow_ids"]
                else:
                    rewriter = _LineRewriter(placed["prefix"], shift, pid_delta, flow_offset, placed["sort_offset"])
                    lines = _write_chrome(s, writer, rewriter, include_flows)
                    flow_offset = max(flow_offset, rewriter.max_flow_id)
                merged.append(
                    MergedInput(
                        name=s.name,
                        path=s.path,
                        format=s.format,
                        hostname=s.meta["hostname"],
                        pid=s.meta["pid"],
                        trace_pid=s.meta["pid"] + pid_delta,
                        rank=s.meta["rank"],
                        world_size=s.meta["world_size"],
                        span_index=s.meta["span_index"],
                        shift_ns=shift,
                        first_wall_ns=s.meta["first_wall_ns"],
                        last_wall_ns=s.meta["last_wall_ns"],
                        event_count=s.meta["event_count"],
                        lines=lines,
                    )
                )
            out.write(_FOOTER)
            metadata = {
                "profkit_version": _C.version(),
                "base_wall_ns": base_wall_ns,
                "merged_from": [asdict(m) for m in merged],
                "warnings": problems,
            }
            out.write(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
            out.write(b"}\n")
        os.replace(temp, output)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return MergeReport(output=output, base_wall_ns=base_wall_ns, inputs=merged, warnings=problems)
