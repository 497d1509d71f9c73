#!/usr/bin/env bash
# Every check profkit has, from a fresh clone: installs what is missing,
# builds with warnings as errors, runs the C++ tests, the C program and the
# fuzz run (ctest), the Python tests, the C++ tests again under AddressSanitizer
# and UndefinedBehaviorSanitizer and under ThreadSanitizer, a smoke run of
# every benchmark, the clang-format check and the Python-version check.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
jobs=$(nproc)
step() { printf '\n==== %s\n' "$*"; }

step "dependencies"
bash scripts/install_deps.sh
# python3, or where pip may not install into it (Debian 12's), a virtual
# environment in .venv: see python_env.sh.
source scripts/python_env.sh
use_python
# PyTorch (the CPU build here) for the integration's tests and benchmark.
"$python" -m pip install -q torch==2.13.0 ".[test]"
# The native PyTorch hook is built once per checkout for the benchmark smoke
# runs (the Python tests build their own, into a fresh directory).
export PROFKIT_CACHE_DIR="$PWD/build/profkit_cache"
# The hook is compiled at run time; here its warnings are errors too.
export PROFKIT_TORCH_HOOK_WERROR=1

step "build (warnings are errors)"
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROFKIT_WERROR=ON >/dev/null
cmake --build build/ci -j "$jobs"

step "C++ tests, C program, fuzz run"
ctest --test-dir build/ci --output-on-failure -j "$jobs"

step "Python tests"
"$python" -m pytest -q -p no:cacheprovider tests/python

step "C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFKIT_SANITIZE=address,undefined \
  -DPROFKIT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

step "C++ tests under ThreadSanitizer"
# The recorder's lock-free paths (per-thread chunks, the collect protocol,
# state changes racing recording threads) and the CUPTI tracer's threads.
# The fuzz run is single-threaded and already ran twice above.
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFKIT_SANITIZE=thread \
  -DPROFKIT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/tsan -j "$jobs"
TSAN_OPTIONS=second_deadlock_stack=1 ctest --test-dir build/tsan --output-on-failure -j "$jobs" -E trace_fuzz

step "benchmark smoke runs"
export PROFKIT_BENCH_SMOKE=1 PROFKIT_BENCH_EVENTS=100000
for b in build/ci/benchmarks/cpp/bench_*; do
  "$b" --benchmark_min_time=0.01 >/dev/null
  echo "ok  $b"
done
for b in benchmarks/python/*.py; do
  [ -e "$b" ] || continue
  "$python" "$b" --smoke >/dev/null
  echo "ok  $b"
done
"$python" benchmarks/python/vs_torch_profiler.py --smoke --profile-memory --workload mlp >/dev/null
echo "ok  benchmarks/python/vs_torch_profiler.py --profile-memory"
"$python" benchmarks/python/vs_torch_profiler.py --smoke --with-flops --workload cnn >/dev/null
echo "ok  benchmarks/python/vs_torch_profiler.py --with-flops"
"$python" benchmarks/python/vs_torch_profiler.py --smoke --with-stack --workload mlp >/dev/null
echo "ok  benchmarks/python/vs_torch_profiler.py --with-stack"

step "clang-format"
git ls-files '*.c' '*.cpp' '*.h' '*.cu' | xargs clang-format --dry-run --Werror
echo "clang-format: clean"

step "Python code runs on 3.9 (requires-python), though CI runs 3.11"
# Syntax, standard library and annotations; not regular expressions (the
# merge's line check has a test of its own for that).
vermin -q -t=3.9- --no-tips --violations --eval-annotations python/profkit tests/python benchmarks/python examples
echo "vermin: nothing past 3.9"

step "all checks passed"
