"""The engine's file errors reach Python as the OSError subclass of their errno.

The C ABI reports the errno of the failed system call (pk_last_error_errno,
1.14) and the binding raises OSError(errno, message) with it, so callers can
catch PermissionError, FileNotFoundError, NotADirectoryError or
IsADirectoryError, and ``e.errno`` is set. ``e.strerror`` keeps the engine's
whole message: it names the path and what to do.
"""

import errno
import os
import tempfile

import pytest

from profkit import _C, load_profiler_result
from profkit.result import ProfilerResult

CLOSED, RECORD = 0, 2
USER_DEFINED = 7


def record_sample():
    _C.set_state(RECORD)
    _C.begin_event_str("range", USER_DEFINED)
    _C.end_event()
    _C.set_state(CLOSED)
    return _C.collect()


@pytest.mark.parametrize("write", ["save", "export_chrome"])
def test_a_parent_that_is_a_file_is_not_a_directory_error(tmp_path, write):
    plain = tmp_path / "plain"
    plain.write_text("x")
    target = str(plain / "run.out")
    with pytest.raises(NotADirectoryError) as caught:
        getattr(record_sample(), write)(target)
    assert caught.value.errno == errno.ENOTDIR and caught.value.filename == target
    assert target in caught.value.strerror and "cannot create" in caught.value.strerror


def test_a_missing_directory_is_file_not_found_with_its_errno(tmp_path):
    target = str(tmp_path / "missing" / "run.pktrace")
    with pytest.raises(FileNotFoundError) as caught:
        record_sample().save(target)
    assert caught.value.errno == errno.ENOENT
    assert target in caught.value.strerror


def test_saving_onto_a_directory_is_refused_before_writing(tmp_path):
    with pytest.raises(IsADirectoryError) as caught:
        record_sample().save(str(tmp_path))
    assert caught.value.errno == errno.EISDIR
    assert caught.value.strerror == f"'{tmp_path}' is a directory; give a file path"
    assert os.listdir(tmp_path) == []  # no temporary left behind


def test_loading_a_missing_file_or_a_directory(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        _C.load(str(tmp_path / "missing.pktrace"))
    assert caught.value.errno == errno.ENOENT and caught.value.filename == str(tmp_path / "missing.pktrace")
    # The engine's own check (load_profiler_result looks first in Python).
    with pytest.raises(IsADirectoryError) as caught:
        _C.load(str(tmp_path))
    assert caught.value.errno == errno.EISDIR
    assert "is a directory" in caught.value.strerror


def test_a_failure_without_a_system_call_is_no_os_error(tmp_path):
    junk = tmp_path / "junk.pktrace"
    junk.write_bytes(b"not a trace, not at all, not a trace")
    with pytest.raises(FileNotFoundError):  # leaves an errno behind on this thread
        _C.load(str(tmp_path / "missing.pktrace"))
    with pytest.raises(ValueError) as caught:
        _C.load(str(junk))
    assert not isinstance(caught.value, OSError)


def test_the_public_api_raises_the_same_errors(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("x")
    result = ProfilerResult(record_sample())
    with pytest.raises(NotADirectoryError):
        result.save(plain / "run.pktrace")
    with pytest.raises(NotADirectoryError):
        result.export_chrome_tracing(plain / "run.trace.json")
    with pytest.raises(FileNotFoundError) as caught:
        load_profiler_result(tmp_path / "missing.pktrace")
    assert caught.value.errno == errno.ENOENT


def test_a_symlink_is_kept_and_its_target_written(tmp_path):
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "run.pktrace"
    link = tmp_path / "link.pktrace"
    link.symlink_to("data/run.pktrace")
    record_sample().save(str(link))
    assert link.is_symlink() and os.readlink(link) == "data/run.pktrace"
    assert _C.load(str(target)).info()["host_event_count"] == 1


def _save_into_read_only_directory():
    """Saves into a 0500 directory; returns the exception raised (None: no error)."""
    directory = tempfile.mkdtemp(prefix="profkit_ro_")
    try:
        os.chmod(directory, 0o500)
        try:
            record_sample().save(os.path.join(directory, "run.pktrace"))
        except Exception as e:  # noqa: BLE001 - the test inspects it
            return e
        return None
    finally:
        os.chmod(directory, 0o700)
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)


def test_a_read_only_directory_is_a_permission_error():
    if os.geteuid() != 0:
        error = _save_into_read_only_directory()
        assert isinstance(error, PermissionError), repr(error)
        assert error.errno == errno.EACCES and "cannot create" in error.strerror
        return
    # Root writes anywhere: a forked child gives up root first and answers
    # through a pipe (its exit status alone would not say what went wrong).
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        answer = "?"
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            error = _save_into_read_only_directory()
            answer = f"{type(error).__name__} {getattr(error, 'errno', None)} {error}"
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            answer = f"child failed: {e!r}"
        finally:
            os.write(write_end, answer.encode("utf-8", "backslashreplace"))
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read().decode("utf-8")
    os.waitpid(child, 0)
    if answer.startswith("child failed: PermissionError"):  # no CAP_SETUID here
        pytest.skip(f"cannot drop root to test permissions: {answer}")
    assert answer.startswith(f"PermissionError {errno.EACCES} "), answer
    assert "cannot create" in answer
