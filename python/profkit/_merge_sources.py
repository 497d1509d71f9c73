"""Opening the inputs of ``profkit merge``: which file is what, and the facts
the merge needs from each (clock offset, pids, rank, window) without reading
its events. See ``profkit.merge``.
"""

import json
import mmap
import os
import re
import shutil
import stat
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import _C, _records
from ._gzip_files import gunzip_to_temporary, remove_quietly

# The Chrome export's layout (cpp/export/chrome_trace.cpp): a header line,
# one event per line separated by ",\n", then this footer and the metadata.
HEADER = b'{"traceEvents":[\n'
FOOTER = b'\n],\n"displayTimeUnit":"ms",\n"profkit":'
# GPU d of host pid p is p + stride * (d + 1) for the first 429 devices,
# past them p + d // 429 + stride * (d % 429 + 1): within 32 bits
# (kStridedDeviceCount, chrome_trace.h).
DEVICE_PROCESS_STRIDE = 10_000_000
STRIDED_DEVICE_COUNT = 429


def device_pid(pid: int, device: int) -> int:
    """The Chrome export's process id of GPU ``device`` of host ``pid``."""
    if device < STRIDED_DEVICE_COUNT:
        return pid + DEVICE_PROCESS_STRIDE * (device + 1)
    return pid + device // STRIDED_DEVICE_COUNT + DEVICE_PROCESS_STRIDE * (device % STRIDED_DEVICE_COUNT + 1)

_PID = re.compile(rb'"pid":(\d+)')

# A .pktrace is a size-prefixed FlatBuffer (trace_writer.cpp): a 4-byte size,
# the 4-byte root offset, then the schema's file_identifier (trace.fbs).
# Bytes 4..8 are where a buffer without the size prefix has it.
PKTRACE_IDENTIFIER = b"PKTR"
_UTF8_BOM = b"\xef\xbb\xbf"
# JSON's own whitespace, as the engine's looks_like_json_file skips it; not
# bytes.strip()'s, which also takes \x0b and \x0c: a .pktrace's size prefix
# can begin with those and be followed by a '{' byte.
_JSON_BLANKS = b" \t\r\n"
# How much of a file tells its format (as much as the engine reads).
_HEAD_BYTES = 4096


class MergeError(ValueError):
    """The inputs cannot be merged as given (the message names the files)."""


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


def normalize_inputs(inputs: Any) -> List[Tuple[Optional[str], str]]:
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


def looks_like_pktrace(head: bytes) -> bool:
    """Whether a file's first bytes carry the .pktrace file identifier."""
    return PKTRACE_IDENTIFIER in (head[8:12], head[4:8])


def looks_like_json(head: bytes) -> bool:
    """Whether a file's first bytes open a JSON document: past a UTF-8 byte
    order mark and blank lines or indentation, a '{' or '['."""
    if head.startswith(_UTF8_BOM):
        head = head[len(_UTF8_BOM) :]
    return head.lstrip(_JSON_BLANKS).startswith((b"{", b"["))


def engine_path(path: str) -> bytes:
    """`path` as the engine takes it: bytes, so that a name that is not valid
    UTF-8 (os.fsdecode gives it surrogate escapes, which the binding's str
    conversion refuses) still reaches the file system unchanged."""
    return os.fsencode(path)


def display_text(text: str) -> str:
    """`text` (a path, or a name made from one) as UTF-8 can carry it: bytes
    of a file name that are not UTF-8 shown as U+FFFD, for the merged file's
    labels and metadata (JSON) and for printing."""
    return os.fsencode(text).decode("utf-8", "replace")


