"""Writing each input of ``profkit merge`` into the merged file: ``.pktrace``
inputs exported by the engine straight into place and copied in blocks,
profkit Chrome JSON inputs rewritten line by line. See ``profkit.merge``.
"""

import json
import mmap
import os
import re
import sys
from typing import IO, Any, Callable, Dict, List, Sequence, Union

from ._merge_sources import FOOTER, HEADER, MergeError, Source, engine_path, not_json

_COPY_BLOCK = 16 << 20
_FLOW_PHASES = ('{"ph":"s"', '{"ph":"t"', '{"ph":"f"')

# ---- checking what is copied -------------------------------------------------------
# A damaged input must not give a merged file that is not JSON, so every line
# written is checked. json.loads of each block would more than double the time
# of a Chrome merge (bench_merge.py); instead one regular expression, run once
# per block in C, accepts the JSON objects profkit writes (flat values; args an
# object of flat values or arrays of numbers), and only a block it refuses
# (damage, or JSON laid out another way) is judged by json.loads, line by line.
_STRING = r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_NUMBER = r"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+"
_VALUE = f"(?>{_STRING}|{_NUMBER}|true|false|null)"
_ARRAY = f"\\[(?:{_NUMBER}(?:,{_NUMBER})*+)?+\\]"
_ARGS = f"\\{{(?:{_STRING}:(?>{_VALUE}|{_ARRAY})(?:,{_STRING}:(?>{_VALUE}|{_ARRAY}))*+)?+\\}}"
# Most lines: a complete event as the exporter writes it (key order, a plain
# category, unsigned numbers), tried first because it is the fastest to match.
_UNSIGNED = r"(?:0|[1-9][0-9]*+)"
_MICROSECONDS = _UNSIGNED + r"\.[0-9]++"
_COMPLETE = (
    f'\\{{"ph":"X","cat":"[A-Za-z]++","name":{_STRING},"ts":{_MICROSECONDS},"dur":{_MICROSECONDS},'
    f'"pid":{_UNSIGNED},"tid":{_UNSIGNED}(?:,"args":{_ARGS})?+\\}}'
)
_OBJECT = f"\\{{{_STRING}:(?>{_VALUE}|{_ARGS})(?:,{_STRING}:(?>{_VALUE}|{_ARGS}))*+\\}}"
_LINE = f"(?>{_COMPLETE}|{_OBJECT})"


def without_possessives(pattern: str) -> str:
    """``pattern`` with plain quantifiers and groups in place of possessive
    ones and atomic groups, which Python's ``re`` has only since 3.11.

    They keep the engine from backtracking into what a token has matched, so a
    damaged block is refused in one pass. Without them the patterns here
    accept the same lines: every token is followed by a character it cannot
    hold (a quote, a comma, a colon, a bracket, the newline), so giving back
    part of a match never lets one go on. Only a refused block may take longer
    before json.loads judges it. (A text replacement, right for these patterns:
    none of the replaced pairs occurs in them as literal text.)"""
    return pattern.replace("(?>", "(?:").replace("*+", "*").replace("++", "+").replace("?+", "?")


def _compile(pattern: str) -> "re.Pattern[str]":
    return re.compile(pattern if sys.version_info >= (3, 11) else without_possessives(pattern))


_ONE_LINE = _compile(_LINE)
_LINES = _compile(f"(?:{_LINE},\\n)*+{_LINE}")
# Bytes of a Chrome input read, rewritten and checked at a time (whole lines).
# Small enough to stay in the CPU's caches through every pass over it
# (decoding, rewriting, the check, the write): bench_merge.py, two ranks of
# 500 k events, 1.8 s and +2 MiB of peak memory against 2.2 s and +24 MiB
# with 4 MiB blocks. Where re has no possessive quantifiers (3.9, 3.10), the
# check keeps a backtracking point per line of the block: the block bounds
# that too (4 MiB blocks took +106 MiB there).
_LINE_BLOCK = 256 << 10


def damaged_line(path: str, number: int, problem: str) -> MergeError:
    return MergeError(
        f"merge: {path!r} line {number} {problem}; the file is damaged (cut short or edited?): "
        "export it again from its .pktrace, or leave it out of the merge"
    )


