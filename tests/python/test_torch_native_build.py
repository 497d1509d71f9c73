"""The native PyTorch hook: built once into its cache, reused, serialized across processes, and
replaced by the Python fallback (with one warning) where it cannot be built."""

import errno
import fcntl
import io
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/test.sh installs the CPU build)")

from profkit.integrations import _torch_native  # noqa: E402


def cli(*args, env=None, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "profkit.integrations.torch", *args],
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def test_first_use_builds_and_later_processes_reuse_the_build(torch_hook_cache):
    first = torch_hook_cache.process
    assert "native PyTorch hook built in" in first.stdout, first.stdout + first.stderr
    assert "compiling the native PyTorch hook" in first.stderr
    binary = _torch_native.build_dir(torch) / "profkit_torch_hook.so"
    assert binary.is_file() and str(torch_hook_cache.root) in str(binary)
    built_at = binary.stat().st_mtime_ns

    again = cli("--build")
    assert again.returncode == 0 and f"already built: {binary}" in again.stdout
    assert again.stderr == ""  # nothing compiled, nothing to announce
    assert binary.stat().st_mtime_ns == built_at
    hook = _torch_native.load(torch)
    assert not hook.built and hook.path == binary


def test_the_cache_key_names_torch_python_and_profkit(torch_hook_cache):
    import profkit

    where = cli("--where")
    assert where.returncode == 0
    key = os.path.basename(where.stdout.strip())
    assert key.startswith(f"torch-{torch.__version__}-{sys.implementation.cache_tag}-profkit-{profkit.__version__}-")


def test_a_second_process_waits_for_the_build_in_progress(torch_hook_cache, tmp_path):
    """While one process builds (holds the lock), another waits, then loads what it built."""
    built = _torch_native.build_dir(torch)
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path))
    target = tmp_path / "torch_hook" / built.name
    target.parent.mkdir(parents=True)
    with open(target.parent / (built.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # "another process is building"
        waiter = subprocess.Popen(
            [sys.executable, "-m", "profkit.integrations.torch", "--build"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = waiter.stderr.readline()
            assert "waiting for another process building the native PyTorch hook" in line
            shutil.copytree(built, target)  # the other process finishes its build
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
        out, err = waiter.communicate(timeout=600)
    assert waiter.returncode == 0, out + err
    assert f"already built: {target / 'profkit_torch_hook.so'}" in out
    assert "compiling" not in err


FALLBACK_SCRIPT = textwrap.dedent(
    """
    import warnings
    import torch
    import profkit
    import profkit.integrations.torch as pk_torch

    try:
        pk_torch.enable(backend="native")
    except RuntimeError as e:
        print("native refused:", str(e).splitlines()[0])
    print("enabled after refusal:", pk_torch.is_enabled())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pk_torch.enable()
        pk_torch.disable()
        pk_torch.enable()
    for w in caught:
        if "native PyTorch hook" in str(w.message):
            print("warning:", w.category.__name__, str(w.message).splitlines()[0])
            print("warning at:", w.filename)
            print("install advice:", "Install a C++ compiler and ninja" in str(w.message))
    print("backend:", pk_torch.backend())
    model = torch.nn.Linear(4, 3)
    with profkit.Profiler(on_trace_ready=lambda p: None) as prof:
        model(torch.randn(2, 4)).sum().backward()
    events = prof.profiler_result.events
    print("operators:", sorted(set(events["name"][events["type"] == 0]) & {"aten::addmm", "aten::mm"}))
    """
)


@pytest.mark.parametrize(
    "compiler, reason",
    [
        ("missing", "no C++ compiler: "),
        ("/bin/false", "building the native PyTorch hook failed: "),
        ("lock-is-a-directory", "cannot use the native PyTorch hook's cache: "),
    ],
    ids=["no-compiler", "compile-error", "unusable-cache"],
)
def test_where_it_cannot_build_the_python_fallback_records_after_one_warning(
    torch_hook_cache, tmp_path, compiler, reason
):
    cxx = str(tmp_path / "no-such-compiler") if compiler == "missing" else compiler
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path), CXX=cxx)
    if compiler == "lock-is-a-directory":  # a cache profkit cannot use, even as root (IsADirectoryError)
        del env["CXX"]
        (tmp_path / "torch_hook" / (_torch_native.build_dir(torch).name + ".lock")).mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", FALLBACK_SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("native refused: " + reason) for line in lines), lines
    assert "enabled after refusal: False" in lines
    # one warning although enabled twice, saying why
    (warning,) = [line for line in lines if line.startswith("warning: ")]
    assert warning.startswith("warning: ProfilerWarning profkit: the native PyTorch hook is not available (" + reason)
    assert "warning at: <string>" in lines  # the user's enable() call, not profkit's code
    # Installing a compiler and ninja is the remedy only where one of them is missing.
    assert f"install advice: {compiler == 'missing'}" in lines
    assert "backend: python" in lines
    assert "operators: ['aten::addmm', 'aten::mm']" in lines
    assert not list((tmp_path / "torch_hook").glob("*/profkit_torch_hook.so"))  # nothing half-built left
    assert not list((tmp_path / "torch_hook").glob("*.build-*"))  # no scratch directory either
    # A compile error is left for the processes that waited for it (they do not repeat it).
    failed = list((tmp_path / "torch_hook").glob("*.failed"))
    if compiler == "/bin/false":
        assert len(failed) == 1 and failed[0].read_text().startswith("building the native PyTorch hook failed")
    else:
        assert failed == []


def test_an_unwritable_cache_is_a_clear_error(torch_hook_cache, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(blocker / "cache"))
    done = cli("--build", env=env)
    assert done.returncode == 1
    assert "cannot create the cache directory" in done.stderr and "PROFKIT_CACHE_DIR" in done.stderr


def test_an_unreadable_or_unwritable_cache_is_a_clear_error(torch_hook_cache, tmp_path):
    """The lock cannot be opened (here: a directory in its place, which fails as root too)."""
    lock = tmp_path / "torch_hook" / (_torch_native.build_dir(torch).name + ".lock")
    lock.mkdir(parents=True)
    done = cli("--build", env=dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path)))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot use the native PyTorch hook's cache: {lock}: Is a directory" in done.stderr
    assert "set PROFKIT_CACHE_DIR to a writable directory" in done.stderr


