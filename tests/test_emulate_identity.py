"""`transplant emulate --device-identity`: tensors moved to "npu" are NPU tensors computed on the CPU,
with the CPU's numbers bit for bit; and, in every mode, the end-of-run summary and CUDA-only builds.

Every emulated run is a subprocess (see test_emulate.py, whose helpers these tests share).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import textwrap

import pytest

from conftest import FIXTURES
from test_emulate import EXAMPLE, NOTICE, PROGRAMS, TRAINING, convert, emulate, free_port, lines, run

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

FIDELITY = FIXTURES / "emulate" / "identity" / "fidelity.py"
CHECKS = ["identity", "branch", "operations", "mixing", "host", "save-load", "indices", "training", "multiprocessing"]


def test_npu_tensors_are_npu_tensors_with_the_cpus_numbers(tmp_path):
    shutil.copy(FIDELITY, tmp_path)
    on_cpu = run(["fidelity.py", "cpu"], tmp_path)
    assert on_cpu.returncode == 0, on_cpu.stderr
    proc = emulate(["--device-identity", "--strict", "fidelity.py"], tmp_path, TRANSPLANT_EMULATE_NPUS="4")
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "ok ") == [f"ok {check}" for check in CHECKS]
    losses = lines(proc.stdout, "loss ")
    assert len(losses) == 3 and losses == lines(on_cpu.stdout, "loss ")  # SGD foreach, fused Adam, AdamW


def test_attention_takes_the_cpus_kernel(tmp_path):
    """scaled_dot_product_attention picks its kernel by device type: on the NPU it is the CPU's choice."""
    shutil.copy(FIDELITY.parent / "attention.py", tmp_path)
    on_cpu = run(["attention.py", "cpu"], tmp_path)
    emulated = emulate(["--device-identity", "attention.py", "npu"], tmp_path)
    assert on_cpu.returncode == 0 and emulated.returncode == 0, on_cpu.stderr + emulated.stderr
    assert len(on_cpu.stdout.split()) == 3 and emulated.stdout.split() == on_cpu.stdout.split()


def test_device_identity_is_the_default_and_can_be_turned_off(tmp_path):
    (tmp_path / "where.py").write_text("import torch, torch_npu\nprint(torch.ones(2).to('npu').device.type)\n")
    assert emulate(["where.py"], tmp_path).stdout.split() == ["npu"]
    assert emulate(["--device-identity", "where.py"], tmp_path).stdout.split() == ["npu"]
    assert emulate(["--no-device-identity", "where.py"], tmp_path).stdout.split() == ["cpu"]
    off = emulate(["where.py"], tmp_path, TRANSPLANT_EMULATE_DEVICE_IDENTITY="0")
    assert off.stdout.split() == ["cpu"]
    assert emulate(
        ["--device-identity", "where.py"], tmp_path, TRANSPLANT_EMULATE_DEVICE_IDENTITY="0"
    ).stdout.split() == ["npu"]


RANKS = """
import os
import torch
import torch_npu

if os.environ.get("ACCELERATE_LAUNCH"):
    from accelerate import PartialState

    state = PartialState()  # its NPU path: torch.npu.set_device(npu:<local process index>)
    rank, device = state.process_index, state.device
else:
    rank = int(os.environ["RANK"])
    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    device = torch.device("npu")
model = torch.nn.Linear(2, 2).to(device)
x = torch.ones(1, 2).npu()
print(f"rank {rank} {device} {torch.npu.current_device()} {x.device} {model(x).device}", flush=True)
"""