def find_damage(
    path: str, texts: Sequence[str], first_number: int, keep: Callable[[str], str], out: Sequence[str]
) -> None:
    """Raises MergeError naming the first line of a block that is not JSON.

    The slow path, for a block the regular expression refused: `texts` are
    the block's lines (the first is line `first_number` of the file), keep()
    gives a line's event text ("" for one left out), out[k] is the k-th kept
    line as rewritten. A line that is JSON but not as profkit writes it is
    fine as long as it was rewritten into JSON."""
    k = 0
    for index, text in enumerate(texts):
        original = keep(text)
        if not original:
            continue
        line = out[k]
        k += 1
        if _ONE_LINE.fullmatch(line):
            continue
        try:
            json.loads(line, parse_constant=not_json)
        except ValueError:
            number = first_number + index
            try:
                json.loads(original, parse_constant=not_json)
            except ValueError as e:
                raise damaged_line(path, number, f"is not valid JSON ({_json_problem(e)})") from e
            raise damaged_line(path, number, "is laid out in a way profkit does not write, and could not be moved")


def _json_problem(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at column {error.colno}"
    return str(error)


def number_end(text: str, start: int) -> int:
    """Where the number starting at `start` ends: the next ',' or '}', or the
    end of `text` (a line's head ends there when the number is the last key
    before "args")."""
    for stop in (",", "}"):
        end = text.find(stop, start)
        if end >= 0:
            return end
    return len(text)


def with_number(head: str, key: str, change: Callable[[str], str]) -> str:
    """`head` with the number after `key` replaced by change(number)."""
    found = head.find(key)
    if found < 0:
        return head
    start = found + len(key)
    end = number_end(head, start)
    return head[:start] + change(head[start:end]) + head[end:]


def shift_ts(text: str, shift_ns: int) -> str:
    """A ts in µs with a 3-digit fraction, plus shift_ns, in the same format.

    The sign belongs to the whole number: -14405.375 is -14405 µs and -375 ns."""
    negative = text.startswith("-")
    whole, _, fraction = text[1:].partition(".") if negative else text.partition(".")
    # ASCII digits only: int() would take "1_0", " 1" and other scripts' digits.
    if not (text.isascii() and whole.isdigit() and (fraction.isdigit() or not fraction)):
        raise ValueError(f"the ts {text!r} is not a number of microseconds")
    ns = int(whole) * 1000 + int((fraction + "000")[:3])
    ns = (-ns if negative else ns) + shift_ns
    if ns >= 0:
        return "%d.%03d" % divmod(ns, 1000)
    return "-%d.%03d" % divmod(-ns, 1000)


class LineRewriter:
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
            return dump_event(self.event(json.loads(line)))
        # Only the fields before "args" are ours; args keys are anybody's. (A
        # key's quotes cannot occur inside a string value: those are escaped.)
        cut = line.find(',"args":')
        head, tail = (line, "") if cut < 0 else (line[:cut], line[cut:])
        if self.shift_ns:
            head = with_number(head, '"ts":', self._shifted)
        if self.pid_delta:
            head = with_number(head, '"pid":', self._moved)
        if self.flow_offset and head.startswith(('{"ph":"s"', '{"ph":"f"', '{"ph":"t"')):
            head = with_number(head, '"id":', self._flow)
        elif head.startswith(('{"ph":"s"', '{"ph":"f"', '{"ph":"t"')):
            found = head.find('"id":')
            if found >= 0:
                self._flow(head[found + 5 : number_end(head, found + 5)])
        return head + tail

    def _shifted(self, text: str) -> str:
        return shift_ts(text, self.shift_ns)

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


def dump_event(event: Dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


class Writer:
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


def copy_range(source: IO[bytes], start: int, end: int, writer: Writer) -> int:
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


def write_pktrace(s: Source, writer: Writer, scratch: str, base_wall_ns: int, placed: Dict[str, Any]) -> int:
    temp = os.path.join(scratch, "input.trace.json")
    try:
        result = s.load()
    except (OSError, ValueError, RuntimeError) as e:  # pragma: no cover - it was readable a moment ago
        raise MergeError(f"merge: cannot read {s.path!r} as a profkit trace: {s.named(str(e))}") from e
    result.export_chrome_placed(
        engine_path(temp),
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
                footer = m.rfind(FOOTER)
                header_ok = m[: len(HEADER)] == HEADER
            if not header_ok or footer < 0:  # pragma: no cover - the engine's own layout
                raise MergeError(f"merge: the engine wrote {s.path!r} in an unexpected layout")
            return copy_range(f, len(HEADER), footer, writer)
    finally:
        os.unlink(temp)


def write_chrome(s: Source, writer: Writer, rewriter: LineRewriter, include_flows: bool) -> int:
    """Writes a Chrome input's events; returns the lines written."""
    if s.layout is None:
        return _write_parsed(s, writer, rewriter, include_flows)
    return _write_lines(s, writer, rewriter, include_flows)


def _write_parsed(s: Source, writer: Writer, rewriter: LineRewriter, include_flows: bool) -> int:
    """A file in another layout: parsed again here, dropped when written."""
    lines = 0
    pending: List[str] = []

    def flush() -> None:
        if pending:
            writer.block("".join(pending).encode("utf-8"))
            pending.clear()

    for event in s.events():
        if not isinstance(event, dict):
            continue
        if not include_flows and event.get("ph") in ("s", "t", "f"):
            continue
        pending.append(("" if not pending else ",\n") + dump_event(rewriter.event(event)))
        lines += 1
        if len(pending) >= 4096:
            flush()
    flush()
    return lines


def _write_lines(s: Source, writer: Writer, rewriter: LineRewriter, include_flows: bool) -> int:
    """A file in profkit's layout: read in blocks of whole lines, each line
    rewritten, each block checked before it is written."""
    assert s.layout is not None
    start, end = s.layout

    def keep(text: str) -> str:
        """A line's event without its separator; "" for a line left out."""
        if text.endswith(","):
            text = text[:-1]
        return "" if not include_flows and text.startswith(_FLOW_PHASES) else text

    lines = 0
    number = 2  # the file's line number of the first event: line 1 is the header
    with open(s.data_path, "rb") as f:
        f.seek(start)
        remaining = end - start
        carry = b""
        while remaining > 0:
            block = f.read(min(remaining, _LINE_BLOCK))
            if not block:  # pragma: no cover - the file shrank under us
                raise MergeError(f"merge: {s.path!r} changed while it was being read")
            remaining -= len(block)
            block = carry + block
            cut = block.rfind(b"\n") + 1 if remaining > 0 else len(block)
            carry = block[cut:]
            lines += _write_block(s.path, memoryview(block)[:cut], number, keep, rewriter.line, writer)
            number += block.count(b"\n", 0, cut)
    return lines


def _write_block(
    path: str, data: memoryview, number: int, keep: Callable[[str], str], rewrite: Callable[[str], str], writer: Writer
) -> int:
    """Rewrites, checks and writes a block of whole lines (the first is line
    `number` of the file); returns the lines written. (A function of its own
    so that one block's text is let go before the next is read.)"""
    out = _rewrite_block(path, data, number, keep, rewrite)
    joined = ",\n".join(out)
    if joined and not _LINES.fullmatch(joined):
        find_damage(path, str(data, "utf-8").split("\n"), number, keep, out)
    writer.block(joined.encode("utf-8"))
    return len(out)


def _rewrite_block(
    path: str, data: memoryview, number: int, keep: Callable[[str], str], rewrite: Callable[[str], str]
) -> List[str]:
    """The kept lines of a block of whole lines, rewritten."""
    try:
        texts = str(data, "utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise damaged_line(path, number + bytes(data[: e.start]).count(b"\n"), "is not valid UTF-8") from e
    out: List[str] = []
    for index, text in enumerate(texts):
        text = keep(text)
        if not text:
            continue
        try:
            out.append(rewrite(text))
        except ValueError as e:  # a number the rewriter cannot read, a metadata line not JSON
            raise damaged_line(path, number + index, f"cannot be read ({_json_problem(e)})") from e
    return out
