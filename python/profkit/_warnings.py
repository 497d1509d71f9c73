"""profkit's warning category, so that users can filter profkit's warnings alone."""

import os
import sys
import warnings

__all__ = ["ProfilerWarning", "warn_at_caller"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ProfilerWarning(UserWarning):
    """A profiling setup that works, but not as the user probably meant
    (an improper schedule, GPU tracing unavailable, an unsupported option)."""


def warn_at_caller(message: str) -> None:
    """A ProfilerWarning attributed to the innermost caller outside profkit.

    For warnings raised deep inside profkit (a window listener, a torch
    wrapper), where a fixed stacklevel would name profkit's own file: the
    line shown is the user's ``prof.step()`` or ``with Profiler(...)``.
    """
    level = 2  # the caller of this function
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, ProfilerWarning, stacklevel=level)
