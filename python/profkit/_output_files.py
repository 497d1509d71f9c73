"""Writing an output file the way the engine's AtomicFileWriter does, for
the files profkit writes in Python (``profkit merge``).

A regular file is written to a temporary in its directory and renamed into
place, so that a crash never leaves half a file under the final name. But a
rename replaces whatever the name held: a symbolic link would become a
regular file (its target left stale) and, as root, ``-o /dev/null`` would
replace the device. So a link is followed and the file it names replaced,
and a FIFO or device is written in place.

A name for one of this process's open descriptors (``/dev/stdout``,
``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``) is written through that
descriptor, whatever it is open on: ``profkit merge ... -o - >> log.txt``
has a regular file there, which its link (/proc/self/fd/1) resolves to, and
which a rename would replace (the log's earlier text lost) and a new open
would write from its start. Through the descriptor the output lands where
the shell put it: appended, or at the descriptor's offset.

Thread-safety: no shared state; two writers of one output race as two
``os.replace`` calls do (the last one wins, neither file is torn).
"""

import contextlib
import errno
import os
import re
import stat
import sys
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional

__all__ = ["OutputFile", "output_file", "written", "open_descriptor", "check_directory"]

# Names of this process's own open descriptors, as written (the engine's
# AtomicFileWriter knows the same ones); the pid form is matched against our
# own pid.
_STANDARD = {"/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|[0-9]+)/fd)/([0-9]+)")


@dataclass(frozen=True)
class OutputFile:
    """Where and how an output is written."""

    path: str  # the file written: the output, or the file its link names
    in_place: bool  # a FIFO, device or open descriptor: written as it is, no temporary
    descriptor: Optional[int] = None  # written through this open descriptor of ours (/dev/stdout: 1)

    @property
    def directory(self) -> str:
        """The directory the temporary goes in (same file system as the file, for the rename)."""
        return os.path.dirname(os.path.abspath(self.path))


def open_descriptor(output: str) -> Optional[int]:
    """The descriptor of ours that ``output`` names (``/dev/stdout``: 1,
    ``/dev/fd/5``: 5), or None for any other name."""
    if output in _STANDARD:
        return _STANDARD[output]
    match = _DESCRIPTOR.fullmatch(output)
    if match is None:
        return None
    owner = output.split("/")[2]
    if owner.isdigit() and int(owner) != os.getpid():
        return None  # another process's descriptor: a file like any other
    return int(match.group(1))


def check_directory(output: str) -> None:
    """Refuses, before anything is read or written, an output whose directory
    does not exist (FileNotFoundError) or is not a directory
    (NotADirectoryError); the message names the output and the directory.
    Outputs are not given missing directories: as the engine's writers
    (save, export_chrome_tracing, export_stacks), a mistyped directory is an
    error, not a new tree."""
    if open_descriptor(output) is not None:
        return
    directory = os.path.dirname(output)
    if not directory or os.path.isdir(directory):
        return
    if os.path.exists(directory):
        raise NotADirectoryError(
            errno.ENOTDIR, f"cannot write {output!r}: {directory!r} is not a directory; give a file path"
        )
    raise FileNotFoundError(
        errno.ENOENT, f"cannot write {output!r}: the directory {directory!r} does not exist; create it first"
    )


def output_file(output: str) -> OutputFile:
    """How ``output`` will be written; IsADirectoryError for a directory (or a link to one)."""
    descriptor = open_descriptor(output)
    if descriptor is not None:
        return OutputFile(output, in_place=True, descriptor=descriptor)
    try:
        mode = os.stat(output).st_mode  # follows links
    except OSError:
        mode = None  # nothing there yet (or a dangling link: its target is created)
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{output!r} is a directory; give a file path")
    if mode is not None and not stat.S_ISREG(mode):
        return OutputFile(output, in_place=True)
    return OutputFile(os.path.realpath(output) if os.path.islink(output) else output, in_place=False)


@contextlib.contextmanager
def written(target: OutputFile) -> Iterator[BinaryIO]:
    """A binary file to write ``target`` through; in place on success, and
    on an exception nothing left behind but what a FIFO or device took."""
    if target.descriptor is not None:
        # A duplicate shares the descriptor's offset and flags (O_APPEND): the
        # output goes where writes to the descriptor itself would.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # whatever was printed first stays first
                stream.flush()
        with os.fdopen(os.dup(target.descriptor), "wb") as out:
            yield out
        return
    if target.in_place:
        # No O_CREAT (it exists) and no O_TRUNC (nothing to a FIFO or a
        # character device, and harmful elsewhere), as the engine's writer.
        flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        with os.fdopen(os.open(target.path, flags), "wb") as out:
            yield out
        return
    # Created like any file (mode from the umask, unlike mkstemp's 0600), under a name nobody else uses
    # (and not the target's own with more added: a name near NAME_MAX would not fit).
    temp = os.path.join(target.directory, f".profkit-tmp.{uuid.uuid4().hex}")
    try:
        with open(temp, "xb") as out:
            yield out
        os.replace(temp, target.path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
