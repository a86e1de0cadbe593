"""`transplant emulate` computes what the CPU computes for common nn modules and training patterns on
NPU tensors (each recurrent layer and cell, tied weights, embedding bags, packed sequences, fused and
foreach optimizers, gradient clipping, AMP with a scaler, TorchScript, torch.export, torch.compile,
streams), bit for bit; and gives torch_npu's answers (capability, shallow-copy compatibility, streams,
the profiler's configuration, DDP's device check, TorchDynamo's capture of host and NPU programs). DDP
with two ranks: test_emulate_collectives.py.
"""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from conftest import FIXTURES
from test_emulate import emulate, free_port, lines, run

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

IDENTITY = FIXTURES / "emulate" / "identity"
PATTERNS = [
    "LSTM", "LSTM-no-grad", "GRU", "GRU-no-grad", "RNN", "RNN-no-grad", "LSTMCell", "GRUCell", "RNNCell",
    "packed", "tied", "embedding-bag-sum", "embedding-bag-mean", "embedding-bag-max",
    "sgd-foreach", "adam-fused", "adamw-foreach", "adamw-loop", "rmsprop", "amp", "autocast-ops", "torchscript", "export",
    "compile", "streams",
]  # fmt: skip


@pytest.mark.parametrize("strict", [False, True], ids=["emulate", "strict"])
def test_nn_patterns_on_npu_tensors_are_the_cpus_bit_for_bit(strict, tmp_path):
    shutil.copy(IDENTITY / "patterns.py", tmp_path)
    on_cpu = run(["patterns.py", "cpu"], tmp_path)
    assert on_cpu.returncode == 0, on_cpu.stderr
    assert [line.split()[0] for line in on_cpu.stdout.splitlines()] == PATTERNS
    emulated = emulate([*(["--strict"] if strict else []), "patterns.py", "npu"], tmp_path)
    assert emulated.returncode == 0, emulated.stderr
    assert emulated.stdout.splitlines() == on_cpu.stdout.splitlines()


def test_the_answers_are_torch_npus(tmp_path):
    shutil.copy(IDENTITY / "answers.py", tmp_path)
    proc = emulate(["answers.py", str(free_port())], tmp_path)
    assert proc.returncode == 0, proc.stderr
    checks = ["capability", "tied", "streams", "profiler", "torchscript", "export", "ddp-device-ids"]
    assert lines(proc.stdout, "ok ") == [f"ok {check}" for check in checks]


def test_look_alikes_a_users_own_lstm_and_host_layers_keep_their_path(tmp_path):
    """A look-alike that must not change: a user's own module named LSTM (not torch's) is left alone,
    and the CPU tensors of an emulated run keep the CPU's own path."""
    (tmp_path / "own.py").write_text(
        "import torch, torch_npu\n"
        "class LSTM(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
        "torch.manual_seed(0)\n"
        "x = torch.randn(3, 2, 4)\n"
        "print('own', LSTM()(x.npu()).cpu().sum().item())\n"
        "layer = torch.nn.LSTM(4, 5)\n"
        "print('host', layer(x)[0].device, layer(x)[0].sum().item())\n"
    )
    proc = emulate(["own.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    plain = run(["-c", "import torch\ntorch.manual_seed(0)\nx = torch.randn(3, 2, 4)\nprint((x * 2).sum().item())\n"
                 "layer = torch.nn.LSTM(4, 5)\nprint(layer(x)[0].sum().item())"], tmp_path)  # fmt: skip
    own, host = plain.stdout.split()
    assert lines(proc.stdout, "own") == [f"own {own}"]
    assert lines(proc.stdout, "host") == [f"host cpu {host}"]


def test_the_device_check_runs_its_flow_on_the_cpu_and_skips_without_a_gpu(tmp_path):
    """bench/device_check.py is run by hand on a GPU machine; its flow (original, conversion, emulate,
    emulate --strict, every number compared) is tested here with --backing cpu."""
    script = str(FIXTURES.parent.parent / "bench" / "device_check.py")
    proc = run([script, "--backing", "cpu", "--steps", "2", "--out", tmp_path / "cpu"], tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "cpu" / "result.json").read_text())
    assert result["verdict"] == "match" and result["compared"]["emulate-strict"]["lines"] == 6, result
    assert "import torch_npu" in (tmp_path / "cpu" / "converted_train.py").read_text()
    proc = run([script, "--out", tmp_path / "gpu"], tmp_path, CUDA_VISIBLE_DEVICES="")
    assert proc.returncode == 0 and "SKIPPED: PyTorch sees no CUDA GPU" in proc.stdout, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "gpu" / "result.json").read_text())["verdict"] == "skipped"
