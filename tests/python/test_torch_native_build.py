"""The native PyTorch hook: built once into its cache, reused, serialized across processes, and
replaced by the Python fallback (with one warning) where it cannot be built."""

import fcntl
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

from profkit.integrations import _torch_native  # noqa: E402


def cli(*args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "profkit.integrations.torch", *args],
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def test_first_use_builds_and_later_processes_reuse_the_build(torch_hook_cache):
    first = torch_hook_cache.process
    assert "native PyTorch hook built in" in first.stdout, first.stdout + first.stderr
    assert "compiling the native PyTorch hook" in first.stderr
    binary = _torch_native.build_dir(torch) / "profkit_torch_hook.so"
    assert binary.is_file() and str(torch_hook_cache.root) in str(binary)
    built_at = binary.stat().st_mtime_ns

    again = cli("--build")
    assert again.returncode == 0 and f"already built: {binary}" in again.stdout
    assert again.stderr == ""  # nothing compiled, nothing to announce
    assert binary.stat().st_mtime_ns == built_at
    hook = _torch_native.load(torch)
    assert not hook.built and hook.path == binary


def test_the_cache_key_names_torch_python_and_profkit(torch_hook_cache):
    import profkit

    where = cli("--where")
    assert where.returncode == 0
    key = os.path.basename(where.stdout.strip())
    assert key.startswith(f"torch-{torch.__version__}-{sys.implementation.cache_tag}-profkit-{profkit.__version__}-")


def test_a_second_process_waits_for_the_build_in_progress(torch_hook_cache, tmp_path):
    """While one process builds (holds the lock), another waits, then loads what it built."""
    built = _torch_native.build_dir(torch)
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path))
    target = tmp_path / "torch_hook" / built.name
    target.parent.mkdir(parents=True)
    with open(target.parent / (built.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # "another process is building"
        waiter = subprocess.Popen(
            [sys.executable, "-m", "profkit.integrations.torch", "--build"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = waiter.stderr.readline()
            assert "waiting for another process building the native PyTorch hook" in line
            shutil.copytree(built, target)  # the other process finishes its build
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
        out, err = waiter.communicate(timeout=600)
    assert waiter.returncode == 0, out + err
    assert f"already built: {target / 'profkit_torch_hook.so'}" in out
    assert "compiling" not in err


FALLBACK_SCRIPT = textwrap.dedent(
    """
    import warnings
    import torch
    import profkit
    import profkit.integrations.torch as pk_torch

    try:
        pk_torch.enable(backend="native")
    except RuntimeError as e:
        print("native refused:", str(e).splitlines()[0])
    print("enabled after refusal:", pk_torch.is_enabled())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pk_torch.enable()
        pk_torch.disable()
        pk_torch.enable()
    for w in caught:
        if "native PyTorch hook" in str(w.message):
            print("warning:", w.category.__name__, str(w.message).splitlines()[0])
            print("warning at:", w.filename)
    print("backend:", pk_torch.backend())
    model = torch.nn.Linear(4, 3)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        model(torch.randn(2, 4)).sum().backward()
    events = prof.profiler_result.events
    print("operators:", sorted(set(events["name"][events["type"] == 0]) & {"aten::addmm", "aten::mm"}))
    """
)


@pytest.mark.parametrize(
    "compiler, reason",
    [("missing", "no C++ compiler: "), ("/bin/false", "building the native PyTorch hook failed: ")],
    ids=["no-compiler", "compile-error"],
)
def test_where_it_cannot_build_the_python_fallback_records_after_one_warning(
    torch_hook_cache, tmp_path, compiler, reason
):
    cxx = str(tmp_path / "no-such-compiler") if compiler == "missing" else compiler
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path), CXX=cxx)
    done = subprocess.run(
        [sys.executable, "-c", FALLBACK_SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("native refused: " + reason) for line in lines), lines
    assert "enabled after refusal: False" in lines
    # one warning although enabled twice, saying why
    (warning,) = [line for line in lines if line.startswith("warning: ")]
    assert warning.startswith("warning: ProfilerWarning profkit: the native PyTorch hook is not available (" + reason)
    assert "warning at: <string>" in lines  # the user's enable() call, not profkit's code
    assert "backend: python" in lines
    assert "operators: ['aten::addmm', 'aten::mm']" in lines
    assert not list((tmp_path / "torch_hook").glob("*/profkit_torch_hook.so"))  # nothing half-built left
    assert not list((tmp_path / "torch_hook").glob("*.build-*"))  # no scratch directory either


def test_an_unwritable_cache_is_a_clear_error(torch_hook_cache, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(blocker / "cache"))
    done = cli("--build", env=env)
    assert done.returncode == 1
    assert "cannot create the cache directory" in done.stderr and "PROFKIT_CACHE_DIR" in done.stderr
