"""Builds and loads profkit's native PyTorch hook (``_torch_hook.cpp`` and the files it uses).

The hook is compiled against the torch installed next to profkit, on first
use, with ``torch.utils.cpp_extension`` (a C++ compiler and ninja, which the
``profkit[torch]`` extra installs), so torch is never a build requirement of
profkit. Each build lands in a cache directory keyed by everything the
binary depends on::

    $PROFKIT_CACHE_DIR/torch_hook/<key>/profkit_torch_hook.so
    (default: $XDG_CACHE_HOME/profkit where that is absolute, else ~/.cache/profkit)

where ``<key>`` names the torch version, the Python ABI and the profkit
version, plus a digest of the hook's source and of the libraries it links
to, so a changed torch, profkit or source gets its own build and a stale
binary is never loaded. Later processes load the cached binary directly
(no compiler, no ninja, a few milliseconds).

Builds are serialized across processes (DataLoader workers, DDP ranks) by an
exclusive ``flock`` on ``<key>.lock``, which the OS releases if a builder
dies; a build goes to a private directory renamed into place when complete,
so a half-built binary is never seen under the final name. Beside the binary,
``profkit_torch_hook.so.sha256`` holds its size and digest, checked before
each load: a cut copy of the cache (a partial rsync, disk trouble) would
otherwise be mapped by the dynamic loader and kill the process with SIGBUS;
a binary that does not match (or has no such file) is built again. The build
directory gets the usual permissions (0755 less the umask), so a hook built
by one user (root, in a Docker image) loads for the others.

Any trouble with the cache (no home directory, a directory that cannot be
read or written) is a NativeBuildError saying where and what to do, so the
integration falls back to its pure-Python recorder instead of failing.

``python -m profkit.integrations.torch --build`` builds ahead of time.
"""

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import IO, Callable, Dict, Iterator, NamedTuple, Optional

from .. import _C
from .._gzip_files import remove_quietly
from .._paths import get_include, get_library

__all__ = ["NativeHook", "NativeBuildError", "MissingBuildTool", "cache_root", "build_dir", "load"]

MODULE_NAME = "profkit_torch_hook"
_HERE = Path(__file__).parent
SOURCES = [
    _HERE / "_torch_hook.cpp",
    _HERE / "_torch_call_ranges.cpp",
    _HERE / "_torch_flops.cpp",
    _HERE / "_torch_memory.cpp",
    _HERE / "_torch_op_names.cpp",
    _HERE / "_torch_thread_writers.cpp",
    _HERE / "_torch_user_ranges.cpp",
]
HEADERS = [
    _HERE / "_torch_call_ranges.h",
    _HERE / "_torch_flops.h",
    _HERE / "_torch_memory.h",
    _HERE / "_torch_op_names.h",
    _HERE / "_torch_thread_writers.h",
    _HERE / "_torch_user_ranges.h",
    _HERE / "_torch_name_scan.h",
    _HERE / "_torch_hook_layout.h",
]
_BINARY = MODULE_NAME + ".so"  # the name torch.utils.cpp_extension gives it
_CHECKSUM = _BINARY + ".sha256"  # "<size> <sha256 hex>" of the binary, written last
_CACHE_REMEDY = "set PROFKIT_CACHE_DIR to a writable directory"
# -fvisibility=hidden: the module exports PyInit only, so calls between its
# own functions are direct rather than through the PLT; -fno-plt: its calls
# into libprofkit (pk_begin_event/pk_end_event on every operator) and torch
# jump through the GOT without a PLT stub, one code line fewer per call.
_CFLAGS = ["-O2", "-DNDEBUG", "-fvisibility=hidden", "-fno-plt", "-Wall", "-Wextra", "-Wshadow"]
if os.environ.get("PROFKIT_TORCH_HOOK_WERROR"):
    # scripts/test.sh sets it: the hook is built at run time, so this is
    # where CI holds it to warnings as errors like the rest of the C++.
    _CFLAGS.append("-Werror")
