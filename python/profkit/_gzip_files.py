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
  or mapping). Only what can be a trace is decompressed: the first bytes
  must begin a .pktrace or JSON, and a .pktrace stops at the size its
  header gives (so a small .gz of a few GB of anything else is refused
  after its first KiB, not written out in full first);
- a pipe, FIFO or device (``profkit info <(cat t.pktrace.gz)``, ``... |
  profkit summary /dev/stdin``) can be read only once, so what it holds is
  read here, once, into a temporary file (decompressed if it is gzip), the
  same way.

Thread-safety: none needed (each call works on its own files).
"""

import contextlib
import gzip
import io
import os
import shutil
import stat
import tempfile
import uuid
import zlib
from typing import Any, BinaryIO, Callable, Iterator, Optional, Tuple, Union

from ._output_files import OutputFile, output_file, written

__all__ = [
    "GZIP_SUFFIX",
    "is_gzip_name",
    "without_gzip_suffix",
    "is_gzip_file",
    "write_gzipped",
    "gunzip_to_temporary",
    "load_gunzipped",
    "copy_unseekable_to_temporary",
    "is_stream",
    "load_stream",
    "remove_quietly",
]

GZIP_SUFFIX = ".gz"
_MAGIC = b"\x1f\x8b"
# zlib's default. On 41 MB of Chrome JSON (BENCHMARKS.md): 18x smaller at
# 220 MB/s; level 9 (gzip's own default, torch.profiler's) 3 % smaller at a
# quarter of the speed; level 1 13x at 565 MB/s.
_LEVEL = 6
_CHUNK = 1 << 20

# What the engine reads (cpp/storage/trace_reader.cpp): a .pktrace is one
# size-prefixed FlatBuffer, its 4-byte little-endian size, a 4-byte root
# offset and then the identifier "PKTR"; at most FLATBUFFERS_MAX_BUFFER_SIZE
# - 1 bytes in all. Its Chrome JSON begins with '{' or '[' within the first
# 4 KiB (after a UTF-8 byte order mark and blanks: starts_like_json).
_PKTRACE_IDENTIFIER = b"PKTR"
_PKTRACE_MAX_BYTES = (1 << 31) - 2
_HEAD_BYTES = 4096
_BOM = b"\xef\xbb\xbf"

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]


def is_gzip_name(path: PathLike) -> bool:
    """Whether ``path``'s name ends in ``.gz``, in any case (``.GZ``): what asks for a compressed file."""
    return os.fsdecode(path)[-len(GZIP_SUFFIX) :].lower() == GZIP_SUFFIX


def without_gzip_suffix(path: PathLike) -> str:
    """``path`` as a str without a final ``.gz`` in any case (``x.trace.json.gz`` -> ``x.trace.json``)."""
    name = os.fsdecode(path)
    return name[: -len(GZIP_SUFFIX)] if is_gzip_name(name) else name


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
    while True:
        # Not named after the destination: a name near NAME_MAX would not fit.
        path = os.path.join(directory, f".profkit-plain.{os.getpid()}.{uuid.uuid4().hex[:12]}")
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


