"""Writing an output file the way the engine's AtomicFileWriter does, for
the files profkit writes in Python (``profkit merge``).

A regular file is written to a temporary in its directory and renamed into
place, so that a crash never leaves half a file under the final name. But a
rename replaces whatever the name held: a symbolic link would become a
regular file (its target left stale) and, as root, ``-o /dev/null`` would
replace the device. So a link is followed and the file it names replaced,
and a FIFO or device (``/dev/stdout``) is written in place.

Thread-safety: no shared state; two writers of one output race as two
``os.replace`` calls do (the last one wins, neither file is torn).
"""

import contextlib
import os
import stat
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Iterator

__all__ = ["OutputFile", "output_file", "written"]


@dataclass(frozen=True)
class OutputFile:
    """Where and how an output is written."""

    path: str  # the file written: the output, or the file its link names
    in_place: bool  # a FIFO or device: opened and written, no temporary

    @property
    def directory(self) -> str:
        """The directory the temporary goes in (same file system as the file, for the rename)."""
        return os.path.dirname(os.path.abspath(self.path))


def output_file(output: str) -> OutputFile:
    """How ``output`` will be written; IsADirectoryError for a directory (or a link to one)."""
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
    if target.in_place:
        with open(target.path, "wb") as out:
            yield out
        return
    # Created like any file (mode from the umask, unlike mkstemp's 0600), under a name nobody else uses.
    temp = os.path.join(target.directory, f".{os.path.basename(target.path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "xb") as out:
            yield out
        os.replace(temp, target.path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
