#!/usr/bin/env bash
# Installs everything profkit needs on a fresh Debian machine (Debian
# packages, PyTorch, the pip package and its native PyTorch hook) and runs
# profkit's main job: profiling a small PyTorch training loop, printing its
# summaries and writing its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
  echo "setup: profkit needs Python 3.9 or newer; python3 here is $(python3 -V 2>&1). Install a newer Python first." >&2
  exit 1
fi
bash scripts/install_deps.sh
# python3, or where pip may not install into it (Debian 12's), a virtual
# environment in .venv: see python_env.sh.
source scripts/python_env.sh
use_python
# torch==2.13.0: the CPU build on the project's machines (their pip finds it
# locally); elsewhere pip picks the default build for the platform. torch 2.13
# needs Python 3.10+: on 3.9, torch 2.8, the last release for it.
torch=torch==2.13.0
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || torch=torch==2.8.0
"$python" -m pip install -q "$torch" ".[torch]"
"$python" -m profkit.integrations.torch --build
"$python" examples/train_cifar_like.py
