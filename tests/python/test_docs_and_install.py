"""The README as a contract for a C user of the installed package: its hook
code, its build command and its CMake line give a program that runs."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import profkit
from profkit import TracerEventType, load_profiler_result

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")

# What a framework's own program adds to the README's hook: a window over
# three batches, saved, and the README's summary snippet run on it.
MAIN_C = r"""
#include <profkit/profkit.h>
#include <stdio.h>
#include <stdint.h>

void framework_init(void);
void run_conv2d(void);
void next_batch(void);
void training_step(uint64_t batch_size);

static void print_summary(pk_result* result) {
%(summary)s
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  framework_init();
  pk_set_state(PK_STATE_RECORD);
  pk_step_begin(0);
  for (uint64_t batch = 0; batch < 3; ++batch) {
    next_batch();
    run_conv2d();
    training_step(32);
  }
  pk_set_state(PK_STATE_CLOSED);
  pk_result* result = NULL;
  if (pk_collect(&result) != PK_OK || pk_result_save(result, argv[1]) != PK_OK) {
    fprintf(stderr, "%%s\n", pk_last_error());
    return 1;
  }
  print_summary(result);
  pk_result_release(result);
  return 0;
}
"""


def readme_blocks(language):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```" + language + r"\n(.*?)```", text, flags=re.S)


def hook_sources(tmp_path):
    """hook.c (the README's hook) and main.c (with the README's summary snippet) in tmp_path."""
    c_blocks = readme_blocks("c")
    hook = next(b for b in c_blocks if "void framework_init" in b)
    summary = next(b for b in c_blocks if "pk_result_summary_text" in b)
    (tmp_path / "hook.c").write_text(hook)
    (tmp_path / "main.c").write_text(MAIN_C % {"summary": summary})


def run_program(tmp_path, program):
    """Runs the built program as a user would: no LD_LIBRARY_PATH pointing at the package."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    trace = tmp_path / "hook.pktrace"
    done = subprocess.run([str(program), str(trace)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{program} failed:\n{done.stdout}\n{done.stderr}"
    assert "Operator Summary" in done.stdout and "aten::conv2d" in done.stdout
    result = load_profiler_result(str(trace))
    events = result.events
    ops = events[events["type"] == int(TracerEventType.Operator)]
    loads = events[events["type"] == int(TracerEventType.Dataloader)]
    assert list(ops["name"]) == ["aten::conv2d"] * 3
    assert list(loads["name"]) == ["DataLoader"] * 3
    # The batch size reaches each step as its num_samples (the step left open at the end has none).
    assert result.steps == [0, 1, 2]
    args = result.event_args
    steps = events["type"][args["event"]] == int(TracerEventType.ProfileStep)
    assert [(events["name"][e], k, v) for e, k, v in args[steps]] == [
        (f"ProfileStep#{n}", "num_samples", 32) for n in range(3)
    ]


needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


@needs_cc
def test_readme_c_hook_builds_with_the_readme_command_and_runs(tmp_path):
    # The README's command, verbatim: `python3` there is this interpreter.
    (command,) = [b for b in readme_blocks("sh") if "get_library()" in b]
    hook_sources(tmp_path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    built = subprocess.run(["bash", "-euc", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    run_program(tmp_path, tmp_path / "train")


@needs_cc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake")
def test_readme_find_package_with_a_version_finds_the_installed_package(tmp_path):
    # find_package(profkit X.Y) needs a version file next to profkitConfig.cmake:
    # without one CMake rejects the package as "version: unknown".
    with open(README, encoding="utf-8") as f:
        (find_package,) = set(re.findall(r"find_package\(profkit [0-9.]+ REQUIRED\)", f.read()))
    hook_sources(tmp_path)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(train C)\n"
        f"{find_package}\n"
        "add_executable(train hook.c main.c)\n"
        "target_link_libraries(train PRIVATE profkit::profkit)\n"
    )
    build = tmp_path / "build"
    configure = subprocess.run(
        ["cmake", "-S", str(tmp_path), "-B", str(build), f"-DCMAKE_PREFIX_PATH={profkit.get_cmake_dir()}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compiled = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    run_program(tmp_path, build / "train")


def test_installed_package_ships_what_a_c_user_and_a_type_checker_need():
    root = os.path.dirname(profkit.__file__)
    for path in (
        os.path.join(profkit.get_include(), "profkit", "profkit.h"),
        profkit.get_library(),
        os.path.join(profkit.get_cmake_dir(), "profkit", "profkitConfig.cmake"),
        os.path.join(profkit.get_cmake_dir(), "profkit", "profkitConfigVersion.cmake"),
        os.path.join(root, "py.typed"),
        os.path.join(root, "_C.pyi"),
    ):
        assert os.path.isfile(path), path


def test_the_abi_changelog_heads_with_the_headers_version_and_the_library_reports_it():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "capi", "include", "profkit", "profkit.h"), encoding="utf-8") as f:
        header = f.read()
    major = int(re.search(r"#define PK_API_VERSION_MAJOR (\d+)", header).group(1))
    minor = int(re.search(r"#define PK_API_VERSION_MINOR (\d+)", header).group(1))
    with open(os.path.join(root, "capi", "CHANGELOG.md"), encoding="utf-8") as f:
        newest = re.search(r"^## (\d+)\.(\d+)\b", f.read(), re.MULTILINE)
    assert (int(newest.group(1)), int(newest.group(2))) == (major, minor), "a version bump needs its CHANGELOG entry"
    assert profkit._C.api_version() == (major << 16) | minor  # the installed library is this header's
