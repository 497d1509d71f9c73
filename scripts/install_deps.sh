#!/usr/bin/env bash
# Installs what profkit needs from Debian's packages, skipping what is present.
# Needs root (or sudo) on a machine without them; a no-op otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh

packages=(g++ cmake ninja-build libflatbuffers-dev flatbuffers-compiler rapidjson-dev libgtest-dev libbenchmark-dev clang-format)
# What python3 lacks of Debian's Python packages (CI's pyenv CPython lacks
# none): its headers, for the _C extension's build; a way to pip-install,
# a virtual environment where python3 is externally managed (see
# python_env.sh), else pip itself.
if ! python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_path("include"), "Python.h")))'; then
  packages+=(python3-dev)
fi
if python3_is_externally_managed; then
  packages+=(python3-venv)
elif ! python3 -c 'import pip' 2>/dev/null; then
  packages+=(python3-pip)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A pip-installed cmake/ninja is as good as Debian's.
command -v cmake >/dev/null && missing=("${missing[@]/cmake/}")
command -v ninja >/dev/null && missing=("${missing[@]/ninja-build/}")
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
