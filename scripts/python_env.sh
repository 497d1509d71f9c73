# shellcheck shell=bash
# Sourced, from the checkout's root, by setup.sh and test.sh (to pick the
# Python they install profkit into and run) and by install_deps.sh (to know
# which of Debian's Python packages that Python needs).
#
# Debian's own python3 (Debian 12 on) is "externally managed" (PEP 668): pip
# refuses to install into it. There the scripts make a virtual environment in
# the checkout, .venv (git-ignored), once, and use it. Anywhere else (CI's
# pyenv CPython, a venv or conda env already active) they use python3 itself.

# Whether python3 is externally managed: the PEP 668 marker in its standard
# library, and not inside a virtual environment (where pip may install).
python3_is_externally_managed() {
  python3 -c 'import os, sys, sysconfig
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(not (sys.prefix == sys.base_prefix and os.path.isfile(marker)))'
}

# Sets $python to the interpreter to use (making .venv first where needed)
# and says which it is. With .venv, its bin/ goes first on PATH as its
# `activate` would do, for the console scripts pip puts there (vermin).
use_python() {
  python=python3
  local why=""
  if python3_is_externally_managed; then
    # Made anew where there is none yet, or a broken one (made without pip, or
    # by a python3 since removed).
    .venv/bin/python -c 'import pip' 2>/dev/null || python3 -m venv --clear .venv
    why=", a virtual environment: $(command -v python3) is externally managed (PEP 668)"
    python=$PWD/.venv/bin/python
    export VIRTUAL_ENV=$PWD/.venv PATH=$PWD/.venv/bin:$PATH
  fi
  echo "Python: $("$python" -c 'import platform, sys; print(sys.executable, platform.python_version())')$why"
}
