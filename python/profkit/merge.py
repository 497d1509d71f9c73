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
an error naming the file (and, in a damaged Chrome input, the line); the
output is then not written.

Speed: ``.pktrace`` inputs are written by the engine straight into place
(ts shifted, pids and flow ids moved, processes labelled) and copied in
large blocks; profkit Chrome JSON inputs are rewritten line by line in
Python, several times slower (see BENCHMARKS.md), each line checked to be
JSON before it is written. Memory stays flat either way: nothing holds more
than one block of text, except that a Chrome file re-saved in another layout
is parsed whole, one such input at a time. The output is written to a
temporary file renamed into place.
"""

import json
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _C
from ._gzip_files import is_gzip_name, without_gzip_suffix, write_gzipped
from ._merge_sources import FOOTER, HEADER, MergeError, Source, display_text, normalize_inputs, parse_merge_inputs
from ._merge_writing import LineRewriter, Writer, write_chrome, write_pktrace
from ._output_files import OutputFile, check_directory, output_file, written
from ._warnings import ProfilerWarning
from .export_callbacks import PKTRACE_SUFFIX

__all__ = ["merge_traces", "parse_merge_inputs", "MergeError", "MergeReport", "MergedInput"]

PathLike = Union[str, "os.PathLike[str]"]

# Linux pids are at most 2**22; moved inputs start above, where no natural
# host pid (and, by the stride, no natural GPU pid) can be.
_FIRST_FREE_PID = 4_194_305
# Inputs keep their processes together: input k's sort indexes start here.
_SORT_INDEX_STRIDE = 1000


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


# ---- checks -----------------------------------------------------------------------


def _check(sources: List[Source], strict: bool) -> List[str]:
    """Mismatch checks; returns the warnings (errors raise MergeError when strict)."""
    problems: List[str] = []
    notes: List[str] = []
    worlds = {s.meta["world_size"] for s in sources if s.meta["world_size"] > 0}
    if len(worlds) > 1:
        listing = ", ".join(f"{s.path!r} (world size {s.meta['world_size']})" for s in sources if s.meta["world_size"] > 0)
        problems.append(f"the inputs come from different world sizes: {listing}; are they from the same job?")
    by_rank: Dict[Tuple[int, int], Source] = {}
    seen_windows: Dict[Tuple[str, int, int, int], Source] = {}
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


def _names(sources: List[Source]) -> None:
    """Gives every input a unique name: its own, else "rank{r}", else its file's stem."""
    for s in sources:
        if s.name is not None:
            s.name = display_text(s.name)  # a label in the merged file: UTF-8
    explicit = [s.name for s in sources if s.name is not None]
    duplicates = sorted({n for n in explicit if explicit.count(n) > 1})
    if duplicates:
        raise MergeError(f"merge: the name {duplicates[0]!r} is given to more than one input; names must differ")
    taken = set(explicit)
    for s in sources:
        if s.name is not None:
            continue
        base = display_text(os.path.basename(s.path))
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
            ``.pktrace`` file or a Chrome trace profkit wrote, either one
            maybe gzip-compressed (read through a temporary decompressed
            copy, removed when the merge ends).
        output: the ``.trace.json`` to write (temp file + rename; a link
            is kept and the file it names replaced, a FIFO or device
            written in place, ``/dev/stdout`` through the open descriptor);
            a name ending in ``.gz`` is written gzip-compressed; a
            ``.pktrace`` name is refused (the output is Chrome JSON). Its
            directory must exist.
        strict: raise MergeError on mismatched inputs (same rank twice,
            world sizes that disagree, one window given twice); False turns
            these into warnings.
        include_flows: keep the CUDA launch -> GPU work arrows.

    Returns:
        a MergeReport: the output path, the wall-clock time of ts 0, and per
        input its name, rank, pid in the merged file and time shift.

    Raises:
        MergeError: an input is missing, unreadable, damaged, not written
            by profkit, already merged, or (strict) mismatched; the message
            names the file (and the line of a damaged Chrome input). Or the
            output is named ``.pktrace``, or is one of the inputs.
        OSError: the output cannot be written (FileNotFoundError: its
            directory does not exist); the message names the output.
    """
    pairs = normalize_inputs(inputs)
    if not pairs:
        raise MergeError("merge: no inputs; give one or more NAME=FILE (or FILE) arguments")
    output = os.fspath(output)
    target = _output_target(output)
    sources = _open_sources(pairs, output)
    try:
        _names(sources)
        problems = _check(sources, strict)
        for message in problems:
            warnings.warn(f"profkit merge: {message}", ProfilerWarning, stacklevel=2)
        base_wall_ns = min(s.meta["first_wall_ns"] for s in sources)
        if is_gzip_name(output):  # written plain, then compressed into place
            written_inputs: List[MergedInput] = []

            def write_plain(plain: bytes) -> None:
                written_inputs.extend(
                    _write_merged(output_file(os.fsdecode(plain)), sources, base_wall_ns, include_flows, problems)
                )

            write_gzipped(output, write_plain)
            merged = written_inputs
        else:
            merged = _write_merged(target, sources, base_wall_ns, include_flows, problems, shown=output)
    finally:
        _close(sources)
    return MergeReport(output=output, base_wall_ns=base_wall_ns, inputs=merged, warnings=problems)


# ---- the steps of merge_traces ----------------------------------------------------


def _output_target(output: str) -> OutputFile:
    """Where the merged file goes, refused up front when it cannot be written
    there: before any input is read."""
    if without_gzip_suffix(output).lower().endswith(PKTRACE_SUFFIX):  # in any case, as save() reads suffixes
        # Loaders tell formats by content, people by name: a .pktrace holding JSON misleads both.
        raise MergeError(
            f"merge: the output {output!r} is named .pktrace, but a merged timeline is Chrome trace JSON; "
            "name it .trace.json (or .json)"
        )
    try:
        target = output_file(output)
    except IsADirectoryError:
        # Otherwise the rename into place fails naming our temporary file, after every input was read.
        raise MergeError(
            f"merge: the output {output!r} is a directory; name the merged file, e.g. "
            f"{os.path.join(output, 'merged.trace.json')!r}"
        ) from None
    check_directory(output)  # FileNotFoundError: its directory is not created (as save's and export's)
    return target


def _open_sources(pairs: List[Tuple[Optional[str], str]], output: str) -> List[Source]:
    """Every input opened (its facts read, not its events); none may be the output.
    On an error, the ones opened so far are closed (their decompressed copies removed)."""
    sources: List[Source] = []
    try:
        for name, path in pairs:
            sources.append(Source(name, path))
        for s in sources:
            if os.path.exists(output) and os.path.samefile(s.path, output):
                raise MergeError(f"merge: the output {output!r} is also an input; write the merged timeline elsewhere")
    except BaseException:
        _close(sources)
        raise
    return sources


def _close(sources: List[Source]) -> None:
    for s in sources:
        s.close()


def _write_merged(
    target: OutputFile,
    sources: List[Source],
    base_wall_ns: int,
    include_flows: bool,
    problems: List[str],
    shown: Optional[str] = None,
) -> List[MergedInput]:
    """Writes the merged file (temp file + rename): every input's events in
    turn, then the metadata. Returns what each input contributed.

    With ``shown`` (the output as given), an OSError says "cannot write
    SHOWN: why", of the same OSError subclass: the scratch directory and
    the temporary are ours, not the user's to look for. Without it (a plain
    file compressed afterwards) the caller names the file."""
    try:
        # Decoded .pktrace inputs, next to the output where there is room for it
        # (not /dev's for /dev/stdout).
        scratch = tempfile.mkdtemp(dir=None if target.in_place else target.directory, prefix=".merge-")
        try:
            with written(target) as out:
                out.write(HEADER)
                merged = _write_inputs(Writer(out), sources, scratch, base_wall_ns, include_flows)
                out.write(FOOTER)
                out.write(_metadata(base_wall_ns, merged, problems))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except OSError as e:
        if shown is None:
            raise
        why = os.strerror(e.errno) if e.errno else str(e)
        message = f"cannot write {shown!r}: {why}"
        raise (OSError(e.errno, message) if e.errno else type(e)(message)) from e  # OSError(errno, ...): its subclass
    return merged


def _write_inputs(
    writer: Writer, sources: List[Source], scratch: str, base_wall_ns: int, include_flows: bool
) -> List[MergedInput]:
    """Each input's events, placed where no other input's pids, flow ids or
    process sort indexes are."""
    pids = _Pids()
    merged: List[MergedInput] = []
    flow_offset = 0
    for k, s in enumerate(sources):
        assert s.name is not None
        placed = {
            "pid_delta": pids.place(s.pids),
            "flow_offset": flow_offset,
            "prefix": f"{s.name}: ",
            "sort_offset": k * _SORT_INDEX_STRIDE,
            "include_flows": include_flows,
        }
        shift = s.meta["first_wall_ns"] - base_wall_ns
        lines, flow_offset = _write_input(s, writer, scratch, base_wall_ns, shift, placed)
        merged.append(_merged_input(s, placed["pid_delta"], shift, lines))
    return merged


def _write_input(
    s: Source, writer: Writer, scratch: str, base_wall_ns: int, shift: int, placed: Dict[str, Any]
) -> Tuple[int, int]:
    """One input's events where `placed` says; returns the trace events
    written and the flow id offset of the next input."""
    if s.is_pktrace:
        lines = write_pktrace(s, writer, scratch, base_wall_ns, placed)
        return lines, placed["flow_offset"] + s.meta["flow_ids"]
    rewriter = LineRewriter(placed["prefix"], shift, placed["pid_delta"], placed["flow_offset"], placed["sort_offset"])
    lines = write_chrome(s, writer, rewriter, placed["include_flows"])
    return lines, max(placed["flow_offset"], rewriter.max_flow_id)


def _merged_input(s: Source, pid_delta: int, shift: int, lines: int) -> MergedInput:
    assert s.name is not None
    return MergedInput(
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


def _metadata(base_wall_ns: int, merged: List[MergedInput], problems: List[str]) -> bytes:
    """The merged file's "profkit" object and the document's closing brace."""
    metadata = {
        "profkit_version": _C.version(),
        "base_wall_ns": base_wall_ns,
        "merged_from": [dict(asdict(m), path=display_text(m.path)) for m in merged],
        "warnings": problems,
    }
    return json.dumps(metadata, ensure_ascii=False).encode("utf-8") + b"}\n"
