"""Every script in examples/ runs, as a user would run it, and writes what it says."""

import glob
import json
import os
import subprocess
import sys


EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


# Warnings are errors, but for one that torch 2.6 gives at every exit: its
# torch.distributed.nn.jit.instantiator (imported with any optimizer) makes a
# TemporaryDirectory at import and leaves it to the interpreter to clean up.
WARNINGS = "error,ignore:Implicitly cleaning up <TemporaryDirectory:ResourceWarning"


def run_example(name, cwd):
    env = dict(os.environ, PYTHONWARNINGS=WARNINGS, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stderr == "", done.stderr  # no warnings either
    return done.stdout


def traces(cwd, pattern="*.trace.json"):
    return sorted(glob.glob(os.path.join(cwd, "profiler_log", pattern)))


def chrome(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def steps_of(path):
    doc = chrome(path)
    return sorted(int(e["name"].split("#")[1]) for e in doc["traceEvents"] if e.get("cat") == "ProfileStep")


def categories(path):
    return {e["cat"] for e in chrome(path)["traceEvents"] if e.get("ph") == "X"}


# Examples whose checks live in their own test file.
COVERED_ELSEWHERE = {"ddp_train.py": "test_distributed_ddp.py"}


def test_every_example_is_covered():
    # numpy_mlp.py is the examples' shared workload, not an example.
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "*.py"))} - {"numpy_mlp.py"}
    tested = {name[len("test_") :].replace("_example", "") + ".py" for name in globals() if name.startswith("test_") and name.endswith("_example")}
    for script, test_file in COVERED_ELSEWHERE.items():
        assert os.path.exists(os.path.join(os.path.dirname(__file__), test_file)), test_file
        tested.add(script)
    assert scripts == tested


def test_batch_range_example(tmp_path):
    out = run_example("batch_range.py", tmp_path)
    (path,) = traces(tmp_path)
    assert steps_of(path) == [3, 4, 5, 6]
    assert "recorded steps [3, 4, 5, 6]" in out


def test_several_ranges_example(tmp_path):
    run_example("several_ranges.py", tmp_path)
    paths = traces(tmp_path)
    assert [steps_of(p) for p in paths] == [[2, 3, 4, 5], [8, 9, 10, 11], [14, 15, 16, 17]]


def test_all_batches_example(tmp_path):
    run_example("all_batches.py", tmp_path)
    (path,) = traces(tmp_path)
    assert steps_of(path) == list(range(9))  # 8 batches and the step stop() ends


def test_start_step_stop_example(tmp_path):
    import profkit

    out = run_example("start_step_stop.py", tmp_path)
    (path,) = traces(tmp_path)
    assert steps_of(path) == [2, 3, 4, 5]
    assert profkit.load_profiler_result(tmp_path / "profiler_log" / "start_step_stop.pktrace").steps == [2, 3, 4, 5]
    assert "recorded steps [2, 3, 4, 5]" in out and "Perf Summary" in out


def test_custom_scheduler_example(tmp_path):
    run_example("custom_scheduler.py", tmp_path)
    assert [steps_of(p) for p in traces(tmp_path)] == [[2, 3], [6, 7, 8]]


def test_custom_on_trace_ready_example(tmp_path):
    import profkit

    out = run_example("custom_on_trace_ready.py", tmp_path)
    assert [steps_of(p) for p in traces(tmp_path)] == [[2, 3], [6, 7]]
    assert [profkit.load_profiler_result(p).steps for p in traces(tmp_path, "*.pktrace")] == [[2, 3], [6, 7]]
    assert "written:" in out


def test_record_event_example(tmp_path):
    out = run_example("record_event.py", tmp_path)
    (path,) = traces(tmp_path)
    assert steps_of(path) == [2, 3, 4]
    assert {"Forward", "Backward", "Optimization", "Dataloader", "PythonUserDefined", "ProfileStep"} <= categories(path)
    names = [e["name"] for e in chrome(path)["traceEvents"] if e.get("ph") == "X"]
    assert names.count("check gradients") == 3 and "'Forward': 3" in out


def test_timer_only_example(tmp_path):
    out = run_example("timer_only.py", tmp_path)
    assert not (tmp_path / "profiler_log").exists()
    lines = [line for line in out.splitlines() if line.startswith("step ")]
    assert [line.split(":")[0] for line in lines] == ["step 0", "step 10", "step 20"]
    assert all("reader_cost: " in line and " samples/s" in line for line in lines)
    assert "Perf Summary" in out and "Steps: 20 of 30 (the first 10 are warm-up and left out)" in out


def test_load_result_example(tmp_path):
    out = run_example("load_result.py", tmp_path)
    assert len(traces(tmp_path, "trainer_time_*.pktrace")) == 1
    assert steps_of(tmp_path / "profiler_log" / "trainer.trace.json") == [1, 2, 3]
    assert "steps [1, 2, 3]; matmul mean" in out
    assert "Operator Summary" in out and "matmul  3" in out  # from the .trace.json loaded back


def test_engine_demo_example(tmp_path):
    run_example("engine_demo.py", tmp_path)
    assert steps_of(tmp_path / "profiler_log" / "engine_demo.trace.json") == [0, 1, 2]
    assert os.path.isfile(tmp_path / "profiler_log" / "engine_demo.pktrace")


def test_train_cifar_like_example(tmp_path, torch_hook_cache):
    import profkit

    out = run_example("train_cifar_like.py", tmp_path)
    (path,) = traces(tmp_path)
    assert steps_of(path) == list(range(3, 14))  # scheduler=(3, 14)
    assert {"Operator", "Forward", "Backward", "Optimization", "Dataloader", "ProfileStep"} <= categories(path)
    (binary,) = traces(tmp_path, "*.pktrace")
    assert profkit.load_profiler_result(binary).steps == list(range(3, 14))
    for table in ("Perf Summary", "Model Summary", "Operator Summary", "Kernel Summary"):
        assert table in out
    assert "profkit's native PyTorch hook" in out
    assert os.path.abspath(path) in out and os.path.abspath(binary) in out
    assert "https://ui.perfetto.dev" in out and "chrome://tracing" in out


def test_train_cifar_like_refuses_sizes_that_cannot_train(tmp_path):
    # --steps 0 or --batch-size 0 ended in a torch traceback from the sampler
    # that named neither option; ddp_train --nproc 0 did nothing and exited 0.
    for script, args, option in (
        ("train_cifar_like.py", ["--steps", "0"], "--steps"),
        ("train_cifar_like.py", ["--batch-size", "0"], "--batch-size"),
        ("train_cifar_like.py", ["--workers", "-1"], "--workers"),
        ("ddp_train.py", ["--nproc", "0"], "--nproc"),
    ):
        done = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and f"error: {option} must be" in done.stderr, (script, args, done.stderr)
    assert not (tmp_path / "profiler_log").exists()
