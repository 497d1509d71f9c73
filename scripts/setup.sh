#!/usr/bin/env bash
# Installs everything profkit needs on a fresh Debian machine (Debian
# packages, the pip package) and runs profkit's main job: profiling a small
# training loop and writing its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
bash scripts/install_deps.sh
python3 -m pip install -q .
python3 examples/engine_demo.py
