"""`transplant emulate` runs what users run: modules (`-m pytest`, `-m torch.distributed.run`), the
processes they start, code written against `torch.accelerator`, and programs that rely on PyTorch's
autoload of torch_npu instead of importing it.

Every emulated run is a subprocess (see test_emulate.py, whose helpers these tests share).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import textwrap

import pytest

from conftest import FIXTURES
from test_emulate import NOTICE, convert, emulate, free_port, run

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

SUITE = FIXTURES / "emulate" / "suite_project"


def report(path) -> dict[str, list[str]]:
    """The SUITE_REPORT lines of a run of the fixture project's tests, by their first word."""
    return {line.split()[0]: line.split()[1:] for line in path.read_text().splitlines()}


# --------------------------------------------------------------------------- a project's own test suite


def test_a_projects_own_suite_runs_under_emulate_m_pytest(tmp_path):
    original = tmp_path / "suite_project"
    shutil.copytree(SUITE, original)
    before = run(["-m", "pytest", "-q", "-p", "no:cacheprovider"], original, SUITE_REPORT=str(tmp_path / "before"))
    assert before.returncode == 0, before.stdout + before.stderr
    converted = convert(original, tmp_path / "out")
    after = emulate(
        ["--strict", "-m", "pytest", "-q", "-p", "no:cacheprovider"], converted, SUITE_REPORT=str(tmp_path / "after")
    )
    assert after.returncode == 0, after.stdout + after.stderr
    assert f"{NOTICE} -m pytest" in after.stderr and "7 passed" in after.stdout
    cpu, npu = report(tmp_path / "before"), report(tmp_path / "after")
    # the original took its CPU path; the converted tests took the NPU path, in spawned workers too
    # (tinynet/generic.py names no device API: its workers have torch_npu by autoload)
    assert cpu["train"][0] == cpu["amp"][0] == cpu["accelerator"][0] == "cpu" and cpu["spawn"] == ["cpu", "cpu"]
    assert npu["train"][0] == npu["amp"][0] == npu["accelerator"][0] == "npu" and npu["spawn"] == ["npu", "npu"]
    assert (cpu["available"], npu["available"]) == (["False"], ["True"])
    assert (cpu["profiler"], npu["profiler"]) == (["1"], ["2"])  # CPU and NPU, read back as given
    for key in ("train", "amp"):  # the same losses, bit for bit
        assert npu[key][1:] == cpu[key][1:]
    assert npu["checkpoint"] == cpu["checkpoint"]

    # the test run's exit status is the command's
    (converted / "check_broken.py").write_text("def test_broken():\n    assert 1 == 2\n")
    failed = emulate(["-m", "pytest", "-q", "-p", "no:cacheprovider", "check_broken.py"], converted)
    assert failed.returncode == 1 and "1 failed" in failed.stdout
    nothing = emulate(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "check_model.py", "-k", "no_such_test"], converted
    )
    assert nothing.returncode == 5, nothing.stdout  # pytest's "no tests collected"


def test_pytest_xdist_workers_are_emulated(tmp_path):
    if importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed")
    converted = convert(shutil.copytree(SUITE, tmp_path / "suite_project"), tmp_path / "out")
    proc = emulate(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "check_model.py"],
        converted,
        SUITE_REPORT=str(tmp_path / "after"),
    )
    assert proc.returncode == 0 and "4 passed" in proc.stdout, proc.stdout + proc.stderr
    seen = report(tmp_path / "after")
    assert seen["train"][0] == seen["amp"][0] == "npu" and seen["available"] == ["True"]


# --------------------------------------------------------------------------- -m MODULE, as python -m

MODULE = """
import sys
print(__name__, sys.argv, sys.path[0])
raise SystemExit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
"""


