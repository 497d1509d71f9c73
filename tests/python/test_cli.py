"""The profkit command line: info, export, summary; one clear line on bad input."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from profkit import Profiler, RecordEvent, TracerEventType, cli, export_protobuf, load_profiler_result


@pytest.fixture
def trace(tmp_path):
    exporter = export_protobuf(str(tmp_path), worker_name="w")
    with Profiler(on_trace_ready=exporter) as p:
        for _ in range(2):
            with RecordEvent("forward", TracerEventType.Forward):
                pass
            p.step()
    return exporter.paths[0]


def run(*args):
    """The command line in a subprocess: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "profkit", *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_info(trace):
    code, out, err = run("info", trace)
    assert code == 0 and err == ""
    assert f"file:       {trace}" in out
    assert "steps:      0-2 (3 steps)" in out
    assert "events:     5 host, 0 GPU" in out
    assert "  ProfileStep  3" in out and "  Forward      2" in out
    assert "not recorded: dropped_events 0, unmatched_ends 0" in out
    assert "span:       #" in out


def test_info_json(trace, capsys):
    assert cli.main(["info", trace, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["event_counts"] == {"ProfileStep": 3, "Forward": 2}
    assert doc["info"]["host_event_count"] == 5


def test_export(trace, tmp_path):
    out = tmp_path / "out.trace.json"
    code, stdout, err = run("export", trace, "-o", str(out))
    assert code == 0 and err == "" and str(out) in stdout
    doc = json.loads(out.read_text())
    assert sorted(e["name"] for e in doc["traceEvents"] if e.get("ph") == "X") == [
        "ProfileStep#0",
        "ProfileStep#1",
        "ProfileStep#2",
        "forward",
        "forward",
    ]


def test_export_default_output_name_and_options(trace, capsys):
    assert cli.main(["export", trace, "--label-durations", "--no-flows"]) == 0
    default = trace[: -len(".pktrace")] + ".trace.json"
    with open(default, encoding="utf-8") as f:
        names = [e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    assert all("[" in n for n in names)


def test_export_converts_a_profkit_json_to_a_pktrace_and_back(trace, tmp_path):
    json_path = tmp_path / "run.trace.json"
    assert run("export", trace, "-o", str(json_path))[0] == 0
    code, stdout, err = run("export", str(json_path))  # default: the same stem as .pktrace
    compact = tmp_path / "run.pktrace"
    assert code == 0 and err == "" and str(compact) in stdout
    original = load_profiler_result(trace)
    converted = load_profiler_result(compact)
    assert converted.info == original.info and converted.summary() == original.summary()
    status, _, err = run("export", str(json_path), "-o", str(tmp_path / "x.pktrace"), "--label-durations")
    assert status == 2 and "shape Chrome JSON" in err


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["info", "/no/such/file.pktrace"], 1, "cannot open '/no/such/file.pktrace'"),
        (["info"], 2, "the following arguments are required: file"),
        (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
        ([], 2, "required"),
        (["export", "/no/such.pktrace", "-o", "x.json"], 1, "No such file"),
    ],
)
def test_bad_input_is_one_line_on_stderr(args, code, message):
    status, out, err = run(*args)
    assert status == code and out == ""
    assert err.count("\n") == 1 and err.startswith("profkit: error: ") and message in err


def test_bad_files(tmp_path, trace):
    empty = tmp_path / "empty.pktrace"
    empty.write_bytes(b"")
    status, _, err = run("info", str(empty))
    assert status == 1 and err.startswith("profkit: error: ") and "empty" in err and err.count("\n") == 1
    status, _, err = run("export", trace, "-o", str(tmp_path / "no" / "dir" / "x.json"))
    assert status == 1 and err.count("\n") == 1
    assert err.startswith(f"profkit: error: cannot write '{tmp_path / 'no' / 'dir' / 'x.json'}': the directory ")
    status, _, err = run("info", str(tmp_path))
    assert status == 1 and "is a directory" in err


def test_an_output_that_names_no_file_is_refused_before_anything_is_written(tmp_path, trace):
    default = trace[: -len(".pktrace")] + ".trace.json"
    status, out, err = run("export", trace, "-o", "")
    assert status == 2 and out == "" and "-o/--output is empty" in err and not os.path.exists(default)
    status, out, err = run("export", trace, "-o", str(tmp_path))
    assert status == 2 and "is a directory; give a file path" in err and err.count("\n") == 1
    status, out, err = run("merge", trace, "-o", str(tmp_path))
    assert status == 2 and "is a directory; give a file path" in err


def test_export_to_standard_output_keeps_its_note_off_the_trace(trace):
    for output in ("-", "/dev/stdout"):
        status, out, err = run("export", trace, "-o", output)
        assert status == 0 and err.startswith("wrote /dev/stdout (")
        doc = json.loads(out)  # the whole of stdout is the trace
        assert any(e.get("name") == "forward" for e in doc["traceEvents"])


def test_version():
    status, out, _ = run("--version")
    assert status == 0 and out.startswith("profkit ")


def test_console_script(trace):
    script = shutil.which("profkit", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the profkit console script is not installed next to this interpreter")
    done = subprocess.run([script, "info", trace], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "ProfileStep" in done.stdout


def test_summary_views_comma_separated_or_repeated_before_or_after_the_file(trace, capsys):
    assert cli.main(["summary", "--views", "OverView,ModelView", trace]) == 0
    text = capsys.readouterr().out
    assert "Overview Summary" in text and "Model Summary" in text and "Operator Summary" not in text
    assert cli.main(["summary", trace, "--views", "ModelView", "--views", "UDFView"]) == 0
    text = capsys.readouterr().out
    assert "Model Summary" in text and "UserDefined Summary" in text and "Overview Summary" not in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--views", "Nope"], "unknown view 'Nope'"),
        (["--row-limit", "0"], "must be a positive whole number, got '0'"),
        (["--row-limit", "-3"], "must be a positive whole number"),
        (["--row-limit", "x"], "must be a positive whole number"),
        (["--group-by-stack-n", "256"], "argument --group-by-stack-n: must be a whole number from 1 to 255, got '256'"),
        (["--group-by-stack-n", "0"], "must be a whole number from 1 to 255, got '0'"),
    ],
)
def test_summary_bad_options_are_command_line_errors(trace, args, message):
    status, out, err = run("summary", trace, *args)
    assert status == 2 and out == "" and message in err and err.count("\n") == 1


def test_a_stack_depth_past_the_deepest_is_refused_before_the_file_is_read(tmp_path):
    # summary() refused it after the whole trace loaded, with exit status 1,
    # which says the file could not be read.
    status, out, err = run("summary", str(tmp_path / "absent.pktrace"), "--group-by-stack-n", "300")
    assert status == 2 and out == "" and "--group-by-stack-n: must be a whole number from 1 to 255" in err


def test_summary_json_prints_the_tables_rows(trace, capsys):
    assert cli.main(["summary", trace, "--json", "--views", "ModelView", "--time-unit", "us"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert list(tables) == ["ModelView"]  # summary_data's tables, as JSON
    table = tables["ModelView"]
    assert table["time_unit"] == "us"
    forward = [row for row in table["rows"] if row[0] == "Forward"]
    assert forward and forward[0][1] == 2  # two Forward ranges, one per step


def test_summary_group_by_input_shape(tmp_path, capsys):
    from profkit import _C

    _C.set_state(0)
    _C.collect()
    key = _C.intern("input_shapes")
    _C.set_state(2)
    for shapes in ("[[2, 3]]", "[[4, 5]]"):
        _C.begin_event_str("aten::relu", int(TracerEventType.Operator))
        _C.event_arg_str(key, shapes)
        _C.end_event()
    _C.set_state(0)
    path = str(tmp_path / "shapes.pktrace")
    _C.collect().save(path)
    assert cli.main(["summary", path, "--views", "OperatorView", "--group-by-input-shape"]) == 0
    text = capsys.readouterr().out
    assert "Input Shapes" in text and "[[2, 3]]" in text and "[[4, 5]]" in text
    assert cli.main(["summary", path, "--views", "OperatorView"]) == 0
    assert "Input Shapes" not in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".pktrace", ".trace.json"])
def test_a_trace_piped_to_dev_stdin(trace, tmp_path, suffix):
    # `gunzip -c x.pktrace.gz | profkit info /dev/stdin`: a pipe has no size to
    # go by; it was refused as "the file is empty (0 bytes)".
    path = str(tmp_path / f"t{suffix}")
    load_profiler_result(trace).save(path)
    with open(path, "rb") as f:
        data = f.read()
    done = subprocess.run(
        [sys.executable, "-m", "profkit", "info", "/dev/stdin"], input=data, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert b"steps:      0-2 (3 steps)" in done.stdout


def test_merge_naming_an_input_as_its_output_is_a_command_line_error(tmp_path, trace):
    json_trace = str(tmp_path / "rank0.trace.json")
    load_profiler_result(trace).export_chrome_tracing(json_trace)
    before = os.path.getsize(json_trace)
    code, _, err = run("merge", json_trace, trace, "-o", json_trace)
    assert code == 2, err  # as export and stacks say it: a bad command line
    assert "also the input" in err
    assert os.path.getsize(json_trace) == before


def test_names_the_terminal_cannot_encode_are_escaped_not_fatal(tmp_path):
    exporter = export_protobuf(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as p:
        with RecordEvent("größe"):
            pass
        p.step()
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    done = subprocess.run(
        [sys.executable, "-m", "profkit", "summary", exporter.paths[0]], capture_output=True, text=True, env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "gr\\xf6\\xdfe" in done.stdout  # escaped, and the tables printed
    assert "Overview Summary" in done.stdout


@pytest.mark.parametrize("command", ["export", "stacks"])
def test_a_pipe_input_without_an_output_is_refused_before_it_is_read(trace, command):
    with open(trace, "rb") as f:
        data = f.read()
    done = subprocess.run(
        [sys.executable, "-m", "profkit", command, "/dev/stdin"], input=data, capture_output=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert b"give the file to write with -o OUT" in done.stderr


def test_info_names_a_rank_without_a_world_size_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    exporter = export_protobuf(str(tmp_path))
    with Profiler(on_trace_ready=exporter) as p:
        p.step()
    code, out, err = run("info", exporter.paths[0])
    assert code == 0, err
    assert "rank 1 of" not in out and "rank 1" in out


def test_stacks_to_a_device_suggests_the_pipe(trace, tmp_path):
    code, out, err = run("stacks", trace, "-o", "/dev/null")
    assert code == 0, err
    assert "... | flamegraph.pl" in out + err and "/dev/null.svg" not in out + err


def test_errors_name_no_python_function_the_user_did_not_call(tmp_path):
    code, _, err = run("info", str(tmp_path))
    assert code == 1 and err.startswith("profkit: error: '") and "is a directory" in err, err
    assert "load_profiler_result" not in err
