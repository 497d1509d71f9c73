"""The public API of SPEC §1: names, enum values, docstrings, typing files."""

import ast
import inspect
import os

import pytest

import profkit
import profkit as profiler
from profkit import _C

SPEC_NAMES = [
    "ProfilerState",
    "ProfilerTarget",
    "SortedKeys",
    "SummaryView",
    "TracerEventType",
    "make_scheduler",
    "export_chrome_tracing",
    "export_protobuf",
    "load_profiler_result",
    "RecordEvent",
    "Profiler",
]


def test_spec_names_are_importable_and_documented():
    for name in SPEC_NAMES:
        obj = getattr(profkit, name)
        assert name in profkit.__all__
        assert inspect.getdoc(obj), f"{name} has no docstring"
    for name in profkit.__all__:
        assert hasattr(profkit, name)


def test_enum_values():
    assert [(s.name, s.value) for s in profiler.ProfilerState] == [
        ("CLOSED", 0),
        ("READY", 1),
        ("RECORD", 2),
        ("RECORD_AND_RETURN", 3),
    ]
    assert [(t.name, t.value) for t in profiler.ProfilerTarget] == [("CPU", 0), ("GPU", 1), ("XPU", 2), ("CUSTOM_DEVICE", 3)]
    assert [k.name for k in profiler.SortedKeys] == [
        "CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal", "GPUAvg", "GPUMax", "GPUMin",  # paddle.profiler's
        "CPUSelf",  # profkit's own
    ]  # fmt: skip
    assert [k.value for k in profiler.SortedKeys] == list(range(9))
    assert [v.name for v in profiler.SummaryView] == [
        "DeviceView", "OverView", "ModelView", "DistributedView", "KernelView",
        "OperatorView", "MemoryView", "MemoryManipulationView", "UDFView",
    ]  # fmt: skip
    assert [v.value for v in profiler.SummaryView] == list(range(9))
    assert [(t.name, t.value) for t in profiler.TracerEventType] == [
        ("Operator", 0), ("Dataloader", 1), ("ProfileStep", 2), ("CudaRuntime", 3), ("Kernel", 4),
        ("Memcpy", 5), ("Memset", 6), ("UserDefined", 7), ("OperatorInner", 8), ("Forward", 9),
        ("Backward", 10), ("Optimization", 11), ("Communication", 12), ("PythonOp", 13),
        ("PythonUserDefined", 14),
    ]  # fmt: skip


def test_signatures_match_paddle():
    params = inspect.signature(profkit.Profiler).parameters
    for name in ("targets", "scheduler", "on_trace_ready", "record_shapes", "profile_memory", "timer_only"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY and params[name].default in (None, False)
    assert list(inspect.signature(profkit.Profiler.summary).parameters)[1:6] == [
        "sorted_by", "op_detail", "thread_sep", "time_unit", "views"
    ]  # fmt: skip
    record_event = inspect.signature(profkit.RecordEvent).parameters
    assert list(record_event) == ["name", "event_type"]
    assert record_event["event_type"].default is profkit.TracerEventType.PythonUserDefined
    exporter = inspect.signature(profkit.export_chrome_tracing).parameters
    assert list(exporter)[:2] == ["dir_name", "worker_name"]  # paddle's, positional as there
    # profkit's own additions (use_gzip) come after, by keyword only.
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is False for p in list(exporter.values())[2:])
    assert list(inspect.signature(profkit.Profiler.export).parameters) == ["self", "path", "format"]


def test_typing_files_are_shipped():
    here = os.path.dirname(profkit.__file__)
    assert os.path.isfile(os.path.join(here, "py.typed"))
    assert os.path.isfile(os.path.join(here, "_C.pyi"))


def test_stub_lists_every_public_name_of_the_compiled_module():
    here = os.path.dirname(profkit.__file__)
    with open(os.path.join(here, "_C.pyi"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    stubbed = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    actual = {name for name in dir(_C) if not name.startswith("_")}
    assert stubbed == actual
    # ... and every public method of its classes.
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = {m.name for m in node.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")}
            public = {name for name in dir(getattr(_C, node.name)) if not name.startswith("_")}
            assert methods == public, node.name


def test_paddle_style_script_runs_with_import_profkit_as_profiler(tmp_path):
    # The guide's first example, verbatim apart from the framework work.
    with profiler.Profiler(
        targets=[profiler.ProfilerTarget.CPU],
        scheduler=(1, 3),
        on_trace_ready=profiler.export_chrome_tracing(str(tmp_path)),
        timer_only=False,
    ) as p:
        for _ in range(4):
            p.step()
    assert len(os.listdir(tmp_path)) == 1


@pytest.mark.parametrize("module", ["scheduler", "timer", "dataloader", "export_callbacks", "result", "profiler", "cli"])
def test_modules_are_documented(module):
    import importlib

    assert importlib.import_module(f"profkit.{module}").__doc__


def test_warnings_about_the_profilers_arguments_name_the_line_that_made_it(monkeypatch):
    # The checks live in _profiler_arguments; the user's line is what the warning shows.
    import warnings

    from profkit import profiler as profiler_module

    monkeypatch.setattr(profiler_module, "_gpu_warning_given", False)
    monkeypatch.setattr(_C, "gpu_available", lambda: (False, "no CUDA driver"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profkit.Profiler(
            targets=[profkit.ProfilerTarget.XPU, profkit.ProfilerTarget.GPU],
            emit_nvtx=True,
            custom_device_types="npu",
        )
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4, messages  # XPU, the GPU, emit_nvtx, custom devices
    assert "cannot trace XPU" in messages[0] and "GPU profiling is not available" in messages[1]
    assert {w.filename for w in caught} == {__file__}


def test_the_profilers_repr_says_where_it_stands():
    prof = profkit.Profiler(on_trace_ready=lambda p: None)
    assert repr(prof) == "<profkit.Profiler not started at step 0 (CLOSED)>"  # said "stopped"
    with prof:
        assert repr(prof) == "<profkit.Profiler started at step 0 (RECORD)>"
        prof.step()
    assert repr(prof) == "<profkit.Profiler stopped at step 1 (CLOSED)>"