if platform.machine() in ("x86_64", "AMD64"):
    # TLS descriptors, as libprofkit.so itself uses: the hook's per-thread
    # table of names built per call is read tens of times per training step,
    # and in a dlopen'd module the default model costs a __tls_get_addr call
    # per read.
    _CFLAGS.append("-mtls-dialect=gnu2")


class NativeBuildError(RuntimeError):
    """The native hook could not be built or loaded; the message says why and what to do."""


class MissingBuildTool(NativeBuildError):
    """No C++ compiler or no ninja: installing them gets the native hook."""


class NativeHook(NamedTuple):
    """A loaded native hook."""

    module: ModuleType  # install / uninstall / set_record_shapes / set_with_flops / memory_window / installed / armed
    path: Path  # the binary that was loaded
    built: bool  # True when this call compiled it (False: taken from the cache)
    build_seconds: float


def cache_root() -> Path:
    """``$PROFKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/profkit``, else ``~/.cache/profkit``.

    Raises:
        NativeBuildError: none is set and there is no home directory.
    """
    try:
        configured = os.environ.get("PROFKIT_CACHE_DIR")
        if configured:
            return Path(configured).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME")
        if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
            return Path(xdg) / "profkit"
        return Path.home() / ".cache" / "profkit"
    except RuntimeError as e:  # "Could not determine home directory.": no $HOME and no passwd entry for the uid
        raise NativeBuildError(f"no home directory to cache the native PyTorch hook in ({e}); {_CACHE_REMEDY}") from e


def _key(torch: ModuleType) -> str:
    digest = hashlib.sha256()
    for source in SOURCES + HEADERS:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    # The binary links to this libprofkit.so and to this torch's libraries
    # (by SONAME, resolved in the process that already loaded them); a
    # different install of either gets a different build.
    for part in (get_library(), os.path.dirname(torch.__file__), torch.__version__, sys.version, *_CFLAGS):
        digest.update(b"\0" + part.encode())
    # The hook inlines the C ABI's writer (profkit.h, the pk_thread_writer
    # layout): a profkit whose header changed needs a new build, whatever
    # its version string says.
    digest.update(b"\0" + (Path(get_include()) / "profkit" / "profkit.h").read_bytes())
    digest.update(b"\0" + str(_C.api_version()).encode())
    abi = sys.implementation.cache_tag or "py"
    return f"torch-{torch.__version__}-{abi}-profkit-{_C.version()}-{digest.hexdigest()[:16]}"


def build_dir(torch: ModuleType) -> Path:
    """Where the hook for this torch, Python and profkit is (or will be) cached.

    Raises:
        NativeBuildError: no cache directory can be named, or the hook's sources are missing.
    """
    root = cache_root()
    try:
        return root / "torch_hook" / _key(torch)
    except OSError as e:
        raise NativeBuildError(
            f"the native hook's sources are missing from this profkit install ({e}); reinstall profkit"
        ) from e


# Loaded in this process, by path: loading again would initialize the module
# again (a second CallRange type over the same C state).
_loaded: Dict[Path, ModuleType] = {}


def _import(path: Path) -> ModuleType:
    module = _loaded.get(path)
    if module is not None:
        return module
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(path), loader=loader)
    if spec is None:  # pragma: no cover - only for paths without a known suffix
        raise ImportError(f"cannot make an import spec for {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    _loaded[path] = module
    return module


def _checksum(binary: Path) -> str:
    data = binary.read_bytes()  # ~0.1-0.3 MB: well under a millisecond to hash
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}\n"


def _intact(binary: Path) -> bool:
    """Whether ``binary`` is there, whole, as its build wrote it (see _CHECKSUM).

    Raises:
        OSError: it cannot be read (other than not being there).
    """
    try:
        expected = (binary.parent / _CHECKSUM).read_bytes()  # bytes: a damaged file need not be text
        return _checksum(binary).encode() == expected
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False  # not built, or built by a profkit that wrote no checksum: build it (again)


