"""The ranks of a distributed job side by side (``profkit summary --ranks``).

    summary = profkit.cross_rank_summary(["rank0.pktrace", "rank1.pktrace"])
    print(summary)                      # one row per rank, the slowest named
    summary.slowest.rank, summary.to_pandas()

Per rank, per recorded step on average (each rank's recording window may
hold a different number of steps):

- Steps, Step Time: the steps and their time as the rank's Model Summary
  counts them (its ProfileStep row, computed by the engine): a user's range
  of type ProfileStep inside a step is part of that step and an instant mark
  is none, and the step that ``stop()`` ends is one (SPEC §3), whose time
  the figures below count too; with no step of positive length, the
  recorded span and no steps;
- Computation, Communication, Overlap: the rank's Distributed Summary
  (SPEC §6, computed by the engine): Communication = Communication events
  and their GPU work, overlaps counted once; Computation = non-communication
  GPU kernels, or on a rank with no kernels (CPU training, gloo) its host
  compute time (see the Distributed Summary's note); Overlap = time in both;
- Other: step time in neither (data loading, Python, unmarked waits);
- Comm MB: bytes moved by the rank's collectives (their ``bytes`` argument).

The slowest rank is the one with the longest step time (none when every rank
takes the same time; the first in rank order among ties). In a synchronous job
every rank waits for the slowest at each collective, so step times end up
close; the straggler shows as the rank with the most computation and the
least communication (the others wait for it inside their collectives), and
the summary names it when the figures agree.

Thread-safety: the functions are pure; a CrossRankSummary is immutable.
"""

import os
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from . import _C, _records, _summary
from ._merge_sources import display_text
from ._warnings import ProfilerWarning
from .integrations._collective_calls import DDP_WAIT_NAME
from .integrations._collectives_in_flight import IN_FLIGHT_SUFFIX
from .result import ProfilerResult, load_profiler_result

__all__ = ["cross_rank_summary", "CrossRankSummary", "RankFigures"]

_COMMUNICATION = 12
_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
# How far a rank's figures must stand out from every other rank's before the
# summary names it a straggler: ranks doing the same work differ by noise,
# and a tie (or no computation at all) points at nobody.
_STANDS_OUT = 0.05


@dataclass(frozen=True)
class RankFigures:
    """One rank's figures; times in ns per step (see the module docstring)."""

    name: str
    rank: int  # -1 unknown
    world_size: int
    steps: int  # the Model Summary's ProfileStep calls (0: figures are for the whole window)
    step_ns: float
    computation_ns: Optional[float]  # None: the rank recorded no communication
    communication_ns: float
    overlap_ns: float
    other_ns: float
    comm_bytes: float  # per step
    collectives: float  # Communication calls per step (async in-flight lanes and DDP's wait marker not counted)
    computation_note: str
    source: str  # the file, or "" for a result given directly
    # What the rank's recording lost (events still open at the window's end,
    # the memory cap...): the summary tables' "Warning: ..." lines.
    warnings: Tuple[str, ...] = ()


