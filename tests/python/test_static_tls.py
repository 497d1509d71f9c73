"""The installed libraries keep their thread-local storage small.

Python loads profkit._C (and with it libprofkit.so) with dlopen. glibc gives
a dlopen'd library static TLS -- which a TLS descriptor (-mtls-dialect=gnu2,
as both are built) reads in a few instructions -- only while its TLS block
fits in the small surplus glibc reserves for such libraries (a few hundred
bytes, shared by every library loaded that way); a larger block goes to
dynamic TLS, and every thread-local access becomes a call into the dynamic
loader. Both hot paths read thread-locals: the engine's recording calls,
RecordEvent's list of open ranges and with_stack's per-call tracer (until
_C kept its 6 KiB list of open ranges on the heap, each of those accesses
went through the dynamic loader). Large per-thread state belongs on the
heap, behind a thread-local pointer.

Read with binutils' readelf, present wherever the package builds; a missing
readelf fails the test rather than skipping it.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

import profkit
from profkit import _C

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads ELF program headers (readelf -l); Linux builds only"
)

# What each library may keep in TLS: well inside glibc's surplus for dlopen'd
# libraries (rtld.optional_static_tls, 512 bytes by default).
MAX_TLS_BYTES = 256


def tls_bytes(path):
    """The size in memory of `path`'s TLS segment (0 when it has none)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.fail("readelf (binutils) is not on PATH; it is needed to read the TLS segment of " + path)
    done = subprocess.run([readelf, "-lW", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"readelf -lW {path} failed:\n{done.stderr}"
    assert "LOAD" in done.stdout, f"readelf found no program headers in {path}; is it a shared object?"
    # "  TLS  Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align"
    match = re.search(r"^\s*TLS\s+\S+\s+\S+\s+\S+\s+\S+\s+(0x[0-9a-fA-F]+)", done.stdout, re.MULTILINE)
    return int(match.group(1), 16) if match else 0


@pytest.mark.parametrize("library", ["_C", "libprofkit"])
def test_each_library_keeps_its_thread_locals_small_enough_for_static_tls(library):
    package = os.path.dirname(profkit.__file__)
    if library == "_C":
        paths = [_C.__file__]
    else:
        paths = [os.path.join(package, n) for n in os.listdir(package) if n.startswith("libprofkit.so")]
        paths = [p for p in paths if not os.path.islink(p)]
    assert paths, f"no {library} in the installed package ({package})"
    for path in paths:
        size = tls_bytes(path)
        assert size <= MAX_TLS_BYTES, (
            f"{path} keeps {size} bytes of thread-local storage (at most {MAX_TLS_BYTES}): a dlopen'd library "
            "that large gets dynamic TLS, and every thread-local access a call. Keep large per-thread state on "
            "the heap behind a thread-local pointer."
        )
