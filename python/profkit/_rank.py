"""This process's rank in a distributed job, for the engine (pk_set_rank).

The Profiler asks at start() and before each collect, so every Result and
file name carries the rank and world size: from torch.distributed when it
is initialized (only when the script already imported it: profkit never
imports torch), else from the RANK and WORLD_SIZE environment variables
that torchrun and most launchers set. When neither is there, the engine
keeps what it had (a framework may have called pk_set_rank itself).
"""

import os
import sys
from typing import Optional, Tuple

from . import _C

__all__ = ["detect_rank", "apply_rank"]


#: The largest rank and world size the engine takes (pk_set_rank: int32).
_MAX_RANK = 2**31 - 1


def _env_int(name: str) -> Optional[int]:
    """The variable as a rank or world size; None when unset or not one (a
    launcher's value this is not: profiling goes on without it)."""
    try:
        value = int(os.environ[name])
    except (KeyError, ValueError):
        return None
    return value if 0 <= value <= _MAX_RANK else None


def detect_rank() -> Optional[Tuple[int, int]]:
    """(rank, world_size) of this process (world_size -1 if unknown), or None."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank()), int(dist.get_world_size())
        except Exception:  # a half-torn-down process group must not stop profiling
            pass
    rank = _env_int("RANK")
    if rank is None:
        return None
    world = _env_int("WORLD_SIZE")
    if world is None or rank >= world:
        world = -1
    return rank, world


def apply_rank() -> Optional[Tuple[int, int]]:
    """Tells the engine the rank detect_rank() finds; returns it (None: unchanged)."""
    found = detect_rank()
    if found is not None:
        _C.set_rank(*found)
    return found
