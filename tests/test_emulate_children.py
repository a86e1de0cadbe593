"""A process the emulated program starts with another Python, one transplant is not installed in
(`accelerate launch` or `torchrun` found on PATH outside the environment): the emulated torch_npu that
PyTorch autoloads there loads transplant from the folder `transplant emulate` names, and only that
folder, instead of failing inside torch's backend autoload with "No module named 'transplant'"."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from test_emulate import emulate

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

# the child hides every installed or path copy of transplant, as another Python's site-packages would
CHILD = """
import importlib.abc
import sys


class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "transplant":
            raise ModuleNotFoundError("No module named 'transplant'", name="transplant")
        return None


sys.meta_path.insert(0, Hidden())
import torch  # autoloads the emulated torch_npu

x = torch.ones(2, device="npu") * 3
print("child", x.device.type, x.sum().item(), sys.modules["transplant"].__file__ is not None, flush=True)
"""

PARENT = """
import os
import subprocess
import sys

env = dict(os.environ, PYTHONPATH=os.environ["PYTHONPATH"].split(os.pathsep)[0])  # the shim alone
subprocess.run([sys.executable, "child.py"], env=env, check=True)
"""


def test_a_child_without_transplant_loads_it_from_the_emulators_folder(tmp_path: Path):
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    (tmp_path / "parent.py").write_text(textwrap.dedent(PARENT))
    proc = emulate(["-q", "parent.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "child npu 6.0 True" in proc.stdout


def test_without_the_folder_the_child_says_what_to_do(tmp_path: Path):
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    parent = PARENT.replace("PYTHONPATH=", 'TRANSPLANT_EMULATE_PACKAGE="", PYTHONPATH=')
    (tmp_path / "parent.py").write_text(textwrap.dedent(parent))
    proc = emulate(["-q", "parent.py"], tmp_path)
    assert proc.returncode != 0
    assert "transplant emulate: this process cannot import transplant" in proc.stderr
    assert "start it with that Python" in proc.stderr
