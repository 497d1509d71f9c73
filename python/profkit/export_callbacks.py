"""on_trace_ready callbacks that write each returned window to a file (SPEC §4).

``export_chrome_tracing(dir)`` writes
``{worker_name}_time_{%Y_%m_%d_%H_%M_%S_%f}.trace.json`` (Chrome trace JSON for
chrome://tracing and ui.perfetto.dev); ``export_protobuf(dir)`` (Paddle's
name) writes the same stem with ``.pktrace``, profkit's binary trace that
``load_profiler_result`` reads. The time in the name is when the window
began (local time), so both files of one window share their stem, however
long the first export took. A window whose name is taken already (another
window of the same worker began in the same microsecond) gets ``_1``,
``_2``... before the suffix. With ``use_gzip=True`` the Chrome JSON is
written gzip-compressed, as ``.trace.json.gz``.

A file appears under its final name only once it is whole: the trace is
written to a hidden file next to it and hard-linked to the first free name
(a link, unlike a rename, never replaces a file already there), so a crash
at any point leaves no file, half or empty, under a trace's name, where
``profkit merge dir/*.trace.json`` would stumble on it. On a file system
without hard links the name is claimed with an empty file and the trace
renamed over it: the empty file exists only for the rename's instant.
"""

import datetime
import errno
import os
import socket
import uuid
from typing import TYPE_CHECKING, Callable, List, Optional

from . import _rank
from ._gzip_files import remove_quietly

if TYPE_CHECKING:  # pragma: no cover
    from .profiler import Profiler
    from .result import ProfilerResult

__all__ = ["export_chrome_tracing", "export_protobuf", "default_worker_name", "trace_file_name"]

CHROME_SUFFIX = ".trace.json"
PKTRACE_SUFFIX = ".pktrace"
GZIP_SUFFIX = ".gz"


def default_worker_name(rank: Optional[int] = None) -> str:
    """``host_{hostname}pid_{pid}``, plus ``rank_{r}`` when a rank is known.

    The rank is ``rank`` when given (>= 0), else what ``_rank.detect_rank``
    finds: torch.distributed's when initialized, else the ``RANK``
    environment variable (torchrun and most launchers set it).
    """
    name = f"host_{socket.gethostname()}pid_{os.getpid()}"
    if rank is None or rank < 0:
        found = _rank.detect_rank()
        rank = found[0] if found is not None else None
    if rank is not None:
        name += f"rank_{rank}"
    return name


def trace_file_name(worker_name: str, suffix: str, now: Optional[datetime.datetime] = None) -> str:
    """``{worker_name}_time_{%Y_%m_%d_%H_%M_%S_%f}{suffix}``."""
    stamp = (now or datetime.datetime.now()).strftime("%Y_%m_%d_%H_%M_%S_%f")
    return f"{worker_name}_time_{stamp}{suffix}"


