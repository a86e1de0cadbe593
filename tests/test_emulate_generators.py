"""torch.Generator("npu") under emulate's device identity: made as torch_npu makes it, seeded it draws
on NPU tensors what a CPU generator draws on CPU tensors (randn, randperm, in-place draws, init,
state, copies, a DataLoader's and random_split's host generators), and a generator of the wrong
device is refused with PyTorch's message, as on an NPU."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from conftest import FIXTURES
from test_emulate import emulate, lines, run

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

PROGRAM = FIXTURES / "emulate" / "identity" / "generators.py"
DRAWS = [
    "randn", "rand", "randint", "randperm", "normal", "normal_", "uniform_", "bernoulli", "multinomial", "init",
    "default-seed", "state", "copy", "dataloader", "random_split",
]  # fmt: skip


def test_npu_generators_draw_the_cpus_numbers_and_refuse_the_wrong_device(tmp_path):
    shutil.copy(PROGRAM, tmp_path)
    cpu = run(["generators.py", "cpu"], tmp_path)
    assert cpu.returncode == 0, cpu.stderr
    npu = emulate(["generators.py", "npu"], tmp_path)
    assert npu.returncode == 0, npu.stderr
    drawn = lines(cpu.stdout, "draw ")
    assert [line.split()[1] for line in drawn] == DRAWS
    assert lines(npu.stdout, "draw ") == drawn
    assert "draw state [0.0, 0.0, 0.0]" in drawn and "draw copy [0.0, 0.0]" in drawn
    checks = [
        "generator", "default-generator", "npu-generator-on-host", "host-generator-on-npu",
        "host-generator-on-npu-tensor", "dataloader-npu-generator",
    ]  # fmt: skip
    assert lines(npu.stdout, "ok ") == [f"ok {check}" for check in checks]


def test_without_device_identity_generators_are_the_backings_and_stay_torch_generators(tmp_path):
    (tmp_path / "plain.py").write_text(
        "import torch, torch_npu\n"
        "g = torch.Generator('npu:1'); g.manual_seed(3)\n"
        "h = torch.Generator(); h.manual_seed(3)\n"
        "assert isinstance(torch.default_generator, torch.Generator) and isinstance(g, torch.Generator)\n"
        "print('same', g.device, torch.equal(torch.randn(4, generator=g, device='npu'), torch.randn(4, generator=h)))\n"
    )
    proc = emulate(["--no-device-identity", "plain.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "same") == ["same cpu True"]
