"""Running Python code in a child whose engine reads a chosen clock.

The engine picks its clock once, when it loads: the TSC where the CPU has
an invariant one, or CLOCK_MONOTONIC when PROFKIT_CLOCK=monotonic says so.
A test of both clocks therefore runs its code in a fresh process each.
"""

import json
import os
import subprocess
import sys

CLOCKS = ["monotonic", "default"]


def run_on_clock(code, clock):
    """Runs ``code`` (which prints one JSON document) in a child on ``clock``; returns the document."""
    env = dict(os.environ)
    env.pop("PROFKIT_CLOCK", None)
    if clock == "monotonic":
        env["PROFKIT_CLOCK"] = "monotonic"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