@dataclass(frozen=True)
class CrossRankSummary:
    """Every rank's figures, the slowest rank, and a text table (``str()``).

    ``slowest`` and ``fastest`` are distinct ranks, or both None when every
    rank's step time is the same (or there are no ranks)."""

    ranks: List[RankFigures]
    slowest: Optional[RankFigures]
    fastest: Optional[RankFigures]
    most_computation: Optional[RankFigures]

    def to_dict(self) -> Dict[str, Any]:
        """Plain data (for JSON): ranks as dicts, the slowest rank's name."""
        return {
            "ranks": [asdict(r) for r in self.ranks],
            "slowest": self.slowest.name if self.slowest else None,
            "fastest": self.fastest.name if self.fastest else None,
            "most_computation": self.most_computation.name if self.most_computation else None,
        }

    def to_pandas(self):
        """One row per rank (ns per step). Needs pandas."""
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("CrossRankSummary.to_pandas() needs pandas: pip install pandas") from error
        return pd.DataFrame([asdict(r) for r in self.ranks])

    def text(self, time_unit: str = "ms") -> str:
        """The table, laid out like the summary tables."""
        _summary.check_time_unit(time_unit)  # the summary tables' units, and their message
        scale = _UNITS[time_unit]
        header = ["Name", "Rank", "Steps", "Step Time", "Computation", "Communication", "Overlap", "Other", "Comm MB"]

        def t(ns: Optional[float]) -> str:
            return "-" if ns is None else f"{ns / scale:.2f}"

        rows = []
        for r in self.ranks:
            rank = "?" if r.rank < 0 else (f"{r.rank}/{r.world_size}" if r.world_size > 0 else str(r.rank))
            mark = " *" if self.slowest is not None and r is self.slowest and len(self.ranks) > 1 else ""
            rows.append(
                [
                    r.name + mark,
                    rank,
                    str(r.steps) if r.steps else "-",
                    t(r.step_ns),
                    t(r.computation_ns),
                    t(r.communication_ns),
                    t(r.overlap_ns),
                    t(r.other_ns),
                    f"{r.comm_bytes / 1e6:.2f}",
                ]
            )
        widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
        rule = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [f"Cross-rank Summary (per step, time unit: {time_unit})", rule, line(header), rule]
        out.extend(line(row) for row in rows)
        out.append(rule)
        out.extend(self._findings(scale, time_unit))
        for r in self.ranks:
            out.extend(f"Warning: {r.name}: {w}" for w in r.warnings)
        notes = sorted({r.computation_note for r in self.ranks if r.computation_note})
        out.extend(f"Note: {n}" for n in notes)
        return "\n".join(out) + "\n"

    def _findings(self, scale: float, unit: str) -> List[str]:
        if not self.ranks:
            return ["No ranks."]
        if len(self.ranks) == 1:
            return []
        slow, fast = self.slowest, self.fastest
        lines: List[str] = []
        if slow is None or fast is None or slow is fast:
            step = self.ranks[0].step_ns
            if all(r.step_ns == step for r in self.ranks):
                # No rank is slower than another, though one may still compute
                # clearly more while the others wait for it (below).
                lines.append(f"Every rank takes the same time per step ({step / scale:.2f} {unit}): no slowest rank.")
        else:
            if fast.step_ns > 0:
                spread = f"{(slow.step_ns - fast.step_ns) / fast.step_ns * 100:.1f}% over the fastest"
            else:  # a rank with no step time: no ratio to give
                spread = "against the fastest"
            lines = [
                f"Slowest rank (*): {slow.name} at {slow.step_ns / scale:.2f} {unit} per step, "
                f"{spread} ({fast.name}, {fast.step_ns / scale:.2f} {unit})."
            ]
        busy = self.most_computation
        if busy is None or busy.computation_ns is None:
            return lines
        others = [r for r in self.ranks if r is not busy]
        if not _computes_the_most(busy, others):
            return lines  # a tie, or no computation: nobody stands out
        low = min(r.communication_ns for r in others) / scale
        high = max(r.communication_ns for r in others) / scale
        waits = f"{low:.2f}" if len(others) == 1 else f"{low:.2f}-{high:.2f}"
        if all(busy.communication_ns < r.communication_ns * (1 - _STANDS_OUT) for r in others):
            lines.append(
                f"Likely straggler: {busy.name} computes the most ({busy.computation_ns / scale:.2f} {unit} per "
                f"step) and spends the least time in communication ({busy.communication_ns / scale:.2f} {unit}); "
                f"the other ranks wait for it inside their collectives ({waits} {unit})."
            )
        else:
            lines.append(f"Most computation: {busy.name} ({busy.computation_ns / scale:.2f} {unit} per step).")
        return lines

    def __str__(self) -> str:
        return self.text()


def _computes_the_most(busy: RankFigures, others: Sequence[RankFigures]) -> bool:
    """Whether `busy` computes clearly more than every other rank."""
    most = busy.computation_ns or 0.0
    return most > 0 and all(most > (r.computation_ns or 0.0) * (1 + _STANDS_OUT) for r in others)


def _as_result(source: Any) -> "tuple[_C.Result, str]":
    if isinstance(source, ProfilerResult):
        return source.raw, source.path or ""
    if isinstance(source, _C.Result):
        return source, ""
    path = os.fspath(source)
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"cross_rank_summary: {path!r} is a directory, not a trace file (.pktrace or .trace.json)"
        )
    # As load_profiler_result reads it (gzip-compressed or not, told by the
    # content), and with its errors, which name the file: re-raised as
    # type(e)(text), an OSError lost its errno and said the name three times.
    return load_profiler_result(path).raw, path


