"""What `transplant emulate` does for the backing's sake, found by running `--backing cuda` on a GPU
(an H200 with torch 2.11): the emulator's own reads of torch.cuda and its own torch calls on the
GPU are not the project's CUDA uses under --strict; the CUDA backing needs device identity. The GPU half of each case needs a GPU; what is tested here is the half a CPU machine
can hold to it: who is blamed for a read of torch.cuda."""

from __future__ import annotations

import importlib.util

import pytest

from test_emulate import emulate

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

# The emulator reads torch.cuda for the GPU that backs an NPU (Backing.count, Backing.device,
# torch_npu.npu's functions); a function compiled under the emulator's folder stands for that code.
INTERNAL = """
import os
import torch
import torch_npu
import transplant.emulate.strict as strict

where = os.path.join(os.path.dirname(strict.__file__), "backing_reads.py")
namespace = {"torch": torch}
code = "def gpus():\\n    return torch.cuda.device_count()\\ndef gpu():\\n    return torch.device('cuda', 0)\\n"
exec(compile(code, where, "exec"), namespace)

def attempt(label, action):
    try:
        action()
        print(label, "ok")
    except Exception as exc:
        print(label, type(exc).__name__)

attempt("emulator", lambda: namespace["gpus"]())
attempt("emulator's call", lambda: namespace["gpu"]())
attempt("getattr", lambda: getattr(torch.cuda, "device_count"))
attempt("own", lambda: torch.cuda.device_count())
"""


def test_strict_blames_the_reader_of_torch_cuda_not_the_line_that_led_the_emulator_there(tmp_path):
    (tmp_path / "reads.py").write_text(INTERNAL)
    proc = emulate(["--strict", "reads.py"], tmp_path)
    assert proc.stdout.split("\n")[:4] == [
        "emulator ok",
        "emulator's call ok",
        "getattr EmulationError",
        "own EmulationError",
    ]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("transplant emulate: error:")]
    lines = INTERNAL.splitlines()
    expected = [
        i for i, text in enumerate(lines, 1) if text.startswith('attempt("getattr"') or text.startswith('attempt("own"')
    ]
    assert [int(e.split("reads.py:")[1].split(":")[0]) for e in errors] == expected, errors
    assert all("torch.cuda.device_count" in e for e in errors)
    assert proc.returncode == 1


def test_the_cuda_backing_without_device_identity_is_refused_in_one_line(tmp_path):
    (tmp_path / "noop.py").write_text("print('ran')\n")
    proc = emulate(["--backing", "cuda", "--no-device-identity", "noop.py"], tmp_path)
    assert proc.returncode != 0 and "ran" not in proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "transplant emulate: error: --backing cuda needs device identity: drop --no-device-identity (or use --backing cpu)"
    ]


def test_the_zero_edit_path_is_refused_on_the_cuda_backing_in_one_line(tmp_path):
    (tmp_path / "noop.py").write_text("print('ran')\n")
    proc = emulate(["--backing", "cuda", "--transfer-to-npu", "noop.py"], tmp_path)
    assert proc.returncode != 0 and "ran" not in proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "transplant emulate: error: --transfer-to-npu runs on the CPU backing only: drop --backing cuda"
    ]
