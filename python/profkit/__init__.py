"""profkit: a low-overhead profiler for PyTorch-like frameworks.

The engine is ``libprofkit.so`` behind a stable C ABI (``get_include()``,
``get_library()``); this package drives the same engine from Python.
"""

from . import _C
from ._paths import get_cmake_dir, get_include, get_library

__version__ = _C.version()

__all__ = ["get_include", "get_library", "get_cmake_dir", "__version__"]