def _default_name(info: Dict[str, Any], path: str, index: int) -> str:
    if info["rank"] >= 0:
        return f"rank{info['rank']}"
    if path:
        base = display_text(os.path.basename(path))  # printed: UTF-8 even when the file name is not
        # The same stems as profkit merge gives: a rank's .pktrace and .trace.json get one name.
        for suffix in (".pktrace", ".trace.json", ".json"):
            if base.endswith(suffix) and len(base) > len(suffix):
                return base[: -len(suffix)]
        return base
    return f"trace{index}"


def _model_steps(model: "_summary.SummaryTable") -> Tuple[int, float]:
    """The calls and total time (ns) of the Model Summary's ProfileStep row;
    0, 0.0 without one.

    The engine's count, not the ProfileStep events: it leaves out what is no
    step of its own (a user's RecordEvent of type ProfileStep inside a step,
    an instant mark), so the summary tables and this row agree. It includes
    the step that ``stop()`` ends, as the Model Summary does: the Perf
    Summary, which times the steps ``step()`` closed, counts one fewer for a
    window that ``stop()`` ended, but the trace cannot tell that step from
    the others, and its time is in the Distributed Summary's figures divided
    here by the same steps."""
    for row, level in zip(model.rows, model.levels):
        if level == 0 and row[0] == "ProfileStep":
            cells = dict(zip(model.columns, row))
            return int(cells["Calls"] or 0), float(cells["CPU Total"] or 0.0)
    return 0, 0.0


def rank_figures(result: "_C.Result", name: str, source: str = "") -> RankFigures:
    """One rank's figures from its collected or loaded result."""
    info = result.info()
    host = _records.view(result.host_events, _records.HOST_EVENT)
    # One engine pass for both tables (they share the walk over the events).
    tables = _summary.summary_data(result, views=["DistributedView", "ModelView"], time_unit="ns")
    steps, step_total = _model_steps(tables["ModelView"])
    if step_total <= 0:
        steps = 0
        step_total = float(max(int(info["end_ns"]) - int(info["start_ns"]), 0))
    per = max(steps, 1)

    table = tables["DistributedView"]
    values = {row[0]: float(row[1] or 0.0) for row in table.rows}
    has_communication = bool(table.rows)
    communication = values.get("Communication", 0.0)
    computation = values.get("Computation") if has_communication else None
    overlap = values.get("Overlap", 0.0)
    busy = communication + (computation or 0.0) - overlap
    # The table's notes start with the recording's losses ("Warning: ..."),
    # then say what Computation means: the note is the latter, the losses are
    # shown as warnings of their own.
    losses = tuple(n[len("Warning: "):] for n in table.notes if n.startswith("Warning: "))
    note = next((n for n in table.notes if not n.startswith("Warning: ")), "")

    strings = result.strings()
    comm_mask = host["type"] == _COMMUNICATION
    if comm_mask.any():
        # Neither an async call's in-flight copy nor DDP's wait marker is a call of its own.
        not_calls = np.array([s.endswith(IN_FLIGHT_SUFFIX) or s == DDP_WAIT_NAME for s in strings], dtype=bool)
        calls_mask = comm_mask & ~not_calls[host["name"]]
    else:
        calls_mask = comm_mask
    comm_bytes = 0.0
    if "bytes" in strings and calls_mask.any():
        key = strings.index("bytes")
        args = _records.view(result.event_args, _records.EVENT_ARG)
        wanted = (args["key"] == key) & (args["kind"] == 0)  # PK_ARG_INT
        events = args["event"][wanted].astype(np.int64)
        ok = events < len(host)
        chosen = calls_mask[events[ok]]
        comm_bytes = float(args["value"][wanted][ok][chosen].sum())
    return RankFigures(
        name=name,
        rank=int(info["rank"]),
        world_size=int(info["world_size"]),
        steps=steps,
        step_ns=step_total / per,
        computation_ns=None if computation is None else computation / per,
        communication_ns=communication / per,
        overlap_ns=overlap / per,
        other_ns=max(step_total - busy, 0.0) / per,
        comm_bytes=comm_bytes / per,
        collectives=float(calls_mask.sum()) / per,
        computation_note=note,
        source=source,
        warnings=losses,
    )