class Source:
    """One input, opened: its facts, and how to write its events."""

    def __init__(self, name: Optional[str], path: str) -> None:
        self.name = name
        self.path = path  # as given: what messages and labels name
        # What is read: `path`, or a copy of it (of a pipe, or decompressed);
        # close() removes the copies.
        self.data_path = path
        self._temporaries: List[str] = []
        self.is_pktrace = False
        self.meta: Dict[str, Any] = {}
        self.pids: List[int] = []  # the pids its events use, host pid first
        self.layout: Optional[Tuple[int, int]] = None  # Chrome events' byte range, when line-per-event
        try:
            self._open()
        except BaseException:
            self.close()  # no one else can: the caller never gets this Source
            raise

    @property
    def format(self) -> str:
        return "pktrace" if self.is_pktrace else "chrome"

    def _open(self) -> None:
        path = self.path
        if os.path.isdir(path):
            raise MergeError(f"merge: {path!r} is a directory; give trace files (.pktrace or .trace.json)")
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                # A FIFO, <(...), /dev/stdin: it can be read only once, and
                # both this sniffing and the engine read it (and mmap needs
                # a file): read it once into a copy, read as a file.
                self._copy()
            with open(self.data_path, "rb") as f:
                head = f.read(_HEAD_BYTES)
        except OSError as e:
            raise MergeError(f"merge: cannot read {path!r}: {e.strerror or e}") from e
        if len(head) < _HEAD_BYTES and not head.strip(_JSON_BLANKS):
            raise MergeError(f"merge: {path!r} is empty; it is not a profkit trace")
        if head[:2] == b"\x1f\x8b":  # gzip-compressed: read through a decompressed copy
            self._decompress()
            with open(self.data_path, "rb") as f:
                head = f.read(_HEAD_BYTES)
            if len(head) < _HEAD_BYTES and not head.strip(_JSON_BLANKS):
                raise MergeError(f"merge: {path!r} (decompressed) is empty; it is not a profkit trace")
        # The identifier first: a .pktrace's size prefix may look like blanks and a '{'.
        if not looks_like_pktrace(head) and looks_like_json(head):
            self._open_chrome()
        else:
            self._open_pktrace()

    def _open_pktrace(self) -> None:
        try:
            result = self.load()
        except (OSError, ValueError, RuntimeError) as e:
            raise MergeError(f"merge: cannot read {self.path!r} as a profkit trace: {self.named(str(e))}") from e
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
        self.pids = [pid] + [device_pid(pid, int(d)) for d in devices]

    def load(self) -> "_C.Result":
        return _C.load(engine_path(self.data_path))

    def named(self, message: str) -> str:
        """An error message about the file read, naming the input given
        instead of a copy of it (as load_profiler_result does)."""
        if self.data_path == self.path:
            return message
        shown = self.path + (" (decompressed)" if self.data_path.endswith(".gunzipped") else "")
        return message.replace(self.data_path, shown)

    def _copy(self) -> None:
        """Reads the input (not a regular file) once, into a temporary file that is read instead."""
        fd, copy = tempfile.mkstemp(prefix="profkit-merge-", suffix=".copy")
        self._temporaries.append(copy)
        with open(fd, "wb") as out, open(self.path, "rb") as source:
            shutil.copyfileobj(source, out, 1 << 20)
        self.data_path = copy

    def _decompress(self) -> None:
        try:
            plain = gunzip_to_temporary(self.data_path, prefix="profkit-merge-", shown=self.path)
        except (OSError, ValueError) as e:
            raise MergeError(f"merge: cannot decompress {self.path!r} (gzip-compressed): {self.named(str(e))}") from e
        self._temporaries.append(plain)
        self.data_path = plain

    def close(self) -> None:
        """Removes the copies read instead of the input, if any (the input itself is never touched)."""
        while self._temporaries:
            remove_quietly(self._temporaries.pop())
        self.data_path = self.path

    def _open_chrome(self) -> None:
        """Our Chrome JSON: the metadata object is at the end, the process
        metadata events at the start; read both without reading the rest."""
        meta = None
        try:
            with open(self.data_path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                footer = m.rfind(FOOTER)
                if m[: len(HEADER)] == HEADER and footer >= 0:
                    tail = m[footer + len(FOOTER) :].decode("utf-8", "replace").rstrip()
                    try:
                        meta = json.loads(tail[:-1]) if tail.endswith("}") else None  # drop the document's "}"
                    except ValueError:
                        meta = None
                    if isinstance(meta, dict):
                        self.layout = (len(HEADER), footer)
                        self.pids = self._leading_pids(m, len(HEADER), footer)
        except (OSError, ValueError) as e:
            raise MergeError(f"merge: cannot read {self.path!r}: {self.named(str(e))}") from e
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
        """A Chrome file in another layout (re-saved by a tool): its metadata
        and pids. The document is not kept: events() parses it again when its
        turn to be written comes, so that one input at a time is in memory."""
        doc = parse_whole(self.data_path, self.path)
        meta = doc.get("profkit")
        if not isinstance(meta, dict):
            return None
        for event in doc["traceEvents"]:
            pid = event.get("pid") if isinstance(event, dict) else None
            if isinstance(pid, int) and pid not in self.pids:
                self.pids.append(pid)
        return meta

    def events(self) -> List[Any]:
        """The events of a Chrome file in another layout, parsed again."""
        return parse_whole(self.data_path, self.path)["traceEvents"]


def not_json(constant: str) -> Any:
    # Python's json takes NaN and Infinity, and would write them back out:
    # the merged file would not be JSON.
    raise ValueError(f"{constant} is not a JSON number")


def parse_whole(path: str, shown: Optional[str] = None) -> Dict[str, Any]:
    """A Chrome trace parsed whole (a UTF-8 byte order mark is allowed).
    Errors name ``shown`` (the input as given) when ``path`` is a copy of it."""
    name = path if shown is None else shown
    try:
        with open(path, encoding="utf-8-sig") as f:
            doc = json.load(f, parse_constant=not_json)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise MergeError(f"merge: {name!r} is neither a profkit .pktrace file nor valid JSON ({e})") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise MergeError(f"merge: {name!r} is JSON but not a Chrome trace (no \"traceEvents\" list)")
    return doc
