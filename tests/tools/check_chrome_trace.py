#!/usr/bin/env python3
"""Checks a Chrome trace JSON file against the Trace Event Format rules that
chrome://tracing and ui.perfetto.dev's JSON importer rely on.

Usage: check_chrome_trace.py FILE [FILE ...]   (exit 1 and one line per problem)

Checked: the top-level object; every event's phase and required fields with
the right types; metadata events naming processes and threads; complete
("X") events properly nested on each (pid, tid) lane — the importers drop or
misplace slices that overlap without nesting; instant scopes; counter
("C") events with numeric series in args; flow events
with ids, "f" binding to the enclosing slice ("bp":"e"), and each flow start
and end falling inside a slice on its lane; ids used by exactly one start and
one end.
"""

import json
import sys
from collections import defaultdict

PHASES = {"X", "i", "M", "s", "f", "C"}
METADATA = {"process_name": "name", "process_sort_index": "sort_index", "thread_name": "name",
            "thread_sort_index": "sort_index"}


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def problems(doc):
    """Yields a description of every rule the document breaks."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        yield "top level must be an object with a traceEvents array"
        return
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        yield "displayTimeUnit must be 'ms' or 'ns'"
    slices = defaultdict(list)  # (pid, tid) -> [(start, end, index)]
    flows = defaultdict(dict)  # id -> {"s": event, "f": event}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"event {i}"
        if not isinstance(e, dict):
            yield f"{where}: not an object"
            continue
        ph = e.get("ph")
        if ph not in PHASES:
            yield f"{where}: unexpected phase {ph!r}"
            continue
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            yield f"{where}: pid and tid must be integers"
        if not isinstance(e.get("name"), str):
            yield f"{where}: name must be a string"
        if "args" in e and not isinstance(e["args"], dict):
            yield f"{where}: args must be an object"
        if ph == "M":
            key = METADATA.get(e.get("name"))
            if key is None:
                yield f"{where}: unknown metadata event {e.get('name')!r}"
            elif key not in e.get("args", {}):
                yield f"{where}: metadata {e['name']} needs args.{key}"
            continue
        if not _number(e.get("ts")) or e["ts"] < 0:
            yield f"{where}: ts must be a non-negative number"
            continue
        if not isinstance(e.get("cat"), str):
            yield f"{where}: cat must be a string"
        if ph == "X":
            if not _number(e.get("dur")) or e["dur"] < 0:
                yield f"{where}: a complete event needs a non-negative dur"
                continue
            # Importers turn µs text into integer ns; compare as they do.
            start = round(e["ts"] * 1000)
            slices[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000), i))
        elif ph == "i":
            if e.get("s", "t") not in ("t", "p", "g"):
                yield f"{where}: instant scope must be t, p or g"
        elif ph == "C":
            series = e.get("args")
            if not isinstance(series, dict) or not series or not all(_number(v) for v in series.values()):
                yield f"{where}: a counter event needs args of numbers (one per series)"
        else:  # flow
            if "id" not in e:
                yield f"{where}: a flow event needs an id"
                continue
            if ph == "f" and e.get("bp") != "e":
                yield f"{where}: a flow end must bind to its enclosing slice (bp 'e')"
            if ph in flows[e["id"]]:
                yield f"{where}: flow id {e['id']} has two '{ph}' events"
            flows[e["id"]][ph] = e
    for lane, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for start, end, index in spans:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                yield f"event {index}: overlaps its enclosing slice on lane {lane} without nesting"
            open_ends.append(end)

    def inside_a_slice(e):
        ts = round(e["ts"] * 1000)
        return any(s <= ts <= t for s, t, _ in slices.get((e["pid"], e["tid"]), ()))

    for flow_id, ends in flows.items():
        if set(ends) != {"s", "f"}:
            yield f"flow {flow_id}: needs exactly one start and one end"
            continue
        for ph, e in ends.items():
            if not inside_a_slice(e):
                yield f"flow {flow_id}: its '{ph}' event is not inside a slice on its lane"


def check_file(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return [f"{path}: {p}" for p in problems(doc)]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    found = [p for path in argv[1:] for p in check_file(path)]
    for p in found:
        print(p)
    if not found:
        print(f"check_chrome_trace: {len(argv) - 1} file(s) follow the Trace Event Format")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