@pytest.mark.parametrize("launcher", ["torchrun", "accelerate"])
def test_each_rank_computes_on_its_own_npu(launcher, tmp_path):
    """No collective here (DDP over the emulated hccl is another test's): the devices only."""
    if launcher == "accelerate" and importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (.ci/run installs it)")
    (tmp_path / "ranks.py").write_text(RANKS)
    port = str(free_port())
    if launcher == "torchrun":
        args = ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", port, "ranks.py"]
        env = {}
    else:
        args = ["-m", "accelerate.commands.launch", "--num_processes", "2", "--multi_gpu", "--num_machines", "1"]
        args += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", port, "ranks.py"]
        env = {"ACCELERATE_LAUNCH": "1"}
    proc = emulate(["--device-identity", *args], tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    # the ranks share one stdout, so a line of one may land in the middle of the other's
    found = sorted(re.findall(r"rank \d npu(?::\d)? \d npu:\d npu:\d", proc.stdout))
    named = "npu" if launcher == "torchrun" else "npu:{}"  # torchrun's program says "npu": the selected one
    assert found == [f"rank {r} {named.format(r)} {r} npu:{r} npu:{r}" for r in (0, 1)], proc.stdout


@pytest.mark.parametrize("program", sorted(TRAINING))
def test_training_programs_match_the_original_bitwise_as_npu_tensors(program, tmp_path):
    args, steps = TRAINING[program]
    original = tmp_path / program
    shutil.copytree(PROGRAMS / program, original)
    converted = convert(original, tmp_path / "out")
    before = run(["train.py", *args], original)
    assert before.returncode == 0, before.stderr
    after = emulate(["--device-identity", "--strict", "train.py", *args], converted)
    assert after.returncode == 0, after.stderr
    assert lines(after.stdout, "device") == ["device npu"]
    assert len(lines(before.stdout, "step")) == steps
    for prefix in ("step", "accuracy", "sample"):
        assert lines(after.stdout, prefix) == lines(before.stdout, prefix)
    # the GAN's checkpoint, loaded with map_location=device, comes back on the NPU, as on an NPU
    expected = [line.replace("on cpu", "on npu") for line in lines(before.stdout, "restored")]
    assert lines(after.stdout, "restored") == expected


def test_readme_example_trains_alike_with_and_without_device_identity(tmp_path):
    example = tmp_path / "mnist_cuda"
    shutil.copytree(EXAMPLE, example)
    converted = convert(example, tmp_path / "out")
    plain = emulate(["--strict", "train.py", "--epochs", "1"], converted)
    identity = emulate(["--strict", "--device-identity", "train.py", "--epochs", "1"], converted)
    assert plain.returncode == 0 and identity.returncode == 0, plain.stderr + identity.stderr
    assert lines(identity.stdout, "epoch") == lines(plain.stdout, "epoch") != []


def test_plain_emulate_runs_no_device_mode_and_still_does_its_jobs(tmp_path):
    """Plain emulate under device identity runs no TorchFunctionMode (its cost is every call's);
    what the mode did is done by the kernels and a few entry points, so a program sees what it sees
    under --strict, which keeps the mode."""
    shutil.copy(FIDELITY.parent / "modeless.py", tmp_path)
    plain = emulate(["modeless.py"], tmp_path)
    strict = emulate(["--strict", "modeless.py"], tmp_path)
    assert plain.returncode == 0 and strict.returncode == 0, plain.stderr + strict.stderr
    assert "modes 0" in plain.stderr.splitlines() and "modes 1" in strict.stderr.splitlines()
    assert plain.stdout == strict.stdout
    placed = ["to", "to-device", "to-keyword", "npu", "tensor", "as_tensor", "zeros", "module"]
    assert lines(plain.stdout, "device ") == [
        *(f"device {name} npu:1" for name in placed),  # "npu" is the selected NPU, not PyTorch's guard's 0
        "device back npu:0 npu:0",
        "device index npu:2 npu:3",
    ]
    # pinning on the CPU backing gives the tensor back, pinned by nothing (PyTorch would raise here)
    assert lines(plain.stdout, "pin ") == ["pin True False False cpu False"]
    assert lines(plain.stdout, "script ") == ["script [3.0, 3.0]"]  # wrapped factories stay TorchScript builtins
    # the summary counts without the mode: each move to the NPU, the module's by Module.to
    summary = summary_line(plain.stderr)
    assert re.search(r"summary: 13 tensor moves and 1 module move to the NPU$", summary), summary
    assert "modeless.py:15 (module), modeless.py:17 (tensor)" in plain.stderr


def test_the_summary_says_what_went_to_the_npu_and_q_silences_it(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.py").write_text("def place(t):\n    return t.to('npu')\n")
    (tmp_path / "prog.py").write_text(
        textwrap.dedent("""\
        import torch, torch_npu
        from lib.helpers import place
        model = torch.nn.Linear(2, 2).npu()
        x = place(torch.ones(2))
        if torch_npu.npu.is_available():
            y = torch.zeros(3, device="npu:0")
        """)
    )
    proc = emulate(["prog.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = [
        line for line in proc.stderr.splitlines() if line.startswith("transplant emulate:") and NOTICE not in line
    ]
    assert summary[0].startswith("transplant emulate: summary: ") and "1 module move to the NPU" in summary[0]
    assert "prog.py:3 (module)" in summary[1] and "prog.py:6 (tensor)" in summary[1]
    assert "helpers.py:2 (tensor)" in summary[1]
    assert summary[2].endswith("torch_npu names used (1): torch_npu.npu.is_available")
    quiet = emulate(["-q", "prog.py"], tmp_path)
    assert quiet.returncode == 0 and "summary" not in quiet.stderr


def summary_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith("transplant emulate: summary: "))


def test_the_summary_counts_moves_by_index_and_adds_up_a_launchers_ranks(tmp_path):
    (tmp_path / "by_index.py").write_text(
        "import torch\nmodel = torch.nn.Linear(2, 2).to(0)\nx = torch.ones(2).to(0)\ny = torch.zeros(2, device=0)\n"
    )
    (tmp_path / "by_name.py").write_text(
        'import torch\nmodel = torch.nn.Linear(2, 2).to("npu:0")\nx = torch.ones(2).to("npu:0")\n'
        'y = torch.zeros(2, device="npu:0")\n'
    )
    by_index, by_name = emulate(["by_index.py"], tmp_path), emulate(["by_name.py"], tmp_path)
    assert by_index.returncode == 0 and by_name.returncode == 0, by_index.stderr + by_name.stderr
    assert "1 module move to the NPU" in summary_line(by_index.stderr)
    assert summary_line(by_index.stderr) == summary_line(by_name.stderr)
    # a host program's own index is not a move: sizes and dtypes are numbers too
    (tmp_path / "host.py").write_text("import torch\nx = torch.ones(2, 3).sum(0)\n")
    assert summary_line(emulate(["host.py"], tmp_path).stderr).endswith("0 tensor moves and 0 module moves to the NPU")

    (tmp_path / "rank.py").write_text(
        "import os, torch\nrank = int(os.environ['LOCAL_RANK'])\ntorch.npu.set_device(rank)\n"
        "model = torch.nn.Linear(2, 2).to(rank)\nout = model(torch.ones(2).npu())\n"
        # one write per line: print's pieces, written apart, can interleave with the other rank's
        "os.write(1, f'rank {rank} {out.device}\\n'.encode())\n"
    )
    alone = emulate(["rank.py"], tmp_path, LOCAL_RANK="0")
    launched = emulate(
        ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()), "rank.py"],
        tmp_path,
        TMPDIR=str(tmp_path),  # where the ranks leave their summaries: removed at the end
    )
    assert alone.returncode == 0 and launched.returncode == 0, alone.stderr + launched.stderr
    # (the ranks share stdout: their lines may run together, so each is found by its pattern)
    assert sorted(re.findall(r"rank \d npu:\d", launched.stdout)) == ["rank 0 npu:0", "rank 1 npu:1"], (
        launched.stdout + launched.stderr
    )
    one = re.search(r"(\d+) tensor moves? and (\d+) module moves?", summary_line(alone.stderr))
    both = re.search(
        r"(\d+) tensor moves? and (\d+) module moves? to the NPU \(all 3 processes\)", summary_line(launched.stderr)
    )
    assert one and both and both.groups() == (str(2 * int(one[1])), str(2 * int(one[2]))), launched.stderr
    assert not list(tmp_path.glob("transplant-emulate-summaries-*")), "the ranks' summaries were left behind"


