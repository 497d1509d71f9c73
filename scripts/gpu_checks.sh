#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run. For a machine with a GPU,
# its driver, nvcc, the CUPTI headers and PyTorch with CUDA:
#   1. tests/cuda/gpu_trace_test: known kernels, a memcpy and a memset on two
#      streams inside nested host events, checked against real CUPTI;
#   2. beside torch.profiler: cupti_settings_cost.py (what each of profkit's
#      CUPTI settings costs per launch), gpu_launch_overhead_processes.py
#      (overhead per launch, the two profilers in alternating processes) and
#      gpu_vs_torch_profiler.py (kernel counts and times, kernels tied to
#      their operator, overhead per launch in one process);
#   3. examples/train_cifar_like.py on CUDA (the README's main job), whose
#      Kernel Summary must list kernels, with --with-flops (a FLOPs column);
#   4. every C++ test (ctest), now with a real driver and libcupti present;
#   5. the Python tests, where every Profiler traces the GPU by default.
# The measurements come before the long test suites, so that a lease that
# runs out still brings them back.
# Every step runs even when an earlier one failed, each under its own time
# limit (a hang in CUPTI's flush must not eat the rest); the exit status is
# the number of steps that failed.
#
# Usage: scripts/gpu_checks.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  a build of this tree (default build/gpu; configured and built
#              here when it has no tests/cuda/gpu_trace_test)
#   OUT_DIR    the benchmark's figures and the test program's trace
#              (default BUILD_DIR/gpu_checks)
# python3 must import profkit (pip install . or PYTHONPATH) and torch.
# PYTEST_ARGS adds pytest options (for example "-n 8" with pytest-xdist).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu}
out=${2:-$build/gpu_checks}
mkdir -p "$out"
failed=0
step() { printf '\n==== %s\n' "$*"; }
run_step() {  # run_step SECONDS NAME COMMAND...: runs it, counts a failure
  local limit=$1 name=$2
  shift 2
  local started=$SECONDS
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "---- $name: passed ($((SECONDS - started)) s)"
  elif [ $rc -eq 77 ]; then
    echo "---- $name: SKIPPED (no GPU reachable)"
    failed=$((failed + 1))
  else
    [ $rc -eq 124 ] && echo "---- $name: still running after $limit s, stopped"
    echo "---- $name: FAILED (exit status $rc, $((SECONDS - started)) s)"
    failed=$((failed + 1))
  fi
}

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: not found"
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.is_available())'
python3 -c 'from profkit import _C; print("profkit GPU tracing:", _C.gpu_available())'

if [ ! -x "$build/tests/cuda/gpu_trace_test" ]; then
  step "build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPROFKIT_CUPTI=ON -DPROFKIT_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=native >/dev/null && cmake --build "$build" -j "$(nproc)" || exit 1
fi

step "1. the CUDA test program against real CUPTI"
run_step 120 gpu_trace_test "$build/tests/cuda/gpu_trace_test" "$out"

step "2. beside torch.profiler"
run_step 180 cupti_settings_cost python3 benchmarks/python/cupti_settings_cost.py
run_step 300 gpu_launch_overhead_processes python3 benchmarks/python/gpu_launch_overhead_processes.py \
  --json "$out/launch_overhead_processes.json"
run_step 300 gpu_vs_torch_profiler python3 benchmarks/python/gpu_vs_torch_profiler.py --json "$out/gpu_vs_torch.json"

step "3. the README's main job on the GPU"
# The example trains on CUDA where it is present; its Kernel Summary must list
# kernels, and with --with-flops its Operator Summary has the FLOPs column.
run_step 300 example bash -c "set -o pipefail; python3 examples/train_cifar_like.py --device cuda --with-flops \
  --out '$out/example' | tee '$out/example.txt' && ! grep -q 'Kernel Summary: no GPU kernels recorded' \
  '$out/example.txt' && grep -q '^Name .*FLOPs\$' '$out/example.txt'"

step "4. the C++ tests"
run_step 180 ctest ctest --test-dir "$build" -j "$(nproc)" --output-on-failure

step "5. the Python tests"
extra=()
python3 -c 'import pytest_timeout' 2>/dev/null && extra+=(--timeout=300)
# pytest-benchmark, where installed, warns under xdist, and our warnings are errors.
python3 -c 'import pytest_benchmark' 2>/dev/null && extra+=(-p no:benchmark)
# shellcheck disable=SC2086  # PYTEST_ARGS is a list of options
run_step 420 pytest python3 -m pytest -q -rs -p no:cacheprovider "${extra[@]}" ${PYTEST_ARGS:-} tests/python

step "done: $failed step(s) failed"
exit "$failed"
