"""`transplant emulate --device-identity`: collectives of the emulated hccl and DistributedDataParallel
on NPU tensors, with the numbers of the same program run on the CPU over gloo, bit for bit.

Every emulated run is a subprocess (see test_emulate.py, whose helpers these tests share).
"""

from __future__ import annotations

import importlib.util
import re
import shutil

import pytest

from conftest import FIXTURES
from test_emulate import SPAWN, emulate, free_port, launch_under_the_emulator, lines, run
from test_emulate_programs import TORCHRUN, torchrun

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

PROGRAM = FIXTURES / "emulate" / "identity" / "collectives.py"
IDENTITY = {"TRANSPLANT_EMULATE_DEVICE_IDENTITY": "1"}


def test_collectives_and_ddp_on_npu_tensors_give_the_cpus_numbers(tmp_path):
    shutil.copy(PROGRAM, tmp_path)
    (tmp_path / "cpu").mkdir()
    (tmp_path / "npu").mkdir()
    on_cpu = run(torchrun("collectives.py", "cpu", "cpu"), tmp_path)
    assert on_cpu.returncode == 0, on_cpu.stderr
    on_npu = emulate(["--device-identity", *torchrun("collectives.py", "npu", "npu")], tmp_path)
    assert on_npu.returncode == 0, on_npu.stderr
    for rank in (0, 1):
        assert f"process group hccl as gloo: rank {rank} of 2" in on_npu.stderr
        cpu = (tmp_path / "cpu" / f"rank_{rank}.txt").read_text().splitlines()
        npu = (tmp_path / "npu" / f"rank_{rank}.txt").read_text().splitlines()
        # every collective, the DDP gradients (several buckets), losses and parameters: same bits
        assert len([line for line in cpu if " [cpu] " in line]) == 17 and not any("npu" in line for line in cpu)
        assert "mixing refused: True" in npu  # a host tensor in an NPU collective, as HCCL refuses it
        npu.remove("mixing refused: True")
        assert npu == [line.replace(" [cpu] ", " [npu] ") for line in cpu]
        assert "barrier" in npu and "all_gather_object [{'rank': 0}, {'rank': 1}]" in npu
    # the ranks started from different parameters: DDP made them rank 0's, and kept them equal
    final = [(tmp_path / "npu" / f"rank_{rank}.txt").read_text().splitlines()[-1] for rank in (0, 1)]
    assert final[0] == final[1] and final[0].startswith("parameters [npu] 150 ")


def test_torchrun_and_spawned_ranks_reduce_npu_tensors(tmp_path):
    """The distributed programs of test_emulate.py and test_emulate_programs.py, as NPU tensors."""
    (tmp_path / "job.py").write_text(TORCHRUN.replace("{total.tolist()}", "{total.tolist()} {total.device.type}"))
    proc = emulate(torchrun("job.py"), tmp_path, **IDENTITY)
    assert proc.returncode == 0, proc.stderr
    assert sorted(re.findall(r"rank \d \[[^\]]*\] (?:npu|cpu)", proc.stdout)) == [
        "rank 0 [3.0, 3.0] npu",
        "rank 1 [3.0, 3.0] npu",
    ]
    (tmp_path / "spawn.py").write_text(
        SPAWN.replace("{total.tolist()}", "{total.tolist()} {total.device.type}") % {"port": free_port()}
    )
    proc = emulate(["--strict", "spawn.py"], tmp_path, **IDENTITY)
    assert proc.returncode == 0, proc.stderr
    assert sorted(re.findall(r"rank \d \[[^]]*\] (?:npu|cpu)", proc.stdout)) == [
        "rank 0 [3.0, 3.0] npu",
        "rank 1 [3.0, 3.0] npu",
    ]


COMPARE = """
import sys
import torch, torch_npu
plain, identity = (torch.load(path, map_location="cpu") for path in sys.argv[1:])
assert sorted(plain) == sorted(identity) and plain
assert all(torch.equal(plain[key], identity[key]) for key in plain)
print("equal", len(plain))
"""


def test_a_converted_distributed_project_trains_alike_as_npu_tensors(tmp_path):
    """The (seeded) "dataparallel" fixture of the distributed conversion, run by its launch script on
    NPUs 3,5, with and without --device-identity: the same losses and saved parameters, bit for bit."""
    runs = {}
    for name, env in (("plain", {}), ("identity", IDENTITY)):
        (tmp_path / name).mkdir()
        runs[name] = launch_under_the_emulator("dataparallel", tmp_path / name, **env)
    (plain_root, plain_logs), (identity_root, identity_logs) = runs["plain"], runs["identity"]
    epochs = lines(plain_logs["rank_0.log"], "epoch")
    assert len(epochs) == 2 and lines(identity_logs["rank_0.log"], "epoch") == epochs
    (tmp_path / "compare.py").write_text(COMPARE)
    proc = emulate(["--device-identity", "compare.py", plain_root / "model.pt", identity_root / "model.pt"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.split()[0] == "equal", proc.stderr