def _load_cached(binary: Path) -> Optional[ModuleType]:
    """The cached hook if it is whole and loads; None: (re)build it.

    Raises:
        OSError: the cache cannot be read.
    """
    if binary in _loaded:
        return _loaded[binary]
    if not _intact(binary):
        return None
    try:
        return _import(binary)
    except (ImportError, OSError):  # intact, yet it does not load here (say, a libprofkit.so that changed)
        return None


@contextlib.contextmanager
def _exclusive(lock_path: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Holds an exclusive flock on ``lock_path`` (calls ``on_wait`` once if it must wait)."""
    with open(lock_path, "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def _ninja_on_path() -> Iterator[None]:
    """torch.utils.cpp_extension runs ``ninja`` from PATH; a venv's pip-installed
    ninja is not there unless the venv is activated."""
    if shutil.which("ninja") is not None:
        yield
        return
    try:
        import ninja  # type: ignore[import-not-found]
    except ImportError:
        yield  # cpp_extension says that ninja is missing
        return
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + saved
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def _require_tools() -> None:
    """The two usual reasons a build cannot start, said plainly."""
    compiler = os.environ.get("CXX", "c++")
    program = shlex.split(compiler)[0] if compiler.strip() else "c++"
    if shutil.which(program) is None:
        raise MissingBuildTool(
            f"no C++ compiler: {program!r} ($CXX, default c++) is not found; install one "
            "(Debian/Ubuntu: apt-get install g++) or set CXX"
        )
    if shutil.which("ninja") is None and importlib.util.find_spec("ninja") is None:
        raise MissingBuildTool("ninja is not installed; pip install ninja (or: pip install 'profkit[torch]')")


def _ninja_shell_quote(arg: str) -> str:
    """``arg`` as one word in a build.ninja variable that ninja runs through /bin/sh.

    cpp_extension joins extra_ldflags with spaces, unquoted (it quotes its own
    include paths the same way: shlex.quote); ninja's own escape is ``$``.
    """
    return shlex.quote(arg).replace("$", "$$")


def _compile(torch: ModuleType, into: Path, verbose: bool) -> ModuleType:
    from torch.utils import cpp_extension

    libdir = os.path.dirname(get_library())
    with _ninja_on_path():
        return cpp_extension.load(
            name=MODULE_NAME,
            sources=[str(source) for source in SOURCES],
            extra_cflags=_CFLAGS,
            extra_include_paths=[get_include()],
            # libprofkit.so by its SONAME: the process already has it loaded
            # (profkit._C links it), so the hook and Python share one engine.
            # Quoted: a libdir with a space (a venv in "my venv") is one word.
            extra_ldflags=[
                _ninja_shell_quote(f"-L{libdir}"),
                "-l:libprofkit.so",
                _ninja_shell_quote(f"-Wl,-rpath,{libdir}"),
            ],
            build_directory=str(into),
            verbose=verbose,
        )


_EXPLAIN_LINE_CHARS = 300  # compile commands run to thousands of characters


def _explain(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    lines = text.splitlines()
    if len(lines) > 20:  # a compiler's output: the first line and the end say what failed
        lines = lines[:1] + ["..."] + lines[-15:]
    lines = [line if len(line) <= _EXPLAIN_LINE_CHARS else line[:_EXPLAIN_LINE_CHARS] + " ..." for line in lines]
    if "No space left on device" in text or "Disk quota exceeded" in text:
        lines.append(f"The cache's disk is full: free space there, or {_CACHE_REMEDY}")
    return "\n".join(lines)


def _write_failure(path: Path, why: str) -> None:
    """Leaves why a build failed for the processes waiting for it (best effort)."""
    try:
        path.write_text(why)
    except OSError:
        pass  # they build for themselves, as before


def _read_failure(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _remove_killed_builds(final: Path) -> None:
    """Removes the scratch directories of builds of ``final`` that were killed
    (SIGKILL skips their cleanup). Called holding the build's lock: no other
    build of ``final`` is running."""
    for stale in final.parent.glob(final.name + ".build-*"):
        shutil.rmtree(stale, ignore_errors=True)


def load(
    torch: ModuleType, *, verbose: bool = False, notice: Optional[IO[str]] = None, rebuild: bool = False
) -> NativeHook:
    """Loads the hook for this torch from the cache, building it there first if needed.

    Args:
        torch: the imported torch module.
        verbose: show the compiler's commands and output.
        notice: where to say that a build starts (it takes seconds); None: stderr.
        rebuild: build again even when a cached binary exists.

    Raises:
        NativeBuildError: no compiler, no ninja (a MissingBuildTool), a compile
            error, no home directory, a cache directory that cannot be read or
            written; the message says which and what to do.
    """
    final = build_dir(torch)
    try:
        return _load_or_build(torch, final, verbose, sys.stderr if notice is None else notice, rebuild)
    except OSError as e:  # the cache's: the compiler's own are a NativeBuildError already
        where = e.filename if e.filename is not None else final
        raise NativeBuildError(
            f"cannot use the native PyTorch hook's cache: {where}: {e.strerror or e}; {_CACHE_REMEDY}"
        ) from e


def _load_or_build(torch: ModuleType, final: Path, verbose: bool, out: IO[str], rebuild: bool) -> NativeHook:
    binary = final / _BINARY
    if not rebuild:
        module = _load_cached(binary)
        if module is not None:
            return NativeHook(module, binary, False, 0.0)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NativeBuildError(
            f"cannot create the cache directory {final.parent}: {e.strerror or e}; {_CACHE_REMEDY}"
        ) from e

    waited = False

    def say_waiting() -> None:
        nonlocal waited
        waited = True
        print(f"profkit: waiting for another process building the native PyTorch hook in {final}", file=out)

    failure = final.parent / (final.name + ".failed")
    with _exclusive(final.parent / (final.name + ".lock"), say_waiting):
        if not rebuild:  # built by the process we waited for?
            module = _load_cached(binary)
            if module is not None:
                return NativeHook(module, binary, False, 0.0)
        if waited and not rebuild:
            # Its build failed: the same one here would fail the same way,
            # after as long again (eight DDP ranks, one after another).
            why = _read_failure(failure)
            if why is not None:
                raise NativeBuildError(f"{why} (the build another process just ran, while this one waited)")
        _require_tools()
        why = "first use"
        if rebuild:
            why = "rebuild"
        elif binary.exists():
            why = "the cached one is damaged or does not load"
        print(
            f"profkit: compiling the native PyTorch hook for torch {torch.__version__} ({why}, about 10 s); "
            f"cached in {final}",
            file=out,
            flush=True,
        )
        started = time.perf_counter()
        _remove_killed_builds(final)
        # mkdtemp's directory is private (0700); the build goes to one made
        # inside it with 0755, less the umask, so that once renamed into place
        # other users can load it too.
        private = Path(tempfile.mkdtemp(prefix=final.name + ".build-", dir=final.parent))
        try:
            scratch = private / final.name
            scratch.mkdir(0o755)
            try:
                module = _compile(torch, scratch, verbose)
            except NativeBuildError as e:
                _write_failure(failure, str(e))
                raise
            except Exception as e:  # cpp_extension raises RuntimeError, OSError, CalledProcessError...
                error = NativeBuildError(f"building the native PyTorch hook failed: {_explain(e)}")
                _write_failure(failure, str(error))
                raise error from e
            remove_quietly(str(failure))  # built: nothing to tell a waiter any more
            (scratch / _CHECKSUM).write_text(_checksum(scratch / _BINARY))
            if final.exists():
                shutil.rmtree(final)
            # Complete, or not there at all. The module stays loaded from the
            # same file (a rename keeps the inode), so no second copy is loaded.
            os.replace(scratch, final)
        finally:
            shutil.rmtree(private, ignore_errors=True)
        module.__file__ = str(binary)
        _loaded[binary] = module
        return NativeHook(module, binary, True, time.perf_counter() - started)
