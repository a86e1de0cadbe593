"""`transplant emulate --transfer-to-npu`: an unconverted CUDA program run as torch_npu's zero-edit
runtime migration (TORCH_TRANSFER_TO_NPU=1, torch_npu.contrib.transfer_to_npu) runs it on an NPU.
Each patched API is checked on its own, then a small training program against its plain CPU run."""

from __future__ import annotations

import importlib.util
import re

import pytest

from test_emulate import emulate, run

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

APIS = """
import warnings
import torch
import torch.distributed as dist

warnings.simplefilter("ignore")
x = torch.ones(2)
checks = {
    "cuda.is_available": lambda: torch.cuda.is_available(),
    "factory string": lambda: torch.zeros(2, device="cuda").device,
    "factory device": lambda: torch.ones(2, device=torch.device("cuda", 1)).device,
    "factory int keyword": lambda: torch.empty(2, device=0).device,
    "like": lambda: torch.zeros_like(x, device="cuda:1").device,
    "tensor.to string": lambda: x.to("cuda").device,
    "tensor.to int": lambda: x.to(1).device,
    "tensor.cuda": lambda: x.cuda().device,
    "tensor.is_cuda": lambda: x.cuda().is_cuda,
    "new_zeros": lambda: x.new_zeros(2, device="cuda").device,
    "module.cuda": lambda: next(torch.nn.Linear(1, 1).cuda().parameters()).device,
    "module.to": lambda: next(torch.nn.Linear(1, 1).to("cuda:1").parameters()).device,
    "set_device": lambda: (torch.cuda.set_device("cuda:1"), torch.cuda.current_device())[1],
    "DoubleTensor": lambda: torch.cuda.DoubleTensor is torch.npu.FloatTensor,
    "Generator": lambda: torch.Generator.__new__.__qualname__,
    "jit.script": lambda: torch.jit.script(len) is len,
    "has_triton": lambda: __import__("torch.utils._triton", fromlist=["x"]).has_triton(),
    "is_nccl_available": lambda: dist.is_nccl_available(),
    "device type test": lambda: x.cuda().device.type == "cuda",
    "torch.device": lambda: torch.device("cuda").type,
}
for label, check in checks.items():
    try:
        print(f"{label}: {check()}")
    except Exception as exc:
        print(f"{label}: {type(exc).__name__}")
"""


