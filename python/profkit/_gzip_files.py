"""Trace files compressed with gzip: written when the name ends in ``.gz``, read by their content.

torch.profiler's ``tensorboard_trace_handler(use_gzip=True)`` writes
``.pt.trace.json.gz``, and ui.perfetto.dev opens gzipped Chrome JSON as it
is: traces are shared that way (Chrome JSON compresses 10-20x). The engine
writes and reads plain files, so compression goes around it here:

- writing: the engine writes a temporary plain file beside the target,
  which is compressed into the target the way the engine writes its files
  (a second temporary renamed into place: a crash or a full disk never
  leaves half a file under the final name);
- reading: the file is decompressed into a temporary file that the engine
  loads (and that is removed at once: the loaded result keeps its own copy
  or mapping).

Thread-safety: none needed (each call works on its own files).
"""

import gzip
import os
import shutil
import stat
import tempfile
import uuid
import zlib
from typing import Callable, Optional, Union

from ._output_files import OutputFile, output_file, written

__all__ = [
    "GZIP_SUFFIX",
    "is_gzip_name",
    "without_gzip_suffix",
    "is_gzip_file",
    "write_gzipped",
    "gunzip_to_temporary",
    "load_gunzipped",
    "remove_quietly",
]

GZIP_SUFFIX = ".gz"
_MAGIC = b"\x1f\x8b"
# zlib's default. On 41 MB of Chrome JSON (BENCHMARKS.md): 18x smaller at
# 220 MB/s; level 9 (gzip's own default, torch.profiler's) 3 % smaller at a
# quarter of the speed; level 1 13x at 565 MB/s.
_LEVEL = 6
_CHUNK = 1 << 20

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def is_gzip_name(path: PathLike) -> bool:
    """Whether ``path``'s name ends in ``.gz`` (what asks for a compressed file)."""
    return os.fsdecode(path).endswith(GZIP_SUFFIX)


def without_gzip_suffix(path: PathLike) -> str:
    """``path`` as a str without a final ``.gz`` (``x.trace.json.gz`` -> ``x.trace.json``)."""
    name = os.fsdecode(path)
    return name[: -len(GZIP_SUFFIX)] if name.endswith(GZIP_SUFFIX) else name


def is_gzip_file(path: PathLike) -> bool:
    """Whether ``path`` is a regular file that begins with gzip's magic bytes.

    False if unreadable, and for anything but a regular file: reading a pipe
    (``profkit summary <(...)``, /dev/stdin) would take its first bytes from
    the engine, which reads it next."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # checked before opening: opening a FIFO connects to it
            return False
        with open(path, "rb") as f:
            return f.read(2) == _MAGIC
    except OSError:
        return False


def remove_quietly(path: str) -> None:
    """Removes a temporary file of ours; one already gone (or not removable) is left to be."""
    try:
        os.remove(path)
    except OSError:
        pass


def _new_plain_file(destination: OutputFile) -> str:
    """An empty file with a fresh name for the plain trace: beside the
    destination (one file system, room where the output goes), or in the
    temporary directory when the destination is a FIFO or device."""
    directory = tempfile.gettempdir() if destination.in_place else destination.directory
    base = os.path.basename(destination.path)
    while True:
        path = os.path.join(directory, f".{base}.{os.getpid()}.{uuid.uuid4().hex[:12]}.plain")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return path
        except FileExistsError:
            continue


def write_gzipped(path: PathLike, write_plain: Callable[[bytes], None]) -> None:
    """Writes ``path`` gzip-compressed: ``write_plain(p)`` writes the plain file at ``p``.

    The compressed file reaches ``path`` as the engine's files do
    (_output_files.py): through a temporary renamed into place, a link
    followed, a FIFO or device written in place; so a crash or a full disk
    never leaves half a file under the final name. The plain temporary is
    removed whatever happens. An OSError names ``path`` (not a temporary);
    write_plain's other errors pass through.
    """
    target = os.fsdecode(path)
    plain = None
    try:
        destination = output_file(target)
        plain = _new_plain_file(destination)
        write_plain(os.fsencode(plain))
        with written(destination) as raw, open(plain, "rb") as source:
            # mtime 0: the same trace compresses to the same bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_LEVEL, mtime=0) as out:
                shutil.copyfileobj(source, out, _CHUNK)
    except OSError as e:
        # No "profkit:" of its own: this is a library's OSError; the CLI adds its prefix.
        message = f"cannot write {target!r}: {e.strerror or e}"
        raise (OSError(e.errno, message) if e.errno is not None else type(e)(message)) from e
    finally:
        if plain is not None:
            remove_quietly(plain)


def gunzip_to_temporary(path: PathLike, prefix: str = "profkit-", shown: Optional[PathLike] = None) -> str:
    """Decompresses the gzip file at ``path`` into a new file in the
    temporary directory; returns that file's path (the caller removes it).
    ``shown`` is the name messages give the file (default ``path``; the
    user's file when ``path`` is a copy of it).

    Raises:
        ValueError: the compressed data is damaged or truncated (the message
            names ``shown``); nothing is left behind.
        OSError: ``path`` cannot be read, or the copy cannot be written.
    """
    fd, plain = tempfile.mkstemp(prefix=prefix, suffix=".gunzipped")
    try:
        with open(fd, "wb") as out, gzip.open(path, "rb") as source:
            shutil.copyfileobj(source, out, _CHUNK)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        remove_quietly(plain)
        raise ValueError(
            f"{os.fsdecode(path if shown is None else shown)!r}: its gzip compression is damaged ({e}); "
            "the file is truncated or corrupt"
        ) from e
    except BaseException:
        remove_quietly(plain)
        raise
    return plain


def load_gunzipped(path: PathLike, load_plain: Callable[[bytes], object]) -> object:
    """Decompresses the gzip file at ``path`` into a temporary file and returns ``load_plain(temp)``.

    Raises:
        ValueError: the compressed data is corrupt or truncated (naming ``path``).
    """
    try:
        plain = gunzip_to_temporary(path)
    except ValueError as e:
        raise ValueError(f"cannot load {e}") from e
    try:
        return load_plain(os.fsencode(plain))
    finally:
        remove_quietly(plain)