def cross_rank_summary(
    sources: Iterable[Union[str, "os.PathLike[str]", Any]], names: Optional[Sequence[Optional[str]]] = None
) -> CrossRankSummary:
    """Figures per rank and the slowest rank, from each rank's trace.

    Args:
        sources: ``.pktrace`` paths (or ``.trace.json`` files profkit wrote),
            ProfilerResults or ``profkit._C.Result`` objects, one per rank.
        names: one name per source (None for the default); default
            ``rank{r}`` (or the file's name without its suffix when the rank
            is unknown).

    Rows are ordered by rank (unknown ranks last, in the order given).
    """
    if isinstance(sources, (str, bytes, os.PathLike)) or not isinstance(sources, Iterable):
        # A single path would otherwise be read one character at a time.
        raise TypeError(
            "cross_rank_summary: sources must be a list of traces, one per rank (.pktrace paths or results), "
            f"not {type(sources).__name__}; for one trace, pass [trace]"
        )
    sources = list(sources)
    if names is not None and len(names) != len(sources):
        raise ValueError(f"cross_rank_summary: {len(names)} names for {len(sources)} sources")
    _refuse_duplicate_names(names)
    taken: Set[str] = {name for name in names or () if name is not None}
    figures = []
    for index, source in enumerate(sources):
        # One trace in memory at a time: a job's ranks together can be far
        # more than the machine holds (64 ranks of 1 GB each).
        result, path = _as_result(source)
        given = names[index] if names is not None else None
        name = given if given is not None else _unused(_default_name(result.info(), path, index), taken)
        taken.add(name)
        figures.append(rank_figures(result, name, path))
        del result
    _warn_duplicate_ranks(figures)
    figures.sort(key=lambda r: (r.rank < 0, r.rank if r.rank >= 0 else 0))
    slowest, fastest = _slowest_and_fastest(figures)
    computing = [r for r in figures if r.computation_ns is not None]
    most = max(computing, key=lambda r: r.computation_ns or 0.0) if len(computing) > 1 else None
    return CrossRankSummary(ranks=figures, slowest=slowest, fastest=fastest, most_computation=most)


def _unused(name: str, taken: Set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... when taken (two traces claiming
    one rank), as profkit merge names them: rows of one name could not be
    told apart in the findings."""
    k = 1
    candidate = name
    while candidate in taken:
        k += 1
        candidate = f"{name}-{k}"
    return candidate


def _refuse_duplicate_names(names: Optional[Sequence[Optional[str]]]) -> None:
    """Two rows of one name could not be told apart ("slowest rank: x, ...
    fastest (x)"): refused, as profkit merge refuses them."""
    given = [name for name in names or () if name is not None]
    repeated = sorted({name for name in given if given.count(name) > 1})
    if repeated:
        raise ValueError(
            f"cross_rank_summary: the name {repeated[0]!r} is given to more than one trace; give each rank its own"
        )


def _slowest_and_fastest(figures: Sequence[RankFigures]) -> Tuple[Optional[RankFigures], Optional[RankFigures]]:
    """The ranks with the longest and the shortest step time (the first in
    rank order among ties), or None for both when every rank takes the same
    time: one rank would otherwise be named both slowest and fastest."""
    if not figures:
        return None, None
    slowest = max(figures, key=lambda r: r.step_ns)
    fastest = min(figures, key=lambda r: r.step_ns)
    if slowest.step_ns == fastest.step_ns and len(figures) > 1:
        return None, None
    return slowest, fastest


def _warn_duplicate_ranks(figures: Sequence[RankFigures]) -> None:
    """Two traces of one rank (two windows, or one file given twice) are not
    two ranks: their rows would skew the comparison. A warning, not an
    error: comparing windows of one rank can be what the user wants."""
    seen: Dict[Tuple[int, int], RankFigures] = {}
    for r in figures:
        if r.rank < 0:
            continue
        key = (r.rank, r.world_size)
        first = seen.setdefault(key, r)
        if first is not r:
            warnings.warn(
                f"cross_rank_summary: {first.source or first.name!r} and {r.source or r.name!r} both claim rank "
                f"{r.rank} of world size {r.world_size}; give one trace per rank (rows {first.name!r} and "
                f"{r.name!r} are the same rank)",
                ProfilerWarning,
                stacklevel=3,
            )