def _window_start_time(result: Optional["ProfilerResult"]) -> Optional[datetime.datetime]:
    """When a window's recording began, as a local datetime (None without a result)."""
    if result is None:
        return None
    info = result.info
    wall_ns = info["start_ns"] + info["clock_offset_ns"]
    seconds, ns = divmod(wall_ns, 1_000_000_000)
    return datetime.datetime.fromtimestamp(seconds) + datetime.timedelta(microseconds=ns // 1000)


def _make_dir(dir_name: str) -> None:
    if os.path.lexists(dir_name) and not os.path.isdir(dir_name):
        raise NotADirectoryError(
            errno.ENOTDIR,
            f"profkit: the trace directory {dir_name!r} exists and is not a directory (a file, or a link to "
            "nothing); remove it or choose another dir_name",
        )
    try:
        os.makedirs(dir_name, exist_ok=True)
    except OSError as e:
        raise OSError(
            e.errno, f"profkit: cannot create the directory {dir_name!r} for trace files ({e.strerror})"
        ) from e


def _reserve_path(dir_name: str, file_name: str, suffix: str) -> str:
    """Creates an empty file under a name no one else holds and returns its path.

    For file systems without hard links (_publish). Two windows of one
    worker that began in the same microsecond (two Profilers, in threads or
    processes writing to one directory) get ``_1``, ``_2``... before the
    suffix. Checking that a name is free is not enough: a rename into place
    replaces whatever file is there, so two exporters that both found a name
    free would both write it, and one trace would be lost. O_EXCL creation
    claims the name atomically; the rename then replaces our empty file.
    """
    stem = file_name[: -len(suffix)]
    k = 0
    while True:
        path = os.path.join(dir_name, file_name if k == 0 else f"{stem}_{k}{suffix}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return path
        except FileExistsError:
            k += 1
        except OSError as e:
            raise OSError(e.errno, f"profkit: cannot create the trace file {path!r} ({e.strerror})") from e


# link() errors that mean the file system has no hard links (FAT, some
# FUSE and network file systems): publish by claim and rename instead.
# The longest name of a file in a directory (ext4, XFS, tmpfs...), and the
# longest suffix a trace file gets.
_NAME_MAX = 255
_longest_suffix = CHROME_SUFFIX + GZIP_SUFFIX

_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS, errno.EACCES}


def _publish(written: str, dir_name: str, file_name: str, suffix: str) -> str:
    """Gives the whole file ``written`` the first free name of ``file_name``'s
    series (``_1``, ``_2``... as _reserve_path) and returns it."""
    stem = file_name[: -len(suffix)]
    k = 0
    while True:
        path = os.path.join(dir_name, file_name if k == 0 else f"{stem}_{k}{suffix}")
        try:
            os.link(written, path)
        except FileExistsError:
            k += 1
            continue
        except OSError as e:
            if e.errno not in _NO_HARD_LINKS:
                raise OSError(e.errno, f"profkit: cannot create the trace file {path!r} ({e.strerror})") from e
            path = _reserve_path(dir_name, file_name, suffix)
            os.replace(written, path)
            return path
        os.remove(written)
        return path


def _write_new_file(dir_name: str, file_name: str, suffix: str, write: Callable[[str], None]) -> str:
    """Writes a trace through ``write(path)`` and publishes it under a free name
    of ``file_name``'s series, only once whole; returns that name. Nothing is
    left behind when ``write`` fails."""
    # Hidden, and unique to this write: exporters of other threads and
    # processes write their own (a pid and a thread id are not enough:
    # containers sharing a log directory all run as pid 1). The suffix is
    # kept: it picks the format. (Not named after file_name: a name near
    # NAME_MAX would not fit.)
    written = os.path.join(dir_name, f".profkit-partial.{os.getpid()}.{uuid.uuid4().hex}{suffix}")
    try:
        write(written)
        return _publish(written, dir_name, file_name, suffix)
    except OSError as e:
        remove_quietly(written)
        if written not in str(e):
            raise
        # The engine names the file it wrote, the hidden one, gone now.
        target = os.path.join(dir_name, file_name)
        cause = os.strerror(e.errno) if e.errno else str(e).replace(written, os.path.basename(written))
        raise OSError(
            e.errno,
            f"profkit: cannot write the trace file {target!r} ({cause}); free space or choose another "
            "dir_name (the window is still in prof.profiler_result: prof.export(path) writes it elsewhere)",
        ) from e
    except BaseException:
        remove_quietly(written)
        raise



class TraceExporter:
    """An on_trace_ready callback writing each returned window to ``dir_name``.

    ``paths`` lists the files written so far, oldest first.
    """

    def __init__(self, dir_name: str, worker_name: Optional[str], fmt: str, use_gzip: bool = False) -> None:
        if not isinstance(dir_name, (str, bytes, os.PathLike)):
            raise TypeError(f"profkit: dir_name must be a path, not {type(dir_name).__name__}")
        self.dir_name = os.fsdecode(dir_name)  # bytes too, as ProfilerResult.save takes them
        if not self.dir_name:
            raise ValueError("profkit: dir_name must not be empty ('.' is the current directory)")
        # Where files go, absolute: a later os.chdir() must not send later
        # windows elsewhere. (dir_name stays as given, for repr.)
        self._directory = os.path.abspath(self.dir_name)
        if worker_name is not None:
            if not isinstance(worker_name, str):
                raise TypeError(f"profkit: worker_name must be a str, not {type(worker_name).__name__}")
            if not worker_name or "/" in worker_name or os.sep in worker_name or "\0" in worker_name:
                raise ValueError(
                    f"profkit: worker_name {worker_name!r} must be a non-empty file name part, without '/' "
                    "or NUL (the directory goes in dir_name)"
                )
            # The longest name a window can get: the time and a _N for windows of one microsecond.
            longest = len(os.fsencode(trace_file_name(worker_name, "_999" + _longest_suffix)))
            if longest > _NAME_MAX:
                raise ValueError(
                    f"profkit: worker_name is too long: the trace files' names would have {longest} bytes, more "
                    f"than a file name can ({_NAME_MAX}); shorten it by {longest - _NAME_MAX}"
                )
        if not isinstance(use_gzip, bool):
            raise TypeError(f"profkit: use_gzip must be True or False, not {use_gzip!r}")
        self.worker_name = worker_name
        self.format = fmt
        self.use_gzip = use_gzip
        self.suffix = (CHROME_SUFFIX if fmt == "json" else PKTRACE_SUFFIX) + (GZIP_SUFFIX if use_gzip else "")
        self.paths: List[str] = []
        _make_dir(self._directory)

    def __call__(self, prof: "Profiler") -> None:
        result = prof.profiler_result
        worker = self.worker_name
        if not worker:
            worker = default_worker_name(result.info["rank"] if result is not None else None)
        _make_dir(self._directory)  # again: it may have been removed since
        file_name = trace_file_name(worker, self.suffix, _window_start_time(result))
        path = _write_new_file(self._directory, file_name, self.suffix, lambda p: prof.export(p, format=self.format))
        self.paths.append(path)

    def __repr__(self) -> str:
        name = "export_chrome_tracing" if self.format == "json" else "export_protobuf"
        gzip = ", use_gzip=True" if self.use_gzip else ""
        return f"{name}({self.dir_name!r}, worker_name={self.worker_name!r}{gzip})"


def export_chrome_tracing(dir_name: str, worker_name: Optional[str] = None, *, use_gzip: bool = False) -> TraceExporter:
    """An on_trace_ready callback that writes each window as Chrome trace JSON.

    Creates ``dir_name`` (now, and again before each write if it vanished)
    and writes ``{worker_name}_time_{%Y_%m_%d_%H_%M_%S_%f}.trace.json`` there,
    the time being when the window began. ``worker_name`` defaults to ``host_{hostname}pid_{pid}`` (+ ``rank_{r}``).
    ``use_gzip=True`` (as torch.profiler's ``tensorboard_trace_handler``)
    writes ``....trace.json.gz``, about a tenth of the size, which
    ui.perfetto.dev and ``load_profiler_result`` open as they are.
    """
    return TraceExporter(dir_name, worker_name, "json", use_gzip)


def export_protobuf(dir_name: str, worker_name: Optional[str] = None) -> TraceExporter:
    """An on_trace_ready callback that writes each window as a ``.pktrace`` file.

    paddle.profiler's name for its binary format; profkit writes its own
    FlatBuffers trace, which ``load_profiler_result`` reads back and
    ``profkit export`` turns into Chrome JSON. Naming as export_chrome_tracing.
    """
    return TraceExporter(dir_name, worker_name, "pb")
