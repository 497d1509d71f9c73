"""The ``profkit`` command line (also ``python -m profkit``).

    profkit info FILE.pktrace                  run facts, events per type, span, dropped counts
    profkit export FILE.pktrace [-o OUT.trace.json] [--label-durations] [--no-flows]
    profkit export FILE.trace.json [-o OUT.pktrace]   a profkit Chrome trace as a compact .pktrace
    profkit stacks FILE.pktrace [-o OUT.stacks] [--metric self_cpu_time_total]   folded stacks for a flame graph
    profkit summary FILE.pktrace [--sorted-by CPUTotal] [--time-unit ms] [--views OverView,ModelView] [--json]
    profkit summary --ranks [NAME=]FILE.pktrace ...   the ranks of a distributed job side by side
    profkit merge [NAME=]FILE ... -o OUT.trace.json    one timeline from several processes' traces

FILE is a .pktrace or a Chrome trace profkit wrote (.trace.json).

Exit status 0 on success; on bad input 1 (a file that cannot be read or
written) or 2 (a bad command line), with one line on stderr:
``profkit: error: ...``. Interrupted: 130 (Ctrl-C) or 143 (SIGTERM), with a
line on stderr and no temporary file left behind.
"""

import argparse
import dataclasses
import io
import json
import os
import shlex
import signal
import stat
import sys
import threading
import warnings
from types import FrameType
from typing import Any, List, NoReturn, Optional, Sequence, Tuple

from ._enums import SortedKeys, SummaryView
from ._gzip_files import is_gzip_name, without_gzip_suffix
from ._output_files import check_directory
from ._summary import _STACK_FRAMES_MAX, TIME_UNITS, SummaryOptions, summary_data, summary_text
from .export_callbacks import CHROME_SUFFIX, PKTRACE_SUFFIX
from .result import STACKS_METRICS

STACKS_SUFFIX = ".stacks"

__all__ = ["main"]


