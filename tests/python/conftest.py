import pytest

from profkit import _C


@pytest.fixture(autouse=True)
def clean_engine():
    """Every test starts and ends with the engine closed and drained."""
    _C.set_state(0)
    _C.collect()
    yield
    _C.set_state(0)
    _C.collect()
