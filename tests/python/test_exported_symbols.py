"""The installed libraries export only what their users bind to.

libprofkit.so is the C ABI: its dynamic symbols are the pk_* functions and
variables of profkit.h, nothing else (a stray export becomes something a
program can link against, and then an ABI to keep). profkit._C is a Python
extension: Python needs PyInit__C from it, and any other export (pybind11
pulls in typeinfo of std:: and function types with default visibility) can be
bound to, or interposed by, other libraries in the process.

Read with binutils' nm, which is present wherever the package builds; a
missing nm fails the test rather than skipping it, so the check cannot quietly
stop running.
"""

import os
import shutil
import subprocess
import sys

import pytest

import profkit
from profkit import _C

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads ELF dynamic symbol tables (nm -D); Linux builds only"
)


def defined_dynamic_symbols(path):
    """Names of the symbols `path` defines in its dynamic symbol table."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm (binutils) is not on PATH; it is needed to check the exported symbols of " + path)
    done = subprocess.run(
        [nm, "-D", "--defined-only", "--format=posix", path], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, f"nm -D {path} failed:\n{done.stderr}"
    # posix format: "name type value [size]", one symbol per line.
    names = [line.split()[0] for line in done.stdout.splitlines() if line.strip()]
    assert names, f"nm -D found no defined dynamic symbols in {path}; is it a shared object?"
    return names


def installed_libprofkit():
    package = os.path.dirname(profkit.__file__)
    candidates = sorted(
        os.path.join(package, name)
        for name in os.listdir(package)
        if name.startswith("libprofkit.so") and not os.path.islink(os.path.join(package, name))
    )
    assert candidates, f"no libprofkit.so in the installed package ({package})"
    return candidates


def test_libprofkit_exports_only_pk_symbols():
    for path in installed_libprofkit():
        names = defined_dynamic_symbols(path)
        others = sorted(name for name in names if not name.startswith("pk_"))
        assert not others, f"{path} exports symbols outside the C ABI (only pk_* may be exported): {others}"
        assert "pk_begin_event" in names, f"{path} does not export pk_begin_event: {sorted(names)}"


def test_extension_exports_only_its_init_function():
    names = defined_dynamic_symbols(_C.__file__)
    assert names == ["PyInit__C"], (
        f"{_C.__file__} must export only PyInit__C (python/bindings/_C.version); it also exports: "
        f"{sorted(set(names) - {'PyInit__C'})}"
    )