class _UsageError(Exception):
    pass


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` and
    ``with`` on the way out runs (temporary files removed), as for Ctrl-C.
    A BaseException, like KeyboardInterrupt: no ``except Exception`` takes it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        raise _UsageError(f"{message} (see 'profkit --help')")


def _view_names(text: str) -> List[str]:
    """``--views OverView,ModelView``: one option value may name several tables."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = [v.name for v in SummaryView]
    for name in names or [text]:
        if name not in known:
            raise argparse.ArgumentTypeError(f"unknown view {name!r} (choose from {', '.join(known)})")
    return names


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def _stack_frames(text: str) -> int:
    """--group-by-stack-n: 1 to summary()'s most, checked by argparse, before
    the file loads (summary() refused a larger N only after loading it, an
    exit status 1, the one for a file that cannot be read)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= _STACK_FRAMES_MAX:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {_STACK_FRAMES_MAX}, got {text!r}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="profkit", description="Inspect, convert and merge profkit trace files (.pktrace, or profkit's .trace.json).")
    parser.add_argument("--version", action="version", version=f"profkit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    info = commands.add_parser("info", help="run facts, events per type, time span, dropped counts")
    info.add_argument("file", help="a .pktrace file (or a .trace.json profkit wrote)")
    info.add_argument("--json", action="store_true", help="print the facts as JSON")

    export = commands.add_parser(
        "export", help="write a .pktrace file as Chrome trace JSON, or a profkit .trace.json as a .pktrace"
    )
    export.add_argument("file", help="a .pktrace file (or a .trace.json profkit wrote)")
    export.add_argument(
        "-o",
        "--output",
        help="the file to write: a .pktrace output is the compact format, anything else Chrome JSON "
        "(default: FILE as .trace.json, or a .trace.json FILE as .pktrace); an existing file is replaced",
    )
    export.add_argument("--label-durations", action="store_true", help="append each event's duration to its name")
    export.add_argument("--no-flows", action="store_true", help="leave out launch -> GPU flow arrows")

    stacks = commands.add_parser(
        "stacks", help="write folded stacks for a flame graph (flamegraph.pl, speedscope.app), as torch's export_stacks"
    )
    stacks.add_argument("file", help="a .pktrace file (or a .trace.json profkit wrote)")
    stacks.add_argument(
        "-o",
        "--output",
        help="the file to write (default: FILE as .stacks, beside it); an existing file is replaced",
    )
    stacks.add_argument(
        "--metric",
        default="self_cpu_time_total",
        choices=list(STACKS_METRICS),
        help="self_cpu_time_total (default): host events' self time; self_device_time_total (or its torch name "
        "self_cuda_time_total): GPU work under the call that launched it",
    )

    summary = commands.add_parser("summary", help="print the summary tables (or, with --ranks, the cross-rank view)")
    summary.add_argument("files", nargs="+", metavar="FILE", help="a .pktrace or profkit .trace.json file (with --ranks: one per rank)")
    summary.add_argument(
        "--ranks", action="store_true", help="compare ranks: step time, computation, communication, overlap per rank"
    )
    summary.add_argument(
        "--json", action="store_true", help="print the tables' rows (with --ranks: the per-rank figures) as JSON"
    )
    summary.add_argument(
        "--sorted-by",
        choices=[k.name for k in SortedKeys],
        help=f"operator table order (default {SummaryOptions.sorted_by.name})",
    )
    summary.add_argument("--time-unit", default=SummaryOptions.time_unit, choices=TIME_UNITS)
    summary.add_argument(
        "--views",
        action="append",
        type=_view_names,
        metavar="VIEW[,VIEW...]",
        help="tables to print, comma-separated or repeated: " + ", ".join(v.name for v in SummaryView),
    )
    summary.add_argument("--no-op-detail", action="store_true", help="leave out operators' inner events")
    summary.add_argument("--thread-sep", action="store_true", help="split the operator table by thread")
    summary.add_argument("--row-limit", type=_positive_int, metavar="N", help="at most N rows per table")
    summary.add_argument(
        "--group-by-input-shape",
        action="store_true",
        help="one operator row per input shapes (recorded with record_shapes=True)",
    )
    summary.add_argument(
        "--group-by-stack-n",
        type=_stack_frames,
        metavar="N",
        help="one operator row per source location: the innermost N Python frames around it (with_stack=True)",
    )

    merge = commands.add_parser("merge", help="merge several processes' traces into one Chrome trace timeline")
    merge.add_argument(
        "inputs", nargs="+", metavar="[NAME=]FILE", help="a .pktrace (or profkit .trace.json) file per process"
    )
    merge.add_argument("-o", "--output", required=True, help="the merged Chrome trace to write (.trace.json)")
    merge.add_argument(
        "--allow-mismatch", action="store_true", help="warn instead of failing on duplicate ranks or world sizes"
    )
    merge.add_argument("--no-flows", action="store_true", help="leave out launch -> GPU flow arrows")
    return parser


def _format_ns(ns: int) -> str:
    from .result import _format_ns as fmt

    return fmt(ns)


def _info(args: argparse.Namespace) -> None:
    from .result import RECORDING_LOSS_KEYS, load_profiler_result

    result = load_profiler_result(args.file)
    info = result.info
    counts = result.event_counts()
    if args.json:
        print(json.dumps({"file": args.file, "info": info, "event_counts": counts, "metadata": result.metadata}))
        return
    if info["rank"] < 0:
        rank = "rank unknown"
    elif info["world_size"] > 0:
        rank = f"rank {info['rank']} of {info['world_size']}"
    else:  # $RANK alone: no world size known
        rank = f"rank {info['rank']}"
    steps = (
        f"{info['first_step']}-{info['first_step'] + info['step_count'] - 1} ({_count(info['step_count'], 'step')})"
        if info["step_count"]
        else "none"
    )
    lines = [
        f"file:       {args.file}",
        f"profkit:    {info['profkit_version']} (schema {info['schema_version']})",
        f"host:       {info['hostname']}, pid {info['pid']}, {rank}",
        f"span:       #{info['span_index']}, {_format_ns(result.duration_ns)} "
        f"(engine clock {info['start_ns']} - {info['end_ns']} ns)",
        f"steps:      {steps}",
        f"threads:    {info['thread_count']}",
        f"events:     {info['host_event_count']} host, {info['device_event_count']} GPU",
    ]
    width = max((len(name) for name in counts), default=0)
    lines.extend(f"  {name:<{width}}  {count}" for name, count in counts.items())
    lines.append("not recorded: " + ", ".join(f"{key} {info[key]}" for key in RECORDING_LOSS_KEYS))
    for key, value in result.metadata.items():
        lines.append(f"metadata:   {key} = {value}")
    print("\n".join(lines))


def _has_suffix(path: str, suffix: str) -> bool:
    """Whether ``path`` ends in ``suffix`` in any case: ``X.PKTRACE`` and ``x.Json`` are named as their formats."""
    return path[-len(suffix) :].lower() == suffix


def _default_output(path: str) -> str:
    """x.pktrace -> x.trace.json; x.trace.json (or x.json) -> x.pktrace; anything else gets .trace.json.

    A compressed input (x.trace.json.gz) gives a plain output (x.pktrace)."""
    path = without_gzip_suffix(path)
    for json_suffix in (CHROME_SUFFIX, ".json"):
        if _has_suffix(path, json_suffix):
            return path[: -len(json_suffix)] + PKTRACE_SUFFIX
    stem = path[: -len(PKTRACE_SUFFIX)] if _has_suffix(path, PKTRACE_SUFFIX) else path
    return stem + CHROME_SUFFIX


def _default_stacks_output(path: str) -> str:
    """x.pktrace, x.trace.json or x.json (each maybe .gz) -> x.stacks; anything else gets .stacks added."""
    path = without_gzip_suffix(path)
    for suffix in (PKTRACE_SUFFIX, CHROME_SUFFIX, ".json"):
        if _has_suffix(path, suffix):
            return path[: -len(suffix)] + STACKS_SUFFIX
    return path + STACKS_SUFFIX


def _refuse_to_name_an_output_after(path: str) -> None:
    """Refuses, before reading it, an input that is no regular file
    (``<(...)``, a FIFO, /dev/stdin) when no ``-o`` was given: its name gives
    no output that can be written, and it can be read only once."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # missing or unreadable: loading says so
        return
    if not regular:
        raise _UsageError(f"{path!r} is not a regular file (a pipe?): give the file to write with -o OUT")


def _output_file(output: str) -> str:
    """``-o``'s value (``-``: standard output, written through the descriptor
    as it is: appended to with ``>>``), refused up front when it cannot name
    a file to write: FileNotFoundError when its directory does not exist (no
    command creates one, as the library's writers do not)."""
    if output == "-":
        return "/dev/stdout"
    if not output:
        raise _UsageError("-o/--output is empty; give the file to write")
    if os.path.isdir(output):
        example = os.path.join(output, "trace.json")
        raise _UsageError(f"-o/--output {output!r} is a directory; give a file path, e.g. {example!r}")
    check_directory(output)
    return output


def _refuse_own_input(path: str, output: str) -> None:
    """Refuses an output that is the input file itself (by file, not name):
    the input would be replaced by what is made from it."""
    try:
        same = os.path.samefile(path, output)
    except (OSError, ValueError):  # no output yet (or no input: loading says so)
        return
    if same:
        raise _UsageError(f"the output {output!r} is also the input; write it elsewhere (-o OTHER)")


def _say_written(output: str, text: str) -> None:
    """Prints the "wrote ..." note: on stdout, unless the trace itself went
    there (``-o -``, ``-o /dev/stdout``) or to a FIFO or device, where the
    note would be appended to the trace."""
    stream = sys.stdout
    try:
        written = os.stat(output)
        ours = os.fstat(sys.stdout.fileno())
        if not stat.S_ISREG(written.st_mode) or (written.st_dev, written.st_ino) == (ours.st_dev, ours.st_ino):
            stream = sys.stderr
    except (OSError, ValueError, io.UnsupportedOperation):  # no real stdout (captured): it is not the trace
        pass
    print(text, file=stream)


def _export(args: argparse.Namespace) -> None:
    from .result import load_profiler_result

    if args.output is None:
        _refuse_to_name_an_output_after(args.file)
        output = _default_output(args.file)
    else:
        output = _output_file(args.output)
    to_pktrace = _has_suffix(without_gzip_suffix(output), PKTRACE_SUFFIX)  # x.pktrace.gz: a compressed one
    if to_pktrace and (args.label_durations or args.no_flows):
        raise _UsageError("--label-durations and --no-flows shape Chrome JSON; a .pktrace output keeps everything")
    _refuse_own_input(args.file, output)
    result = load_profiler_result(args.file)
    if to_pktrace:
        result.save(output, format="pb")
        where = f"`profkit summary {output}` or load_profiler_result"
        _say_written(output, f"wrote {output} ({len(result)} host events); {where}")
        return
    result.export_chrome_tracing(output, label_durations=args.label_durations, include_flows=not args.no_flows)
    where = "open it in https://ui.perfetto.dev or chrome://tracing"
    _say_written(output, f"wrote {output} ({len(result)} host events); {where}")


def _stacks(args: argparse.Namespace) -> None:
    from .result import load_profiler_result

    if args.output is None:
        _refuse_to_name_an_output_after(args.file)
        output = _default_stacks_output(args.file)
    else:
        output = _output_file(args.output)
    _refuse_own_input(args.file, output)
    result = load_profiler_result(args.file)
    result.export_stacks(output, metric=args.metric)  # compressed when named .gz, as every output
    if args.output == "-" or not os.path.isfile(output):  # piped on (or a device): flamegraph.pl reads stdin
        command = "... | flamegraph.pl --countname us. > flame.svg"
    else:
        plain = without_gzip_suffix(output)
        stem = plain[: -len(STACKS_SUFFIX)] if _has_suffix(plain, STACKS_SUFFIX) else plain
        svg = shlex.quote(stem + ".svg")
        if is_gzip_name(output):
            command = f"gzip -dc {shlex.quote(output)} | flamegraph.pl --countname us. > {svg}"
        else:
            command = f"flamegraph.pl --countname us. {shlex.quote(output)} > {svg}"
    _say_written(
        output,
        f"wrote {output} ({args.metric} in microseconds); view it with `{command}` "
        "or open it in https://www.speedscope.app",
    )


def _summary(args: argparse.Namespace) -> None:
    if args.ranks:
        _summary_ranks(args)
        return
    if len(args.files) > 1:
        raise _UsageError(f"summary takes one FILE ({len(args.files)} given); compare ranks with --ranks FILE ...")
    from .result import load_profiler_result

    result = load_profiler_result(args.files[0]).raw
    views = [SummaryView[v] for values in args.views for v in values] if args.views else None
    options = SummaryOptions(
        sorted_by=SortedKeys[args.sorted_by] if args.sorted_by else SummaryOptions.sorted_by,
        op_detail=not args.no_op_detail,
        thread_sep=args.thread_sep,
        time_unit=args.time_unit,
        views=views,
        row_limit=args.row_limit,
        group_by_input_shape=args.group_by_input_shape,
        group_by_stack_n=args.group_by_stack_n or 0,
    )
    if args.json:
        tables = summary_data(result, options)
        print(json.dumps({view: dataclasses.asdict(table) for view, table in tables.items()}))
    else:
        print(summary_text(result, options))


# The flag of each SummaryOptions field but time_unit: the tables' options,
# which the cross-rank view has no use for (test_summary_options holds this
# to the fields).
_TABLE_OPTIONS = {
    "sorted_by": "--sorted-by",
    "views": "--views",
    "op_detail": "--no-op-detail",
    "thread_sep": "--thread-sep",
    "row_limit": "--row-limit",
    "group_by_input_shape": "--group-by-input-shape",
    "group_by_stack_n": "--group-by-stack-n",
}


def _flag_given(args: argparse.Namespace, flag: str) -> bool:
    return getattr(args, flag.lstrip("-").replace("-", "_")) not in (None, False)


def _summary_ranks(args: argparse.Namespace) -> None:
    from .cross_rank import cross_rank_summary

    # Refused rather than ignored: a user who asked for them would otherwise
    # read the cross-rank view as if they had applied.
    given = [flag for flag in _TABLE_OPTIONS.values() if _flag_given(args, flag)]
    if given:
        raise _UsageError(
            f"summary --ranks prints one row per rank and takes none of the tables' options ({', '.join(given)}); "
            "only --time-unit and --json apply. Give one FILE without --ranks for the tables."
        )

    pairs = _named_inputs(args.files, "summary --ranks")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # A FILE without NAME= gets the default name; the names given are kept.
        summary = cross_rank_summary([path for _, path in pairs], names=[name for name, _ in pairs])
    _print_warnings(caught)
    if args.json:
        print(json.dumps(summary.to_dict()))
    else:
        print(summary.text(args.time_unit), end="")


def _named_inputs(arguments: List[str], command: str) -> List[Tuple[Optional[str], str]]:
    """``[NAME=]FILE`` arguments as (name or None, path); a malformed one is a
    command-line error (exit 2), named for ``command``."""
    from .merge import MergeError, parse_merge_inputs

    try:
        return parse_merge_inputs(arguments)
    except MergeError as e:
        raise _UsageError(f"{command}: {str(e).replace('merge: ', '', 1)}") from None


def _merge(args: argparse.Namespace) -> None:
    from .merge import merge_traces

    output = _output_file(args.output)
    if _has_suffix(without_gzip_suffix(output), PKTRACE_SUFFIX):
        raise _UsageError(
            f"merge writes Chrome trace JSON, not a .pktrace: name the output .trace.json (or .json), "
            f"not {args.output!r}"
        )
    inputs = _named_inputs(args.inputs, "merge")
    for _, path in inputs:
        _refuse_own_input(path, output)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = merge_traces(inputs, output, strict=not args.allow_mismatch, include_flows=not args.no_flows)
    _print_warnings(caught)
    names = ", ".join(i.name for i in report.inputs)
    _say_written(
        report.output,
        f"wrote {report.output}: {_count(len(report.inputs), 'process', 'processes')} ({names}), "
        f"{_count(report.events, 'trace event')}; "
        "open it in https://ui.perfetto.dev or chrome://tracing",
    )


def _count(n: int, one: str, many: Optional[str] = None) -> str:
    """``1 step``, ``2 steps``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _print_warnings(caught: List[warnings.WarningMessage]) -> None:
    """Warnings as the command line's one-line messages on stderr."""
    for w in caught:
        text = _one_line(w.message)
        print(f"profkit: warning: {text}", file=sys.stderr)


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    if isinstance(error, OSError) and error.errno and error.strerror:
        # The engine's message names the file and the cause: "[Errno 13] " and the file again add nothing.
        if error.filename is None or os.fsdecode(error.filename) in error.strerror:
            text = error.strerror
    text = " ".join(text.split())
    # The line begins "profkit: error: " already; a message of the library's
    # that carries its own prefix would say it twice, and one that names the
    # Python function it came from names none the user called.
    for prefix in ("profkit: ", "profkit merge: ", "load_profiler_result: ", "cross_rank_summary: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _raise_terminated(signum: int, frame: Optional[FrameType]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise _Terminated()


def _on_sigterm_exit() -> Any:
    """Makes SIGTERM end the command as Ctrl-C does (see _Terminated);
    returns the handler to put back, or None where none was installed (not
    the main thread). Only the command line does this: the library leaves
    its host's signals alone."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN:  # `nohup`-style callers asked for it to be ignored
        return None
    signal.signal(signal.SIGTERM, _raise_terminated)
    return signal.SIG_DFL if previous is None else previous


def _escape_what_the_terminal_cannot_show() -> List[Tuple[Any, str]]:
    """Sets stdout and stderr to write what their encoding cannot (an event
    named größe under LANG=C) as backslash escapes, instead of failing the
    whole command; returns what to put back."""
    restore = []
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        errors = getattr(stream, "errors", None)
        if reconfigure is None or errors is None or errors != "strict":
            continue
        try:
            reconfigure(errors="backslashreplace")
            restore.append((stream, errors))
        except (ValueError, io.UnsupportedOperation):  # pragma: no cover - a stream already written in another way
            pass
    return restore


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    previous = _on_sigterm_exit()
    escaped = _escape_what_the_terminal_cannot_show()
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("profkit: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except _Terminated:
        print("profkit: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        for stream, errors in escaped:
            stream.reconfigure(errors=errors)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(argv: Optional[Sequence[str]]) -> int:
    parser = _build_parser()
    arguments: List[str] = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(arguments)
    except _UsageError as e:
        print(f"profkit: error: {_one_line(e)}", file=sys.stderr)
        return 2
    handlers = {"info": _info, "export": _export, "stacks": _stacks, "summary": _summary, "merge": _merge}
    try:
        handlers[args.command](args)
    except BrokenPipeError:  # pragma: no cover - `profkit info x | head`
        return 0
    except _UsageError as e:
        print(f"profkit: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except (OSError, ValueError, RuntimeError, ImportError) as e:
        print(f"profkit: error: {_one_line(e)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
