"""profkit.integrations.torch where PyTorch is not installed: it imports, and says so only when used."""

import subprocess
import sys
import textwrap

import pytest


def run(code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_importing_the_integration_does_not_import_torch():
    out = run(
        """
        import sys
        import profkit.integrations.torch as pk_torch
        print("torch" in sys.modules, pk_torch.is_enabled(), pk_torch.backend())
        """
    )
    assert out.split() == ["False", "False", "None"]


def test_using_it_without_torch_is_a_clear_error():
    out = run(
        """
        import sys
        sys.modules["torch"] = None  # as if PyTorch were not installed
        import profkit
        import profkit.integrations.torch as pk_torch
        for use in (pk_torch.enable, pk_torch.build):
            try:
                use()
            except ModuleNotFoundError as e:
                print(type(e).__name__, e.name, "|", e)
        print("enabled:", pk_torch.is_enabled())
        with profkit.Profiler(on_trace_ready=lambda p: None):  # profkit itself works without torch
            pass
        """
    )
    lines = out.splitlines()
    assert lines[0].startswith(
        "ModuleNotFoundError torch | profkit.integrations.torch.enable(): PyTorch is not installed"
    )
    assert "pip install torch" in lines[0]
    assert lines[1].startswith(
        "ModuleNotFoundError torch | profkit.integrations.torch.build(): PyTorch is not installed"
    )
    assert "enabled: False" in lines


@pytest.mark.parametrize("option", ["--build", "--where"])
def test_the_build_command_without_torch_exits_with_the_reason(option):
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['torch'] = None; import runpy; "
         "runpy.run_module('profkit.integrations.torch', run_name='__main__')", option],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "PyTorch is not installed" in done.stderr
    assert "build()" not in done.stderr and "run this again" in done.stderr  # the command's words, not the API's