def test_torch_compile_runs_eagerly_in_each_form(tmp_path):
    # inductor has no code generator for the emulated NPU and TorchDynamo does not trace the emulator:
    # every form of torch.compile runs eagerly (found on litgpt's *_compile tests); a module comes back
    # as the OptimizedModule a compilation gives, whose _orig_mod and state dict keys programs read
    # (accelerate's extract_model_from_parallel, checkpoints saved from a compiled model)
    (tmp_path / "prog.py").write_text(
        textwrap.dedent("""\
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to("npu")
        compiled = torch.compile(model)

        @torch.compile
        def double(x):
            return x * 2

        @torch.compile(mode="max-autotune", fullgraph=True)
        def shift(x):
            return x + 1

        x = torch.randn(2, 4).to("npu")
        assert isinstance(compiled, torch._dynamo.eval_frame.OptimizedModule) and compiled._orig_mod is model
        assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
        assert torch.equal(compiled(x), model(x))
        assert torch.equal(double(x), x * 2) and torch.equal(shift(x), x + 1)
        print("device", compiled(x).device.type)
        """)
    )
    for identity in ([], ["--no-device-identity"]):
        proc = emulate([*identity, "prog.py"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert ("device npu" if not identity else "device cpu") in proc.stdout
        assert "torch.compile ran eagerly (3 calls)" in proc.stderr


def test_a_cuda_only_build_on_the_npu_path_fails_naming_it(tmp_path):
    (tmp_path / "build.py").write_text(
        textwrap.dedent("""\
        import sys
        import torch, torch_npu
        from torch.utils.cpp_extension import load_inline
        x = torch.ones(2).to("npu")
        if x.device.type == "npu" or sys.argv[1:] == ["always"]:
            ext = load_inline("fused_gelu", cpp_sources="", cuda_sources="__global__ void k() {}")
        print("built or passed by")
        """)
    )
    message = (
        "transplant emulate: error: build.py:6: CUDA-only extension build 'fused_gelu' (load_inline with cuda_sources)"
    )
    for args in (["build.py"], ["--no-device-identity", "build.py", "always"]):
        proc = emulate(args, tmp_path)
        assert proc.returncode == 1 and "passed by" not in proc.stdout, args
        assert message in proc.stderr, proc.stderr
    # with --no-device-identity the NPU branch is not taken: tensors say they are on the CPU
    assert emulate(["--no-device-identity", "build.py"], tmp_path).stdout.split() == ["built", "or", "passed", "by"]


@pytest.mark.parametrize("strict", [False, True], ids=["emulate", "strict"])
def test_the_kernels_shortcuts_compute_what_the_cpu_computes(strict, tmp_path):
    """Views made by the CPU's view kernels, results fed on as they are, metadata changed in place,
    several results, numbers where tensors are taken, casts: every value, stride, storage offset and
    version counter is the CPU's, and each result stays on npu:1. Casts that stay on their NPU and
    the numbers PyTorch puts on the NPU for ``x[i] = 2.0`` are not moves: the summary counts the six
    the program made."""
    shutil.copy(FIDELITY.parent / "kernels.py", tmp_path)
    on_cpu = run(["kernels.py", "cpu"], tmp_path)
    assert on_cpu.returncode == 0, on_cpu.stderr
    assert [line.split()[0] for line in on_cpu.stdout.splitlines()] == [
        "views", "chains", "in-place-metadata", "several-results", "casts",
    ]  # fmt: skip
    emulated = emulate([*(["--strict"] if strict else []), "kernels.py", "npu"], tmp_path)
    assert emulated.returncode == 0, emulated.stderr
    assert emulated.stdout == on_cpu.stdout
    if not strict:
        assert re.search(r"summary: 6 tensor moves and 0 module moves to the NPU$", summary_line(emulated.stderr))
