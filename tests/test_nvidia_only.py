"""NVIDIA-only stacks of rules/libraries_nvidia.json (issue 31, mechanism 2): each is reported where
it is used, and a device test in front of it stays a CUDA test; a look-alike that is no such stack
still converts."""

from __future__ import annotations

import pytest

from conftest import cached_ruleset
from transplant.engine import convert


def run(source: str):
    conv = convert(source.encode(), cached_ruleset())
    return (conv.new or source.encode()).decode(), conv


@pytest.mark.parametrize(
    "header,call,what",
    [
        ("import torch", "torch._scaled_mm(x, w, scale_a=s, scale_b=s)", "torch._scaled_mm"),
        ("from torch import _scaled_mm as smm", "smm(x, w, scale_a=s, scale_b=s)", "torch._scaled_mm"),
        ("import torch", "x.to(torch.float8_e4m3fn)", "torch.float8_e4m3fn"),
        ("from torchao.float8 import convert_to_float8_training", "convert_to_float8_training(x)", "torchao.float8"),
        ("import transformer_engine.common.recipe as recipe", "recipe.DelayedScaling()", "recipe"),
        ("import tensorrt_llm", "tensorrt_llm.LLM(x)", "tensorrt_llm"),
        ("from isaaclab.app import AppLauncher", "AppLauncher(x)", "isaaclab"),
        ("import omni.isaac.core as core", "core.World()", "omni.isaac"),
        ("import cuml", "cuml.KMeans().fit(x)", "cuml"),
        ("import cudf", "cudf.DataFrame(x)", "cudf"),
        (
            "from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator",
            "PyNcclCommunicator(x)",
            "pynccl",
        ),
    ],
)
def test_a_device_test_in_front_of_an_nvidia_only_stack_stays(header, call, what):
    source = f"{header}\n\n\ndef f(x, w, s):\n    if x.is_cuda:\n        return {call}\n    return x\n"
    new, conv = run(source)
    assert "    if x.is_cuda:\n" in new
    kept = [r for r in conv.records if r.code == "TP240" and r.line == 5]
    assert kept and what in kept[0].message
    used = [r for r in conv.records if r.code == "TP206" and r.line == 6]
    assert used and used[0].suggestion


@pytest.mark.parametrize(
    "header,call",
    [
        ("import torch", "torch.matmul(x, w)"),
        ("import torch", "x.to(torch.bfloat16)"),
        ("import torchao.quantization as q", "q.quantize_(x)"),
        ("import vllm_ascend.distributed.device_communicators.pyhccl as pyhccl", "pyhccl.PyHcclCommunicator(x)"),
        ("import sklearn.cluster", "sklearn.cluster.KMeans().fit(x)"),
    ],
)
def test_a_look_alike_still_converts(header, call):
    source = f"{header}\n\n\ndef f(x, w, s):\n    if x.is_cuda:\n        return {call}\n    return x\n"
    new, conv = run(source)
    assert "    if x.is_cuda:\n" not in new and "x.is_npu" in new
    assert not [r for r in conv.records if r.code in ("TP240", "TP206")]


def test_float8_dtypes_and_the_fp8_matmul_are_reported_with_a_route():
    new, conv = run(
        "import torch\n\n\ndef f(a, b, s):\n    a8 = a.to(torch.float8_e5m2)\n"
        "    return torch._scaled_mm(a8, b, scale_a=s, scale_b=s, out_dtype=torch.bfloat16)\n"
    )
    rows = {(r.line, r.level) for r in conv.records if r.code == "TP206"}
    assert rows == {(5, "warning"), (6, "error")}
    assert "torch._scaled_mm(a8" in new  # reported, never rewritten


def test_transformer_engine_route_names_the_npu_build_under_megatron():
    _, conv = run("import transformer_engine.pytorch as te\n\nlayer = te.Linear(4, 4)\n")
    (row,) = [r for r in conv.records if r.code == "TP206" and r.line == 3]
    assert "MindSpeed" in row.suggestion and "bf16" in row.suggestion


@pytest.mark.parametrize(
    "header,call",
    [
        ("from isaaclab.app import AppLauncher", 'AppLauncher(headless=True, device="cuda:0")'),
        ("import isaaclab.sim as sim_utils", 'sim_utils.SimulationCfg(dt=0.01, device="cuda:0")'),
        ("from omni.isaac.core import World", 'World(device="cuda")'),
        ("from isaacgym.torch_utils import to_torch", 'to_torch([1.0], device="cuda:0")'),
    ],
)
def test_a_simulators_own_device_is_not_rewritten(header, call):
    source = f'import torch\n{header}\n\nsim = {call}\npolicy = torch.nn.Linear(4, 2).to(device="cuda:0")\n'
    new, conv = run(source)
    assert f"sim = {call}\n" in new  # the simulator's GPU
    assert 'to(device="npu:0")' in new  # the policy's device: converted
    (row,) = [r for r in conv.records if r.code == "TP206" and r.line == 4][:1]
    assert "cuda:0" in row.suggestion or "cuda:0" in row.message


ENV_WRAPPER = """import torch


class SimEnv:
    def __init__(self, cfg, device: str = "cuda:0"):
        self.device = cfg.get("device", device)
        self.sim_device = "cuda"

    def start(self):
        {header}

        self.app = launch(self.device)
        return torch.zeros(3, device=self.device)


policy = torch.nn.Linear(4, 2).to("cuda:0")
"""


@pytest.mark.parametrize(
    "header,launch",
    [
        ("from isaaclab.app import AppLauncher as launch", "AppLauncher"),
        ("from isaacgym.gymapi import acquire_gym as launch", "acquire_gym"),
    ],
)
def test_an_environment_wrapper_keeps_the_simulators_device(header, launch):
    """The simulator imported late, its device kept in a value first (a default, an assignment): kept,
    with a note each; the policy's device given straight to a call converts."""
    new, conv = run(ENV_WRAPPER.format(header=header))
    for kept in ('device: str = "cuda:0"', 'self.sim_device = "cuda"', "torch.zeros(3, device=self.device)"):
        assert kept in new
    assert 'policy = torch.nn.Linear(4, 2).to("npu:0")' in new
    notes = [r for r in conv.records if r.level == "note" and "runs on its own NVIDIA GPU" in r.message]
    assert sorted(r.line for r in notes) == [5, 7]


def test_a_wrapper_of_no_simulator_converts_its_device():
    new, _conv = run(ENV_WRAPPER.format(header="from mylab.app import AppLauncher as launch"))
    assert 'device: str = "npu:0"' in new and 'self.sim_device = "npu"' in new


SERVER = """import torch


class Server:
    def __init__(self, config):
        assert torch.cuda.is_available(), "this server runs on a GPU node"
        self.config = config

    async def launch(self):
        {body}
"""


def test_a_constructors_assertion_guards_the_objects_methods():
    """An assertion in __init__ is the precondition of the object: the CUDA-only library another
    method uses keeps it a CUDA test (verl's TensorRT-LLM server); with a portable method it converts."""
    new, conv = run(SERVER.format(body="from tensorrt_llm import AsyncLLM\n\n        return AsyncLLM(self.config)"))
    assert "assert torch.cuda.is_available()" in new
    (row,) = [r for r in conv.records if r.code == "TP240"]
    assert row.line == 6 and "tensorrt_llm" in row.message
    new, _conv = run(SERVER.format(body="return torch.ones(2).cuda()"))
    assert "assert torch_npu.npu.is_available()" in new