def test_a_permission_error_in_the_cache_is_a_native_build_error(torch_hook_cache, tmp_path, monkeypatch):
    """What a non-root user meets in a cache another user made (tests run as root: the OS call is faked)."""
    monkeypatch.setenv("PROFKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_torch_native, "_require_tools", lambda: None)

    def refuse(prefix, dir):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), dir)

    monkeypatch.setattr(_torch_native.tempfile, "mkdtemp", refuse)
    with pytest.raises(_torch_native.NativeBuildError) as raised:
        _torch_native.load(torch, notice=io.StringIO())
    assert str(raised.value) == (
        f"cannot use the native PyTorch hook's cache: {tmp_path / 'torch_hook'}: Permission denied; "
        "set PROFKIT_CACHE_DIR to a writable directory"
    )


def test_a_build_can_be_loaded_by_other_users(torch_hook_cache):
    """The build directory is 0755 less the umask (mkdtemp's 0700 would shut out all but its builder)."""
    umask = os.umask(0)
    os.umask(umask)
    final = _torch_native.build_dir(torch)
    assert final.stat().st_mode & 0o777 == 0o755 & ~umask


def copy_of_the_build(tmp_path):
    """The session's build, copied into a cache at tmp_path; returns the copy's binary."""
    built = _torch_native.build_dir(torch)
    shutil.copytree(built, tmp_path / "torch_hook" / built.name)
    return tmp_path / "torch_hook" / built.name / "profkit_torch_hook.so"


def truncate(binary):
    with open(binary, "r+b") as f:
        f.truncate(binary.stat().st_size // 2)


def change_a_byte(binary):
    with open(binary, "r+b") as f:
        f.seek(binary.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))


def drop_the_checksum(binary):
    (binary.parent / "profkit_torch_hook.so.sha256").unlink()