def test_m_module_means_what_python_m_means(tmp_path):
    (tmp_path / "tool.py").write_text(MODULE)
    package = tmp_path / "kit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(MODULE)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    for module, args in (("tool", ["--strict", "-x", "7"]), ("kit", ["a"])):
        plain = run(["-m", module, *args], tmp_path)
        emulated = emulate(["-m", module, *args], tmp_path)
        assert emulated.returncode == plain.returncode == (7 if args[-1] == "7" else 0)
        assert emulated.stdout == plain.stdout  # __main__, argv[0] the module's file, the current folder first
        assert f"{NOTICE} -m {module}" in emulated.stderr
    joined = emulate(["-mtool", "3"], tmp_path)
    assert joined.returncode == 3
    for args, message in (
        (["-m", "no_such_module"], "no module named no_such_module"),
        (["-m", "lib.nothing"], "no module named lib.nothing"),
        (["-m", "lib"], "lib is a package and has no __main__ module to run"),
        (["-m"], "expected one argument"),
        (["--strict"], "no SCRIPT given"),
    ):
        proc = emulate(args, tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.splitlines() == [proc.stderr.splitlines()[0]] and message in proc.stderr, proc.stderr
        assert proc.stderr.startswith("transplant emulate: error:")


TORCHRUN = """
import os
import sys
import torch
import torch.distributed as dist

rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("hccl")
device = rank  # an index: the NPU, with torch_npu loaded by PyTorch itself
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(device), device_ids=[device])
total = torch.ones(2).to(device) * (rank + 1)
dist.all_reduce(total)
print(f"rank {rank} {total.tolist()}", flush=True)
dist.destroy_process_group()
# done: leave before finalization, where gloo's teardown can abort the rank (pytorch/pytorch#179291)
sys.stderr.flush()
os._exit(0)
"""


def torchrun(script: str, *args: str) -> list[str]:
    """The arguments of `python -m torch.distributed.run` running ``script`` ``args`` in two ranks."""
    return [
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "2",
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        f"127.0.0.1:{free_port()}",
        script,
        *args,
    ]


def test_torchrun_ranks_are_emulated(tmp_path):
    (tmp_path / "job.py").write_text(TORCHRUN)
    proc = emulate(torchrun("job.py"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the ranks share one stdout, so a line of one may land in the middle of the other's
    assert sorted(re.findall(r"rank \d \[[^\]]*\]", proc.stdout)) == ["rank 0 [3.0, 3.0]", "rank 1 [3.0, 3.0]"]
    for rank in (0, 1):
        assert f"process group hccl as gloo: rank {rank} of 2, NPU 0" in proc.stderr


ACCELERATE = """
import os
import sys
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model, optimizer = accelerator.prepare(torch.nn.Linear(2, 2), torch.optim.SGD(torch.nn.Linear(2, 2).parameters()))
total = torch.ones(2, device=accelerator.device) * (accelerator.process_index + 1)
total = accelerator.reduce(total, reduction="sum")
print(f"rank {accelerator.process_index} {accelerator.distributed_type} {accelerator.device.type} "
      f"{type(model).__name__} {total.tolist()}", flush=True)
# done: leave before finalization, where gloo's teardown of the live group can abort the rank
# (pytorch/pytorch#179291)
sys.stderr.flush()
os._exit(0)
"""


def test_accelerate_launch_ranks_are_emulated(tmp_path):
    if importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (.ci/run installs it)")
    (tmp_path / "job.py").write_text(ACCELERATE)
    proc = emulate(
        [
            "-m",
            "accelerate.commands.launch",
            "--num_processes",
            "2",
            "--multi_gpu",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            str(free_port()),
            "job.py",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    # accelerate sees torch_npu (autoloaded in each rank) and takes its NPU path, as on an NPU host
    assert sorted(re.findall(r"rank \d [^\n\[]*\[[^\]]*\]", proc.stdout)) == [
        f"rank {rank} DistributedType.MULTI_NPU npu DistributedDataParallel [3.0, 3.0]" for rank in (0, 1)
    ]
    for rank in (0, 1):
        assert f"process group hccl as gloo: rank {rank} of 2" in proc.stderr


# --------------------------------------------------------------------------- autoload, torch.accelerator, profiler

AUTOLOADED = """
import importlib.metadata
import sys
assert "torch_npu" in sys.modules  # loaded before this line, as PyTorch >= 2.5 loads it on an NPU host
import torch
device = 0
model = torch.nn.Linear(3, 1).to(device)
print(model(torch.ones(1, 3).to(device)).shape, torch.npu.is_available(), importlib.metadata.version("torch_npu"))
"""

NOT_AUTOLOADED = """
import sys
import torch
assert "torch_npu" not in sys.modules
for attempt in (lambda: torch.zeros(1, device="npu"), lambda: torch.nn.Linear(3, 1).to(0)):
    try:
        attempt()
    except RuntimeError as exc:
        print("refused:", str(exc).splitlines()[0])
import torch_npu
print(torch.nn.Linear(3, 1).to(0).weight.shape)
"""


def test_torch_npu_is_autoloaded_as_pytorch_does(tmp_path):
    (tmp_path / "index.py").write_text(AUTOLOADED)
    proc = emulate(["--strict", "index.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "torch.Size([1, 1]) True 0+emulated"
    (tmp_path / "manual.py").write_text(NOT_AUTOLOADED)
    proc = emulate(["manual.py"], tmp_path, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert proc.returncode == 0, proc.stderr
    refused, loaded = proc.stdout.splitlines()[:2], proc.stdout.splitlines()[2:]
    assert len(refused) == 2 and all(line.startswith("refused:") for line in refused), proc.stdout
    assert loaded == ["torch.Size([1, 3])"]
    proc = emulate(["index.py"], tmp_path, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert proc.returncode == 1 and "AssertionError" in proc.stderr


ACCELERATOR = """
import torch
import torch_npu

acc = torch.accelerator
assert acc.is_available() and acc.current_accelerator() == torch.device("npu")
assert acc.current_accelerator(check_available=True).type == "npu" and acc.device_count() == 8
acc.set_device_index(3)
assert acc.current_device_index() == 3 == torch_npu.npu.current_device()
with acc.device_index(1):
    assert acc.current_device_index() == 1
assert acc.current_device_index() == 3
acc.set_device_index("npu:2")
assert torch_npu.npu.current_device() == 2
acc.synchronize(); acc.synchronize(0); acc.synchronize(torch.device("npu:1"))
stream = torch_npu.npu.Stream()
acc.set_stream(stream)
assert acc.current_stream() is stream
try:
    acc.synchronize("cpu")
except ValueError as exc:
    assert "doesn't match the current accelerator" in str(exc)
else:
    raise AssertionError("cpu taken for the accelerator")
assert acc.memory_allocated() == acc.max_memory_reserved() == 0
assert acc.memory.memory_stats()["allocated_bytes.all.current"] == 0
acc.empty_cache(); acc.reset_peak_memory_stats(); acc.memory.reset_accumulated_memory_stats(0)
free, total = acc.get_memory_info()
assert 0 < free <= total
assert torch.get_device_module() is torch.npu is torch_npu.npu
device = acc.current_accelerator()
model = torch.nn.Linear(2, 2).to(device)
assert acc.memory_allocated() == acc.memory_allocated(2) == 2 * 512 and acc.memory_allocated(0) == 0  # on npu:2
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, pin_memory=True)
assert sum(batch.to(device).sum().item() for (batch,) in loader) == 28

Activity = torch_npu.profiler.ProfilerActivity
with torch_npu.profiler.profile(activities=[Activity.CPU, Activity.NPU]) as prof:
    model(torch.ones(1, 2, device=device))
assert prof.activities == {Activity.CPU, Activity.NPU} and Activity.NPU in prof.activities, prof.activities
assert any(event.key == "aten::addmm" for event in prof.key_averages())  # torch's profiler still recorded
with torch_npu.profiler.profile(activities=[Activity.CPU]) as prof:
    pass
assert prof.activities == {Activity.CPU}
print("accelerator ok")
"""


@pytest.mark.parametrize("options", [["--strict"], []], ids=["strict", "plain"])  # with and without the device mode
def test_torch_accelerator_answers_as_on_an_npu_host(tmp_path, options):
    (tmp_path / "acc.py").write_text(ACCELERATOR)
    proc = emulate([*options, "acc.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("accelerator ok")


def test_without_emulation_the_accelerator_is_this_machines(tmp_path):
    probe = "import torch; print(torch.accelerator.current_accelerator())"
    plain = run(["-c", probe], tmp_path)
    assert plain.returncode == 0 and "npu" not in plain.stdout  # nothing leaks outside emulated processes
    (tmp_path / "probe.py").write_text(
        textwrap.dedent(f"""
        import subprocess, sys
        print(subprocess.run([sys.executable, "-c", {probe!r}], capture_output=True, text=True).stdout.strip())
    """)
    )
    child = emulate(["probe.py"], tmp_path)  # a child process of an emulated program is emulated
    assert child.returncode == 0 and child.stdout.strip() == "npu", child.stderr


# --------------------------------------------------------------------------- torch_npu's own operators

OPERATORS = """
import torch_npu
from torch_npu import npu_fusion_attention, npu_rms_norm  # as libraries import them once torch_npu is installed
from torch_npu import npu_fusion_attention as again
assert again is npu_fusion_attention and hasattr(torch_npu, "npu_rotary_mul")
for name in ("npu_no_such_operator", "format_cast"):
    assert not hasattr(torch_npu, name), name
try:
    from torch_npu import npu_no_such_operator
except ImportError as exc:
    print("import refused:", exc)
for operator, args in ((npu_fusion_attention, (1, 2, 3)), (npu_rms_norm, ())):
    try:
        operator(*args)
    except Exception as exc:
        print(type(exc).__name__, str(exc).split(":")[0])
"""


def test_npu_operators_import_and_refuse_when_called(tmp_path):
    (tmp_path / "ops.py").write_text(OPERATORS)
    proc = emulate(["ops.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("import refused:") and "npu_no_such_operator" in lines[0]
    assert lines[1:] == [
        "EmulationError torch_npu.npu_fusion_attention is not emulated",
        "EmulationError torch_npu.npu_rms_norm is not emulated",
    ]


AUTOCAST_VIEWS = """
import torch
import torch_npu

x = torch.rand(2, 3, device="npu")
with torch.autocast("npu"):
    mean = torch.tensor([[0.5]], device=x.device, dtype=x.dtype)  # torch.tensor detaches in place
    y = (x - mean).detach_()
print(mean.dtype, mean.device, y.shape)
"""


def test_in_place_ops_under_npu_autocast_run_as_outside_it(tmp_path):
    # kornia's gaussian kernels make torch.tensor(..., device=sigma.device) under autocast: the
    # emulation's probe of autocast's casts ran aten.detach_ on the data of a view and failed
    (tmp_path / "views.py").write_text(AUTOCAST_VIEWS)
    proc = emulate(["-q", "views.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "torch.float32 npu:0 torch.Size([2, 3])"
