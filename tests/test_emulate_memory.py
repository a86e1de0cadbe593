"""torch.npu's memory statistics under emulate's device identity: the bytes of live NPU tensors,
counted as torch_npu's caching allocator counts them (each storage's size plus 32 bytes, rounded up
to 512), going up when tensors are made and back down when they are freed, as on a device.

Every emulated run is a subprocess (see test_emulate.py, whose helpers these tests share).
"""

from __future__ import annotations

import importlib.util

import pytest

from test_emulate import emulate, lines

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

PROGRAM = """\
import gc, torch, torch_npu
npu = torch.npu

def show(what):
    print(what, npu.memory_allocated(), npu.max_memory_allocated(), npu.memory_reserved(), npu.max_memory_reserved())

show("start")
x = torch.ones(1000, device="npu")  # 4000 bytes: a block of 4096
show("tensor")
view = x[10:]  # a view holds no memory of its own
del x
show("view")
del view
show("freed")
model = torch.nn.Linear(100, 100).to("npu")  # 40000 + 400 bytes: 40448 + 512
show("model")
stats = npu.memory_stats()
print("stats", stats["allocated_bytes.all.current"], stats["allocated_bytes.all.peak"])
print("devices", npu.memory_allocated(0), npu.memory_allocated("npu:0"), npu.memory_allocated(1))
on_one = torch.zeros(3, device="npu:1")  # 12 bytes: a block of 512, on NPU 1
print("devices", npu.memory_allocated(0), npu.memory_allocated(torch.device("npu", 1)), torch.accelerator.memory_allocated(1))
grown = torch.empty(0, device="npu")
grown.resize_(2000)  # the storage grows: its block with it
show("resized")
del grown, on_one
model = None
gc.collect()
show("released")
npu.empty_cache()
show("emptied")
npu.reset_peak_memory_stats()
show("reset")
empty = torch.empty(0, device="npu")  # no bytes, no block
show("empty")
"""


def test_memory_allocated_counts_live_npu_tensors_and_goes_back_down(tmp_path):
    (tmp_path / "memory.py").write_text(PROGRAM)
    proc = emulate(["memory.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = {line.split()[0]: [int(v) for v in line.split()[1:]] for line in proc.stdout.splitlines()}
    model = 40448 + 512
    assert shown["start"] == [0, 0, 0, 0]
    assert shown["tensor"] == [4096, 4096, 4096, 4096]
    assert shown["view"] == [4096, 4096, 4096, 4096]
    assert shown["freed"] == [0, 4096, 4096, 4096]  # freed blocks stay reserved, as in a caching allocator
    assert shown["model"] == [model, model, model, model]
    assert shown["stats"] == [model, model]
    assert lines(proc.stdout, "devices ") == [f"devices {model} {model} 0", f"devices {model} 512 512"]
    assert shown["resized"] == [model + 8192, model + 8192, model + 8192, model + 8192]
    assert shown["released"] == [0, model + 8192, model + 8192, model + 8192]
    assert shown["emptied"] == [0, model + 8192, 0, model + 8192]
    assert shown["reset"] == [0, 0, 0, 0]
    assert shown["empty"] == [0, 0, 0, 0]


def test_without_device_identity_the_statistics_stay_zeros(tmp_path):
    (tmp_path / "memory.py").write_text(
        "import torch, torch_npu\nx = torch.ones(1000, device='npu')\n"
        "print('allocated', torch.npu.memory_allocated(), torch.npu.max_memory_allocated())\n"
    )
    proc = emulate(["--no-device-identity", "memory.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "allocated") == ["allocated 0 0"]