def test_each_patched_api_as_the_runtime_migration_leaves_it(tmp_path):
    (tmp_path / "apis.py").write_text(APIS)
    proc = emulate(["--transfer-to-npu", "-q", "apis.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert got == {
        "cuda.is_available": "True",
        "factory string": "npu:0",
        "factory device": "npu:1",
        "factory int keyword": "npu:0",
        "like": "npu:1",
        "tensor.to string": "npu:0",
        "tensor.to int": "npu:1",
        "tensor.cuda": "npu:0",
        "tensor.is_cuda": "True",
        "new_zeros": "npu:0",
        "module.cuda": "npu:0",
        "module.to": "npu:1",
        "set_device": "1",
        "DoubleTensor": "True",
        "Generator": "_Generator.__new__",  # (the emulation has no NPU generator to make: docs/emulate.md)
        "jit.script": "True",
        "has_triton": "False",
        "is_nccl_available": "True",
        # what the migration does not see: a device test compares "npu" with "cuda", and a
        # torch.device made by the program stays CUDA's
        "device type test": "False",
        "torch.device": "cuda",
    }
    assert "runtime migration (transfer_to_npu) is on" in proc.stderr


def test_without_the_migration_the_same_program_finds_no_cuda(tmp_path):
    (tmp_path / "apis.py").write_text(APIS)
    proc = emulate(["-q", "apis.py"], tmp_path)
    got = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert got["cuda.is_available"] == "False" and got["tensor.cuda"] != "npu:0"
    assert "runtime migration" not in proc.stderr


IMPORTED = """
import torch
import torch_npu
from torch_npu.contrib import transfer_to_npu
print(torch.cuda.is_available(), torch.zeros(1, device="cuda").device)
"""


def test_importing_transfer_to_npu_applies_it_and_the_variable_is_checked(tmp_path):
    (tmp_path / "imported.py").write_text(IMPORTED)
    proc = emulate(["-q", "imported.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "npu:0"]
    (tmp_path / "plain.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    proc = emulate(["-q", "plain.py"], tmp_path, TORCH_TRANSFER_TO_NPU="1")
    assert proc.stdout.strip() == "True"
    proc = emulate(["-q", "plain.py"], tmp_path, TORCH_TRANSFER_TO_NPU="yes")
    assert proc.returncode != 0
    assert "Invalid value for TORCH_TRANSFER_TO_NPU: yes" in proc.stderr


TRAIN = """
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data, target = torch.randn(32, 8), torch.randint(0, 4, (32,))
for step in range(5):
    x, y = data.to(device), target.to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f} on {x.device.type}")
scaler = torch.amp.GradScaler()  # "cuda", its default: torch.cuda.amp is torch_npu.npu.amp now
with torch.amp.autocast("cuda", dtype=torch.bfloat16):  # torch.amp.autocast is not wrapped
    out = model(data.to(device))
print("scaler", scaler.is_enabled(), "autocast", out.dtype)
"""


def test_an_unconverted_program_trains_on_the_npu_with_the_numbers_of_its_cpu_run(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    plain = run(["train.py"], tmp_path)
    migrated = emulate(["--transfer-to-npu", "train.py"], tmp_path)
    assert plain.returncode == 0 and migrated.returncode == 0, migrated.stderr
    losses = lambda out: re.findall(r"loss (\S+)", out)
    assert losses(migrated.stdout) == losses(plain.stdout) and len(losses(plain.stdout)) == 5
    assert "on cpu" in plain.stdout and "on npu" in migrated.stdout
    # the scaler works (torch.cuda.amp's availability check is torch_npu's); autocast for "cuda" casts
    # nothing on NPU tensors: the author's bf16 region runs in float32 on an NPU
    assert "scaler True autocast torch.float32" in migrated.stdout
    assert re.search(r"summary: \d+ tensor moves and 1 module move to the NPU", migrated.stderr)


def test_strict_names_what_the_migration_does_not_cover(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    proc = emulate(["--transfer-to-npu", "--strict", "train.py"], tmp_path)
    line = next(i for i, text in enumerate(TRAIN.splitlines(), 1) if text.startswith("with torch.amp.autocast"))
    errors = [e for e in proc.stderr.splitlines() if e.startswith("transplant emulate: error:")]
    assert errors == [f'transplant emulate: error: train.py:{line}: autocast("cuda") (CUDA use; --strict)'], proc.stderr


# --------------------------------------------------------------------------- each patch, by release

# Every table of transplant/transfer_api.py is torch_npu 26.0's (Ascend/pytorch v2.10.0-26.0.0); what a
# later release adds is transfer_api.ADDED. `--torch-npu` picks the release the emulation applies.
WRAPPED = """
import torch
from transplant.transfer_api import CUDA_FUNCTIONS, MODULE_METHODS, TENSOR_METHODS, TORCH_FUNCTIONS

tables = ((torch, TORCH_FUNCTIONS), (torch.cuda, CUDA_FUNCTIONS), (torch.Tensor, TENSOR_METHODS),
          (torch.nn.Module, MODULE_METHODS))
for owner, names in tables:
    for name in names:
        function = getattr(owner, name, None)
        if function is not None and not hasattr(function, "__wrapped__"):
            print("not wrapped:", owner.__name__, name)
print("checked", sum(len(names) for _, names in tables))
"""


def test_every_function_of_the_26_0_tables_is_wrapped(tmp_path):
    (tmp_path / "wrapped.py").write_text(WRAPPED)
    proc = emulate(["--transfer-to-npu", "--torch-npu", "26.0", "-q", "wrapped.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["checked 73"]  # 46 torch functions, 17 of torch.cuda, 8 + 2 methods


MORE = """
import io
import warnings

import torch
import torch.distributed as dist

warnings.simplefilter("ignore")


def load():
    buffer = io.BytesIO()
    torch.save(torch.ones(1), buffer)
    buffer.seek(0)
    return torch.load(buffer, map_location="cuda").device


def cuda_device():
    with torch.cuda.device("cuda:1"):
        return torch.cuda.current_device()


def device_context():
    with torch.device("cuda:1"):
        return torch.ones(1).device


def group(backend):
    dist.init_process_group(backend, rank=0, world_size=1, store=dist.HashStore())
    try:
        return "initialised"
    finally:
        dist.destroy_process_group()


def default_device():
    torch.set_default_device("cuda")
    try:
        return torch.ones(1).device
    finally:
        torch.set_default_device("cpu")


checks = {
    "torch.load map_location": load,
    "torch.cuda.device": cuda_device,
    "DeviceContext": device_context,
    "set_default_device": default_device,
    "Module.to_empty": lambda: next(torch.nn.Linear(1, 1).to_empty(device="cuda").parameters()).device,
    "cuda.memory_allocated": lambda: type(torch.cuda.memory_allocated("cuda:0")).__name__,
    "cuda.synchronize": lambda: torch.cuda.synchronize("cuda:1"),
    "cuda.amp namespace": lambda: torch.cuda.amp.autocast is torch.npu.amp.autocast,
    "cuda.random namespace": lambda: torch.cuda.manual_seed is torch.npu.manual_seed,
    "CUDAGraph": lambda: torch.cuda.CUDAGraph,
    "backend map": lambda: "cuda" in dist.Backend.default_device_backend_map,
    "nccl backend": lambda: group("nccl"),
    "backend string": lambda: group("cpu:gloo,cuda:nccl"),
    "TypedStorage.is_cuda": lambda: torch.ones(1).cuda().storage().is_cuda,
}
for label, check in checks.items():
    try:
        print(f"{label}: {check()}")
    except Exception as exc:
        print(f"{label}: {type(exc).__name__}: {str(exc).split(':')[0]}")
"""

# label -> the release it appeared in, and what the program prints under that release
IN_26_0 = {
    "torch.load map_location": "npu:0",
    "torch.cuda.device": "1",
    "DeviceContext": "npu:1",  # (the factories the context knows are cached before they are wrapped)
    "set_default_device": "npu:0",
    "Module.to_empty": "npu:0",
    "cuda.memory_allocated": "int",
    "cuda.synchronize": "None",
    "cuda.amp namespace": "True",
    "cuda.random namespace": "True",
    "CUDAGraph": "<torch_npu.npu.NPUGraph: not emulated>",  # it is NPUGraph (which refuses when used)
    "backend map": "False",
    "nccl backend": "initialised",
    "backend string": "initialised",  # "cpu:gloo,cuda:hccl" in 26.0
    "TypedStorage.is_cuda": "False",
}
# what 26.1 prints otherwise (transfer_api.ADDED)
IN_26_1 = {
    "backend string": "initialised",  # "cpu:gloo,npu:hccl": one library for both devices on the CPU backing
    "TypedStorage.is_cuda": "True",
}


@pytest.mark.parametrize("release", ["26.0", "26.1", "26.2"])
def test_the_patches_of_each_release(tmp_path, release):
    (tmp_path / "more.py").write_text(MORE)
    proc = emulate(["--transfer-to-npu", "--torch-npu", release, "-q", "more.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"(torch_npu {release})" in proc.stderr
    expected = {**IN_26_0, **(IN_26_1 if release != "26.0" else {})}
    assert dict(line.split(": ", 1) for line in proc.stdout.splitlines()) == expected


def test_the_rewrites_added_after_26_0_by_release(monkeypatch):
    """The two argument rewrites that later releases widened, on the emulation's own wrappers."""
    from transplant.emulate import RELEASE_ENV, transfer

    def seen(*args, **kwargs):
        return args, kwargs

    got = {}
    for release in ("26.0", "26.1", "26.2"):
        monkeypatch.setenv(RELEASE_ENV, release)
        backend = transfer.hccl(seen)("cpu:gloo,cuda:nccl", backend="nccl")
        ids = transfer.moving(seen)(device_ids=("cuda:0", 1))[1]["device_ids"]
        got[release] = (backend[0][0], backend[1]["backend"], ids)
    assert got == {
        "26.0": ("cpu:gloo,cuda:hccl", "hccl", ("cuda:0", 1)),  # a tuple of device ids is left as it is
        "26.1": ("cpu:gloo,npu:hccl", "hccl", ("cuda:0", 1)),  # "backend string cuda"
        "26.2": ("cpu:gloo,npu:hccl", "hccl", ("npu:0", 1)),  # "tuple device_ids" (an int stays an int)
    }


def test_every_patch_a_later_release_added_is_tested_or_named_as_not_emulated():
    from transplant.transfer_api import ADDED, NOT_EMULATED, RELEASES_COVERED

    tested = {"backend string cuda", "tuple device_ids", "TypedStorage.is_cuda", "torch.cuda.default_generators"}
    assert set(ADDED) - set(NOT_EMULATED) == tested
    assert set(ADDED.values()) <= set(RELEASES_COVERED) and RELEASES_COVERED[0] == "26.0"


def test_an_unknown_release_is_a_one_line_error(tmp_path):
    (tmp_path / "plain.py").write_text("print(1)\n")
    proc = emulate(["--transfer-to-npu", "--torch-npu", "7.3", "plain.py"], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--torch-npu" in proc.stderr.strip().splitlines()[-1]
