import pytest

from profkit import _C
from profkit import profiler as profiler_module


@pytest.fixture(autouse=True)
def clean_engine():
    """Every test starts and ends with the engine closed and drained, and no Profiler active."""
    _C.set_state(0)
    _C.collect()
    yield
    profiler_module._active = None  # a test that failed mid-run leaves no Profiler behind
    _C.set_state(0)
    _C.collect()
