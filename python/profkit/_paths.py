"""Where the installed engine lives, for C/C++ framework hooks."""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The directory holding ``profkit/profkit.h`` (pass it to ``-I``)."""
    return os.path.join(_HERE, "include")


def get_library() -> str:
    """The path of ``libprofkit.so`` (link it; the Python package uses the same one)."""
    return os.path.join(_HERE, "libprofkit.so")


def get_cmake_dir() -> str:
    """A directory for ``CMAKE_PREFIX_PATH`` so that ``find_package(profkit)`` works."""
    return os.path.join(_HERE, "share", "cmake")