def garble_the_checksum(binary):
    (binary.parent / "profkit_torch_hook.so.sha256").write_bytes(b"\xff\xfe\x80garbage")  # not even text


@pytest.mark.parametrize("damage", [None, truncate, change_a_byte, drop_the_checksum, garble_the_checksum])
def test_a_damaged_cached_binary_is_never_loaded(torch_hook_cache, tmp_path, damage):
    """A cut copy of the cache (a partial rsync) used to be mapped and die with SIGBUS. Without a
    compiler, what is built again shows as the compiler's absence; an intact copy just loads."""
    binary = copy_of_the_build(tmp_path)
    if damage is not None:
        damage(binary)
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path), CXX=str(tmp_path / "no-such-compiler"))
    done = cli("--build", env=env)
    if damage is None:
        assert done.returncode == 0 and f"already built: {binary}" in done.stdout, done.stdout + done.stderr
    else:
        assert done.returncode == 1, (done.returncode, done.stdout + done.stderr)
        assert "no C++ compiler" in done.stderr


def test_build_repairs_a_truncated_binary(torch_hook_cache, tmp_path):
    binary = copy_of_the_build(tmp_path)
    truncate(binary)
    env = dict(os.environ, PROFKIT_CACHE_DIR=str(tmp_path))
    done = cli("--build", env=env)
    assert done.returncode == 0 and "built in" in done.stdout, (done.returncode, done.stdout + done.stderr)
    assert "the cached one is damaged or does not load" in done.stderr
    assert binary.stat().st_size == (_torch_native.build_dir(torch) / binary.name).stat().st_size
    again = cli("--build", env=env)
    assert again.returncode == 0 and f"already built: {binary}" in again.stdout