def _read_up_to(source: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes of ``source``, fewer only at its end (a pipe's read may return less)."""
    parts = []
    while size > 0:
        part = source.read(size)
        if not part:
            break
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _starts_like_json(head: bytes) -> bool:
    """The engine's starts_like_json: '{' or '[' first, past a byte order mark and blanks."""
    text = head[len(_BOM) :] if head.startswith(_BOM) else head
    return text.lstrip(b" \t\r\n")[:1] in (b"{", b"[")


def _copy_trace(source: BinaryIO, out: BinaryIO, shown: str) -> None:
    """Copies what ``source`` holds to ``out`` as far as a trace can go.

    A .pktrace is copied up to the size its header gives, which is at most
    the largest trace there can be (a ValueError past either), JSON whole
    (the engine reads JSON files as a stream, of any size), and anything
    else only its first 4 KiB: enough for the engine to say what it is
    (empty, gzip again, not a trace) without writing out gigabytes first.
    """
    head = _read_up_to(source, _HEAD_BYTES)
    if len(head) >= 12 and head[8:12] == _PKTRACE_IDENTIFIER:
        size = int.from_bytes(head[:4], "little") + 4
        if size > _PKTRACE_MAX_BYTES:
            raise ValueError(
                f"{shown!r}: its .pktrace header gives a size of {size} bytes, more than a profkit trace can be "
                f"({_PKTRACE_MAX_BYTES}); the file is corrupt"
            )
        copied = min(len(head), size)
        out.write(head[:copied])
        while copied < size:
            chunk = source.read(min(_CHUNK, size - copied))
            if not chunk:
                return  # cut short: the engine says so, with both sizes
            out.write(chunk)
            copied += len(chunk)
        if len(head) > size or source.read(1):
            raise ValueError(
                f"{shown!r}: it goes on past the end of the {size}-byte profkit trace it begins with; "
                "the file is corrupt"
            )
    elif _starts_like_json(head):
        out.write(head)
        shutil.copyfileobj(source, out, _CHUNK)
    elif head[:2] == b"\x1f\x8b":  # what the engine would call gzip data, which this just took off once
        raise ValueError(
            f"{shown!r}: it is gzip-compressed twice; decompress it once (gunzip -c FILE > ONCE.gz) and load that"
        )
    else:
        out.write(head)


def _damaged_gzip(shown: str, error: BaseException) -> ValueError:
    return ValueError(f"{shown!r}: its gzip compression is damaged ({error}); the file is truncated or corrupt")


def gunzip_to_temporary(path: PathLike, prefix: str = "profkit-", shown: Optional[PathLike] = None) -> str:
    """Decompresses the gzip file at ``path`` into a new file in the
    temporary directory; returns that file's path (the caller removes it).
    ``shown`` is the name messages give the file (default ``path``; the
    user's file when ``path`` is a copy of it). Only what can be a trace is
    decompressed (see _copy_trace): a .pktrace up to its size, JSON whole,
    anything else its first 4 KiB, for the engine to say what it is.

    Raises:
        ValueError: the compressed data is damaged or truncated, or goes on
            past the .pktrace it holds (the message names ``shown``);
            nothing is left behind.
        OSError: ``path`` cannot be read, or the copy cannot be written.
    """
    name = os.fsdecode(path if shown is None else shown)
    fd, plain = tempfile.mkstemp(prefix=prefix, suffix=".gunzipped")
    with _removed_on_failure(plain, name), open(fd, "wb") as out, gzip.open(path, "rb") as source:
        _copy_trace(source, out, name)
    return plain


@contextlib.contextmanager
def _removed_on_failure(plain: str, name: str) -> Iterator[None]:
    """Removes the copy ``plain`` when making it fails; a damaged gzip stream
    becomes a ValueError naming ``name``."""
    try:
        yield
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        remove_quietly(plain)
        raise _damaged_gzip(name, e) from e
    except BaseException:
        remove_quietly(plain)
        raise


class _Replayed(io.RawIOBase):
    """``source`` with ``head`` (bytes already read from it) put back in front."""

    def __init__(self, head: bytes, source: BinaryIO) -> None:
        super().__init__()
        self._head = head
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._source.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def copy_unseekable_to_temporary(path: PathLike, prefix: str = "profkit-") -> Tuple[str, bool]:
    """Reads a pipe, FIFO or device at ``path`` once into a new file in the
    temporary directory, decompressed if it is gzip-compressed; returns that
    file's path (the caller removes it) and whether it was decompressed. As
    gunzip_to_temporary, only what can be a trace is copied.

    Raises:
        ValueError: as gunzip_to_temporary (naming ``path``).
        OSError: ``path`` cannot be read, or the copy cannot be written.
    """
    name = os.fsdecode(path)
    fd, plain = tempfile.mkstemp(prefix=prefix, suffix=".copy")
    with _removed_on_failure(plain, name), open(fd, "wb") as out, open(path, "rb") as raw:
        magic = _read_up_to(raw, len(_MAGIC))
        stream = io.BufferedReader(_Replayed(magic, raw), _CHUNK)
        compressed = magic == _MAGIC
        if compressed:
            with gzip.GzipFile(fileobj=stream, mode="rb") as source:
                _copy_trace(source, out, name)
        else:
            _copy_trace(stream, out, name)
    return plain, compressed


def is_stream(path: PathLike) -> bool:
    """Whether ``path`` is a pipe, FIFO or device: neither a regular file nor
    a directory, so what it holds can be read only once (False if it cannot
    be looked at: loading it says why)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def load_stream(path: PathLike, load_plain: Callable[[bytes, bool], object]) -> object:
    """Reads the pipe, FIFO or device at ``path`` once into a temporary file
    (decompressed if it is gzip-compressed) and returns ``load_plain(temp,
    decompressed)``.

    Raises:
        ValueError: the compressed data is corrupt or truncated (naming ``path``).
    """
    try:
        plain, decompressed = copy_unseekable_to_temporary(path)
    except ValueError as e:
        raise ValueError(f"cannot load {e}") from e
    try:
        return load_plain(os.fsencode(plain), decompressed)
    finally:
        remove_quietly(plain)


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
