#!/usr/bin/env bash
# Installs everything profkit needs on a fresh Debian machine (Debian
# packages, PyTorch, the pip package and its native PyTorch hook) and runs
# profkit's main job: profiling a small PyTorch training loop, printing its
# summaries and writing its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
bash scripts/install_deps.sh
# torch==2.13.0: the CPU build on the project's machines (their pip finds it
# locally); elsewhere pip picks the default build for the platform.
python3 -m pip install -q torch==2.13.0 ".[torch]"
python3 -m profkit.integrations.torch --build
python3 examples/train_cifar_like.py