def no_passwd_entry(monkeypatch):
    """A process with no $HOME whose uid has no passwd entry (a container's arbitrary uid, env -i)."""

    def getpwuid(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.delenv("PROFKIT_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", getpwuid)


def test_no_home_directory_is_a_native_build_error(torch_hook_cache, monkeypatch):
    no_passwd_entry(monkeypatch)
    with pytest.raises(_torch_native.NativeBuildError, match="no home directory .* set PROFKIT_CACHE_DIR"):
        _torch_native.load(torch)


def test_where_without_a_home_directory_says_what_to_set(torch_hook_cache, monkeypatch, capsys):
    import profkit.integrations.torch as pk_torch

    no_passwd_entry(monkeypatch)
    assert pk_torch.main(["--where"]) == 1
    assert "set PROFKIT_CACHE_DIR to a writable directory" in capsys.readouterr().err


def test_a_relative_xdg_cache_home_is_ignored(torch_hook_cache, monkeypatch, tmp_path):
    monkeypatch.delenv("PROFKIT_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relcache")  # the XDG spec: relative values are invalid
    assert _torch_native.cache_root() == tmp_path / ".cache" / "profkit"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _torch_native.cache_root() == tmp_path / "xdg" / "profkit"


def test_link_flags_keep_a_library_directory_with_a_space_as_one_word(monkeypatch, tmp_path):
    """cpp_extension writes extra_ldflags into build.ninja as they are, and ninja runs them through
    /bin/sh: a profkit installed in "my venv" failed to link."""
    from torch.utils import cpp_extension

    libdir = tmp_path / "my venv"
    monkeypatch.setattr(_torch_native, "get_library", lambda: str(libdir / "libprofkit.so"))
    passed = {}
    monkeypatch.setattr(cpp_extension, "load", lambda **kwargs: passed.update(kwargs))
    _torch_native._compile(torch, tmp_path, verbose=False)
    words = shlex.split(" ".join(passed["extra_ldflags"]))
    assert words == [f"-L{libdir}", "-l:libprofkit.so", f"-Wl,-rpath,{libdir}"]


def test_a_successful_build_lets_the_next_enable_use_the_native_hook(monkeypatch):
    # The fallback's warning advises a writable PROFKIT_CACHE_DIR or a
    # compiler; once build() succeeds, enable() must try again.
    from profkit.integrations import torch as integration

    class Built:
        path = "/cache/profkit_torch_hook.so"

    monkeypatch.setattr(integration, "_native_failure", "cannot use the cache")
    monkeypatch.setattr(integration, "_native_failure_is_tools", True)
    monkeypatch.setattr(integration, "_fallback_warned", True)
    monkeypatch.setattr(_torch_native, "load", lambda torch, **kwargs: Built())
    assert integration.build() == Built.path
    assert integration._native_failure is None and not integration._fallback_warned


def test_a_failure_is_tried_again_in_another_cache(monkeypatch, tmp_path):
    from profkit.integrations import torch as integration

    tries = []

    def refuse(torch, **kwargs):
        tries.append(os.environ["PROFKIT_CACHE_DIR"])
        raise _torch_native.NativeBuildError("read-only cache")

    monkeypatch.setattr(integration, "_native_failure", None)
    monkeypatch.setattr(integration, "_fallback_warned", True)  # no warning wanted here
    monkeypatch.setattr(_torch_native, "load", refuse)
    chooser = integration._Integration(torch, integration._Options(None, None, None, "auto", False))
    for cache in ("a", "a", "b"):
        monkeypatch.setenv("PROFKIT_CACHE_DIR", str(tmp_path / cache))
        integration._choose_operator_recorder(chooser, "auto")
    assert tries == [str(tmp_path / "a"), str(tmp_path / "b")]  # once per cache


def test_the_cache_key_follows_the_c_abi_header(monkeypatch, tmp_path):
    import profkit

    before = _torch_native.build_dir(torch).name
    include = tmp_path / "include" / "profkit"
    include.mkdir(parents=True)
    header = (_torch_native.Path(profkit.get_include()) / "profkit" / "profkit.h").read_text()
    (include / "profkit.h").write_text(header.replace("#define PK_API_VERSION_MINOR", "#define PK_API_VERSION_MINOR 9 //"))
    monkeypatch.setattr(_torch_native, "get_include", lambda: str(tmp_path / "include"))
    assert _torch_native.build_dir(torch).name != before


def test_a_compile_error_is_cut_to_lines_that_fit_and_a_full_disk_says_so():
    command = "c++ " + "-I/some/long/include/path " * 200 + "-c hook.cpp"
    text = _torch_native._explain(RuntimeError(f"Error building extension:\n{command}\nNo space left on device"))
    assert max(len(line) for line in text.splitlines()) < 400
    assert "No space left on device" in text
    assert text.splitlines()[-1].startswith("The cache's disk is full: free space there, or")


def test_scratch_directories_of_killed_builds_are_removed(tmp_path):
    final = tmp_path / "torch_hook" / "key"
    final.parent.mkdir()
    for stale in ("key.build-abc", "key.build-def"):
        (final.parent / stale / "key").mkdir(parents=True)
    (final.parent / "other.build-xyz").mkdir()  # another key's: not this build's
    _torch_native._remove_killed_builds(final)
    assert sorted(p.name for p in final.parent.iterdir()) == ["other.build-xyz"]


def test_a_process_that_waited_for_a_failed_build_does_not_repeat_it(monkeypatch, tmp_path):
    # Eight ranks on a cold cache with a compiler that fails: each one waited
    # for the one before, then failed the same way after as long again.
    import contextlib

    monkeypatch.setenv("PROFKIT_CACHE_DIR", str(tmp_path))
    final = _torch_native.build_dir(torch)
    final.parent.mkdir(parents=True)
    (final.parent / (final.name + ".failed")).write_text("building the native PyTorch hook failed: error: boom")

    @contextlib.contextmanager
    def waited_for_another(lock_path, on_wait):
        on_wait()  # as when the lock was held by the process that just failed
        yield

    compiled = []
    monkeypatch.setattr(_torch_native, "_exclusive", waited_for_another)
    monkeypatch.setattr(_torch_native, "_compile", lambda *args: compiled.append(args))
    with pytest.raises(_torch_native.NativeBuildError, match="error: boom .the build another process just ran"):
        _torch_native.load(torch, notice=io.StringIO())
    assert compiled == []
