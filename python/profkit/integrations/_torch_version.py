"""The oldest PyTorch profkit's integrations support, and the check that says so.

The PyTorch and torch.distributed integrations are tested on torch 2.3, 2.4,
2.6, 2.8 (Python 3.9), 2.11 and 2.13. Before 2.3 (2.0 and 2.2 were tried)
the Python fallback, the collective wrappers and several of the native
hook's events go wrong, so an older torch gets a clear error rather than
wrong events.
"""

import re
from types import ModuleType
from typing import Optional, Tuple

MIN_TORCH: Tuple[int, int] = (2, 3)


def torch_major_minor(version: str) -> Optional[Tuple[int, int]]:
    """(2, 6) for "2.6.0+cu124", "2.6.0a0+git1234" or "2.6"; None for what does not parse."""
    match = re.match(r"(\d+)\.(\d+)", str(version))
    return (int(match.group(1)), int(match.group(2))) if match else None


def require_supported_torch(torch: ModuleType, who: str) -> None:
    """Raises RuntimeError, naming the versions and what to do, where ``torch``
    is older than MIN_TORCH. A version that does not parse (a custom build) is
    given the benefit of the doubt."""
    found = torch_major_minor(getattr(torch, "__version__", ""))
    if found is not None and found < MIN_TORCH:
        raise RuntimeError(
            f"{who} needs PyTorch {MIN_TORCH[0]}.{MIN_TORCH[1]} or newer; this is torch {torch.__version__}. "
            "Upgrade it (`pip install -U torch`), or profile without this integration: profkit.Profiler, "
            "RecordEvent and the C ABI work with any torch."
        )
