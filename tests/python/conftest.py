import os
import subprocess
import sys

import pytest

from profkit import ProfilerState, _C, _python_stacks
from profkit import profiler as profiler_module


@pytest.fixture(autouse=True)
def clean_engine():
    """Every test starts and ends with the engine closed and drained, and no Profiler active."""
    _C.set_state(0)
    _C.collect()
    yield
    profiler_module._active_ref = None  # a test that failed mid-run leaves no Profiler behind
    _python_stacks._on_window(None, ProfilerState.CLOSED)  # nor a with_stack tracer
    _C.set_state(0)
    # Run metadata is engine-wide and goes into every later window: a test
    # that leaves some set fails here, not some later test that reads a window.
    _C.set_gpu_tracing(False)  # a test that failed mid-run may leave it on
    # The tracer's own note of what traced the window is not run metadata.
    leaked = {k: v for k, v in _C.collect().metadata().items() if k not in ("gpu_tracing", "gpu_tracing_error")}
    for key in leaked:
        _C.set_metadata(key, None)
    if leaked:
        pytest.fail(f"the test left run metadata set in the engine: {leaked}; clear it with _C.set_metadata(key, None)")


# ---- PyTorch ---------------------------------------------------------------------
class HookBuild:
    """The session's build of the native PyTorch hook (see torch_hook_cache)."""

    def __init__(self, root, process):
        self.root = root  # $PROFKIT_CACHE_DIR of the session
        self.process = process  # `python -m profkit.integrations.torch --build`, completed


@pytest.fixture(scope="session")
def torch_hook_cache(tmp_path_factory):
    """Builds the native PyTorch hook once per session into a fresh cache and
    points $PROFKIT_CACHE_DIR there for the rest of the session (in-process
    loads and subprocesses alike). Skips where torch is not installed."""
    pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")
    root = tmp_path_factory.mktemp("profkit_cache")
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(root))
    process = subprocess.run(
        [sys.executable, "-m", "profkit.integrations.torch", "--build"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert process.returncode == 0, f"building the native hook failed:\n{process.stdout}\n{process.stderr}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROFKIT_CACHE_DIR", str(root))
        yield HookBuild(root, process)


@pytest.fixture
def pk_torch(torch_hook_cache):
    """profkit.integrations.torch, disabled again after the test."""
    import profkit.integrations.torch as integration

    integration.disable()
    yield integration
    integration.disable()


@pytest.fixture
def no_rank(monkeypatch):
    """No rank from the environment, and none left set in the engine after the test."""
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    yield
    _C.set_rank(-1, -1)
