"""`transplant emulate`: converted programs run with torch_npu emulated on the CPU.

Every emulated run is a subprocess (emulation changes torch for the whole process; this one stays
clean). Training programs in tests/fixtures/emulate are CUDA programs written the common way, with
a device that falls back to the CPU when CUDA is unavailable, so the original really runs on this
CPU-only machine; the converted copy runs under `emulate --strict` and must print the same losses,
bit for bit, while taking the NPU branches (it prints its device type).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from test_names import emitted_names

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

PROGRAMS = FIXTURES / "emulate"
EXAMPLE = REPO / "examples" / "mnist_cuda"
LAUNCH_SCRIPT = "run_distributed_npu.sh"
NOTICE = "transplant emulate: running"


def environment(**extra: str) -> dict[str, str]:
    """This Python's environment, with this checkout importable and one thread for reproducible runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSPLANT_EMULATE")}
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra})
    return env


def run(args: list[str], cwd: Path, timeout: int = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=timeout,
    )


def emulate(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return run(["-m", "transplant.emulate", *args], cwd, **env)


def convert(project: Path, out: Path) -> Path:
    """`transplant -i project -o out` (repository mode); the result folder."""
    proc = run(["-m", "transplant", "-q", "-j", "1", "-i", project, "-o", out], out.parent)
    assert proc.returncode == 0, proc.stderr
    return out / f"{project.name}_msft"


def lines(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


# --------------------------------------------------------------------------- realistic programs

# program -> (arguments, how many "step" lines it prints)
TRAINING = {"cnn_amp": (["--steps", "6"], 6), "char_lm": (["--steps", "6"], 6), "gan": (["--steps", "8"], 8)}


@pytest.mark.parametrize("program", sorted(TRAINING))
def test_converted_program_matches_the_original_bitwise(program, tmp_path):
    args, steps = TRAINING[program]
    original = tmp_path / program
    shutil.copytree(PROGRAMS / program, original)
    converted = convert(original, tmp_path / "out")
    source = (converted / "train.py").read_text()
    assert "import torch_npu" in source and "torch.cuda" not in source

    before = run(["train.py", *args], original)
    assert before.returncode == 0, before.stderr
    # tensors of the CPU on purpose (the default, NPU tensors, is test_emulate_identity.py's)
    after = emulate(["--strict", "--no-device-identity", "train.py", *args], converted)
    assert after.returncode == 0, after.stderr
    assert NOTICE in after.stderr and "CUDA use" not in after.stderr
    # the original ran on the CPU; the converted program took its NPU path on the emulated NPU
    assert lines(before.stdout, "device") == ["device cpu"]
    assert lines(after.stdout, "device") == ["device npu"]
    # same losses, bit for bit (printed with repr), and whatever else the programs compute from them
    steps_before = lines(before.stdout, "step")
    assert len(steps_before) == steps
    assert lines(after.stdout, "step") == steps_before
    for prefix in ("accuracy", "sample", "restored"):
        assert lines(after.stdout, prefix) == lines(before.stdout, prefix)


def test_readme_example_trains_under_strict(tmp_path):
    example = tmp_path / "mnist_cuda"
    shutil.copytree(EXAMPLE, example)
    original = run(["train.py", "--epochs", "1"], example)
    cuda = run(["-c", "import torch; print(torch.cuda.is_available())"], tmp_path).stdout.strip() == "True"
    if not cuda:  # the example calls .cuda() unconditionally: without a GPU its original cannot run to compare with
        assert original.returncode != 0 and "CUDA" in original.stderr
    converted = convert(example, tmp_path / "out")
    proc = emulate(["--strict", "train.py", "--epochs", "2"], converted)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(" loss ")[0] for line in lines(proc.stdout, "epoch")] == ["epoch 0", "epoch 1"]
    # a checkpoint of NPU tensors loads where torch_npu is, onto the NPU (not without it: docs/emulate.md)
    (converted / "load.py").write_text(
        "import torch\ns = torch.load('model.pt')\nprint(sorted(s), s['conv.weight'].device)\n"
    )
    saved = emulate(["-q", "load.py"], converted)
    assert saved.returncode == 0 and "conv.weight" in saved.stdout and "npu:0" in saved.stdout, saved.stderr
    # utils.py keeps torch.cuda.nccl.all_reduce (no NPU counterpart, reported as TP201): strict names it
    (converted / "use_utils.py").write_text(
        "import torch\nimport utils\nbatch = utils.to_device([torch.ones(2)], 1)\nprint(batch[0].is_npu)\n"
        "utils.cleanup()\n"
    )
    proc = emulate(["--strict", "use_utils.py"], converted)
    assert proc.returncode == 1 and proc.stdout.strip() == "True"
    line = next(
        i for i, text in enumerate((converted / "utils.py").read_text().splitlines(), 1) if "nccl.all_reduce" in text
    )
    assert proc.stderr.splitlines()[-1] == (
        f"transplant emulate: error: utils.py:{line}: torch.cuda.nccl (CUDA use; --strict)"
    )


# --------------------------------------------------------------------------- the emulated stack

BEHAVIOUR = """
import threading
import torch
import torch_npu

assert torch.device("npu:1").type == "npu" and torch.device("npu:1").index == 1
for rank in (0, 3):
    assert torch.zeros(2, device=f"npu:{rank}").device == torch.device("cpu")
assert torch.randn(2, 2, device=torch.device("npu")).device.type == "cpu"
x = torch.ones(3).npu()
assert x.is_npu and x.to("npu").is_npu and x.to(torch.device("npu:0"), torch.float16).dtype == torch.float16
assert torch.arange(4, device="npu").new_zeros(2, device="npu").device.type == "cpu"
model = torch.nn.Linear(4, 2).npu()
# integer ordinals are NPUs once torch_npu is imported (PyTorch >= 2.1 gives them to PrivateUse1)
assert torch.zeros(2).to(0).device.type == "cpu" and torch.ones(2, device=1).device.type == "cpu"
assert torch.zeros(2).to(0, torch.float16).dtype == torch.float16 and model.to(0) is model
model.to("npu:0")
model.to(device=torch.device("npu"))
with torch.autocast("npu", dtype=torch.bfloat16):
    assert model(torch.randn(1, 4, device="npu")).dtype == torch.bfloat16
with torch.autocast(device_type="npu", dtype=torch.bfloat16):
    assert torch.is_autocast_enabled("npu")
with torch_npu.npu.amp.autocast(dtype=torch.bfloat16):
    assert model(torch.randn(1, 4)).dtype == torch.bfloat16
scaler = torch.amp.GradScaler("npu")
assert scaler.is_enabled() and isinstance(torch_npu.npu.amp.GradScaler(), torch.amp.GradScaler)
assert x.type("torch.npu.HalfTensor").dtype == torch.float16
box = []
thread = threading.Thread(target=lambda: box.append(torch.zeros(1, device="npu").device.type))
thread.start(); thread.join()
assert box == ["cpu"], box

npu = torch_npu.npu
assert npu.is_available() and npu.device_count() == 1 and torch.npu is npu
npu.set_device(5); assert npu.current_device() == 5
npu.set_device("npu:2"); assert npu.current_device() == 2
with npu.device(4):
    assert npu.current_device() == 4
assert npu.current_device() == 2
stream = npu.Stream()
with npu.stream(stream):
    assert npu.current_stream() is stream
start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
start.record(); torch.randn(50, 50) @ torch.randn(50, 50); end.record(); end.synchronize()
assert start.elapsed_time(end) >= 0 and stream.npu_stream == 0 and start.npu_event == 0
npu.synchronize()
assert npu.memory_allocated() == 0 and npu.max_memory_reserved() == 0 and npu.memory_stats() == {}
npu.empty_cache(); npu.reset_peak_memory_stats()
free, total = npu.mem_get_info(); assert 0 < free <= total
npu.manual_seed(11); a = torch.rand(3, device="npu")
torch.manual_seed(11); b = torch.rand(3)
assert torch.equal(a, b)
state = npu.get_rng_state(); c = torch.rand(2); npu.set_rng_state(state); assert torch.equal(c, torch.rand(2))
assert npu.get_autocast_dtype() == torch.get_autocast_dtype("cpu")

import io
buffer = io.BytesIO(); torch.save(model.state_dict(), buffer); buffer.seek(0)
assert torch.load(buffer, map_location="npu:0")["weight"].device.type == "cpu"

from torch_npu.optim import NpuFusedAdamW, NpuFusedSGD
assert isinstance(NpuFusedAdamW(model.parameters()), torch.optim.AdamW)
assert isinstance(NpuFusedSGD(model.parameters(), lr=0.1), torch.optim.SGD)
acts = [torch_npu.profiler.ProfilerActivity.CPU, torch_npu.profiler.ProfilerActivity.NPU]
with torch_npu.profiler.profile(activities=acts, schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1)) as prof:
    model(torch.randn(2, 4, device="npu")); prof.step()
with torch.autograd.profiler.profile(use_device="npu"):
    model(torch.randn(2, 4))
with npu.mstx.annotate("step"):
    pass

import torch.distributed as dist
dist.init_process_group("hccl", init_method="tcp://127.0.0.1:%(port)d", rank=0, world_size=1)
t = torch.ones(2, device="npu"); dist.all_reduce(t)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[npu.current_device()])
dist.destroy_process_group()

try:
    npu.NPUGraph()
except Exception as exc:
    assert type(exc).__name__ == "EmulationError" and "not emulated" in str(exc), exc
else:
    raise AssertionError("NPUGraph ran")
try:
    torch_npu.npu_format_cast
except AttributeError as exc:
    assert "not emulated" in str(exc)
from torch.utils.data import DataLoader, TensorDataset
generator = torch.Generator(device="npu")
generator.manual_seed(1)
assert torch.randn(2, generator=generator, device="npu").device.type == "cpu"
loader = DataLoader(TensorDataset(torch.arange(16.0)), batch_size=4, num_workers=2, pin_memory=True)
assert sum(batch.to("npu", non_blocking=True).sum().item() for (batch,) in loader) == 120
print("behaviour ok")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_emulated_stack_behaves_as_the_cpu(tmp_path):
    """With --no-device-identity, on purpose: tensors moved to the NPU are the CPU's tensors (one
    device stands for every NPU id); test_emulate_identity.py checks the default."""
    (tmp_path / "behaviour.py").write_text(BEHAVIOUR % {"port": free_port()})
    proc = emulate(["--strict", "--no-device-identity", "behaviour.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("behaviour ok")
    assert "process group hccl as gloo: rank 0 of 1, NPU 2" in proc.stderr


def test_npu_is_not_a_device_before_import_torch_npu(tmp_path):
    """Without PyTorch's autoload of device extensions (test_emulate_programs.py has it)."""
    (tmp_path / "early.py").write_text('import torch\ntorch.zeros(1, device="npu")\n')
    proc = emulate(["early.py"], tmp_path, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert proc.returncode == 1 and "npu" in proc.stderr.splitlines()[-1]  # as on a real NPU machine


def _route_only(name: str) -> bool:
    """Names only suggestions give: torch_npu's fused operators, its contrib kernels (the routes of
    the deprecated APIs, rules/modernize.json) and its graph-mode compiler."""
    return name.startswith(("torch_npu.npu_", "torch_npu.dynamo.", "torch_npu.contrib."))


def test_every_name_the_rules_emit_is_emulated_or_listed(tmp_path):
    rules_dir = REPO / "rules"
    # the names the rules write into code; a route a suggestion names for people (a fused NPU
    # operator, torch_npu's graph mode) is the user's choice and needs the real NPU
    names = sorted(
        {name for _, name in emitted_names(texts=False)}
        | {name for _, name in emitted_names() if not _route_only(name)}
    )
    methods = sorted(
        {
            entry["new_name"]
            for path in rules_dir.glob("*.json")
            if path.name != "schema.json"
            for entry in json.loads(path.read_text())["rules"].get("FuncNameModifyRule", [])
            if entry.get("on", "name") != "name"
        }
    )
    assert len(names) > 150 and {"npu", "is_npu", "npu_stream", "npu_event"} <= set(methods)
    (tmp_path / "names.json").write_text(json.dumps({"names": names, "methods": methods}))
    (tmp_path / "resolve.py").write_text(
        textwrap.dedent("""
        import importlib, json, sys
        import torch, torch_npu
        from transplant.emulate.coverage import NOT_EMULATED, NotEmulated
        data = json.load(open("names.json"))
        bad = []
        for name in data["names"]:
            parts = name.split(".")
            try:
                value = importlib.import_module(parts[0])
                for part in parts[1:]:
                    value = getattr(value, part)
            except AttributeError as exc:
                bad.append(f"{name}: missing ({exc})")
                continue
            stub = object.__getattribute__(value, "_name") if isinstance(value, NotEmulated) else None
            if stub is not None and stub not in NOT_EMULATED or stub is None and name in NOT_EMULATED:
                bad.append(f"{name}: {'listed as not emulated but provided' if stub is None else 'a stub not listed'}")
        owners = {"npu": (torch.Tensor, torch.nn.Module), "is_npu": (torch.Tensor,),
                  "npu_stream": (torch_npu.npu.Stream, torch_npu.npu.ExternalStream), "npu_event": (torch_npu.npu.Event,)}
        for method in data["methods"]:
            for owner in owners.get(method, (None,)):
                if owner is None or not hasattr(owner, method):
                    bad.append(f"{method}: missing on {owner}")
        print(json.dumps(bad))
    """)
    )
    proc = emulate(["resolve.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []


# --------------------------------------------------------------------------- --strict

STRICT = """
import torch
import torch.distributed as dist
import helper

def attempt(label, action):
    try:
        action()
    except Exception as exc:
        print(label, type(exc).__name__)

attempt("available", lambda: torch.cuda.is_available())
attempt("method", lambda: torch.ones(1).cuda())
attempt("module", lambda: torch.nn.Linear(1, 1).cuda())
attempt("string", lambda: torch.zeros(1, device="cuda:0"))
attempt("device", lambda: torch.device("cuda"))
attempt("to", lambda: torch.ones(1).to("cuda"))
attempt("is_cuda", lambda: torch.ones(1).is_cuda)
attempt("autocast", lambda: torch.autocast("cuda"))
attempt("scaler", lambda: torch.amp.GradScaler())
attempt("nccl", lambda: dist.init_process_group("nccl", init_method="tcp://127.0.0.1:1", rank=0, world_size=1))
helper.library_call()
torch.amp.GradScaler("cpu")  # torch asks torch.cuda itself here: not the project's use
print("finished")
"""


def test_strict_names_every_cuda_use_by_file_and_line(tmp_path):
    (tmp_path / "uses.py").write_text(STRICT)
    library = tmp_path / "venv" / "lib" / "site-packages"  # third-party code may use CUDA
    library.mkdir(parents=True)
    (library / "helper.py").write_text("import torch\n\ndef library_call():\n    return torch.cuda.is_available()\n")
    proc = emulate(["--strict", "uses.py"], tmp_path, PYTHONPATH=f"{REPO}{os.pathsep}{library}")
    assert proc.returncode == 1
    assert "finished" in proc.stdout  # the script caught the errors; the run fails all the same
    labels = ["available", "method", "module", "string", "device", "to", "is_cuda", "autocast", "scaler", "nccl"]
    assert [line.split()[0] for line in proc.stdout.splitlines()[:-1]] == labels
    assert all(line.endswith("EmulationError") for line in proc.stdout.splitlines()[:-1])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("transplant emulate: error:")]
    source = STRICT.splitlines()
    expected_lines = [i for i, text in enumerate(source, 1) if text.startswith("attempt(")]
    reported = [int(re.match(r"transplant emulate: error: uses\.py:(\d+):", e).group(1)) for e in errors]
    assert reported == expected_lines, errors
    assert "helper.py" not in proc.stderr


def test_without_strict_cuda_uses_behave_as_on_this_machine(tmp_path):
    (tmp_path / "probe.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    proc = emulate(["probe.py"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "False"


# --------------------------------------------------------------------------- the command itself


def test_cli_dispatch_and_bad_input(tmp_path):
    (tmp_path / "args.py").write_text("import sys\nprint(sys.argv[1:])\nraise SystemExit(3)\n")
    proc = run(["-m", "transplant", "emulate", "args.py", "--steps", "2", "-x"], tmp_path)
    assert proc.returncode == 3 and proc.stdout.strip() == "['--steps', '2', '-x']"
    assert NOTICE in proc.stderr and "your code, as you asked" in proc.stderr
    for args, message in (
        (["missing.py"], "missing.py: no such file"),
        ([], "no SCRIPT given"),
        (["--backing", "tpu", "args.py"], "invalid choice"),
        (["."], "not a file"),
    ):
        proc = emulate(args, tmp_path)
        assert proc.returncode == 2, args
        assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr, proc.stderr
        assert proc.stderr.startswith("transplant emulate: error:")


def test_cuda_backing_needs_a_gpu(tmp_path):
    (tmp_path / "probe.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    gpu = run(["probe.py"], tmp_path).stdout.strip() == "True"
    if gpu:
        pytest.skip("this machine has a CUDA GPU")
    proc = emulate(["--backing", "cuda", "probe.py"], tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == "transplant emulate: error: --backing cuda: this PyTorch sees no CUDA GPU"


def test_script_errors_show_their_traceback(tmp_path):
    (tmp_path / "fails.py").write_text("def f():\n    raise ValueError('boom')\nf()\n")
    proc = emulate(["fails.py"], tmp_path)
    assert proc.returncode == 1 and "ValueError: boom" in proc.stderr and 'fails.py", line 2' in proc.stderr
    assert "runpy" not in proc.stderr and "emulate/cli.py" not in proc.stderr  # the script's frames only


def test_a_real_torch_npu_is_never_shadowed(tmp_path):
    real = tmp_path / "site" / "torch_npu"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    (tmp_path / "which.py").write_text("import torch_npu\nprint(getattr(torch_npu, 'REAL', False))\n")
    path = f"{REPO}{os.pathsep}{real.parent}"
    proc = emulate(["which.py"], tmp_path, PYTHONPATH=path)
    assert proc.returncode == 2 and "a real torch_npu is installed" in proc.stderr and proc.stdout == ""
    proc = emulate(["--force-emulation", "which.py"], tmp_path, PYTHONPATH=path)
    assert proc.returncode == 0 and proc.stdout.strip() == "False"


def test_torch_npu_exists_only_in_emulated_processes(tmp_path):
    proc = run(["-c", "import importlib.util as u; print(u.find_spec('torch_npu'))"], tmp_path)
    assert proc.stdout.strip() == "None"
    # converting never loads the emulator or torch
    code = (
        "import sys; from transplant.cli import main; main(['-q', '-j', '1', '-i', sys.argv[1], '-o', sys.argv[2]]);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' or m.startswith('transplant.emulate')))"
    )
    proc = run(["-c", code, EXAMPLE, tmp_path / "out"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


# --------------------------------------------------------------------------- distributed

# fixture case -> (input to -i, entry relative to it, arguments, file rank 0 saves)
DISTRIBUTED = {
    "single": ("input/train.py", "", ["--epochs", "2"], "net.pt"),
    "trainer": ("input/proj", "train.py", [], "regressor.pt"),
    "multifile": ("input/proj", "train.py", [], "checkpoint_4.pt"),  # ("script" needs torchvision)
    "branches": ("input/proj", "main.py", ["--epochs", "2", "--wide"], "model.pt"),
    "dataparallel": ("input/proj", "train.py", ["--epochs", "2"], "model.pt"),  # fixed indices: .to(npu_index(0))
    "example": (None, "train.py", ["--epochs", "1"], "model.pt"),
}


@pytest.mark.parametrize("case", sorted(DISTRIBUTED))
def test_launch_script_runs_its_processes_under_the_emulator(case, tmp_path):
    """Assumption about the launch script: it starts each process as `python3 ENTRY ARGS` with python3
    from PATH, and, with TRANSPLANT_EMULATE=1, as `python3 -m transplant.emulate ENTRY ARGS`. A script
    that does not know TRANSPLANT_EMULATE yet gets the same through the python3 below."""
    root, _ = launch_under_the_emulator(case, tmp_path)
    # readable without torch_npu, given a map_location (needed for a checkpoint of NPU tensors, as on an NPU)
    saved = root / DISTRIBUTED[case][3]
    load = f"import torch; s = torch.load({str(saved)!r}, map_location='cpu'); print(sorted(s.get('model', s)))"
    state = run(["-c", load], tmp_path)
    assert state.returncode == 0 and "module." not in state.stdout and state.stdout.strip() != "[]"


def launch_under_the_emulator(case: str, tmp_path: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    """Convert the DISTRIBUTED ``case`` and run its launch script on NPUs 3,5 under `emulate --strict`
    (with the ``extra`` environment variables); check that both processes joined the group and left it. The converted folder
    and the processes' logs (by file name)."""
    given, entry, args, _ = DISTRIBUTED[case]
    source = EXAMPLE if given is None else FIXTURES / "distributed" / case / given
    main = source if not entry else source / entry
    proc = run(
        ["-m", "transplant", "-q", "-j", "1", "-i", source, "-o", tmp_path / "out", "distributed", "-m", main], tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    (root,) = (tmp_path / "out").glob("*_msft_multi")
    script = root / LAUNCH_SCRIPT
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    honours = "TRANSPLANT_EMULATE" in script.read_text()
    module = "" if honours else "-m transplant.emulate "
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" {module}"$@"\n')
    (bin_dir / "python3").chmod(0o755)
    env = environment(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        NPUS="3,5",
        MASTER_PORT=str(free_port()),
        TRANSPLANT_EMULATE="1",
        TRANSPLANT_EMULATE_STRICT="1",
        **extra,
    )
    proc = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env, timeout=300)
    logs = {p.name: p.read_text() for p in sorted((root / "logs").iterdir())}
    assert proc.returncode == 0, (proc.stdout, proc.stderr, logs)
    for rank, npu in ((0, 3), (1, 5)):
        log = logs[f"rank_{rank}.log"]
        assert NOTICE in log and "strict" in log and "CUDA use" not in log
        assert f"process group hccl as gloo: rank {rank} of 2, NPU {npu}" in log, log
        assert "Traceback" not in log and "Exception ignored" not in log, log  # leaving the group too
    return root, logs


SPAWN = """
import os
import sys
import torch
import torch_npu
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    torch_npu.npu.set_device(rank)
    dist.init_process_group("hccl", init_method="tcp://127.0.0.1:%(port)d", rank=rank, world_size=world)
    total = torch.ones(2, device=f"npu:{rank}") * (rank + 1)
    dist.all_reduce(total)
    print(f"rank {rank} {total.tolist()}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    # done: leave before finalization, where gloo's teardown can abort the process (pytorch/pytorch#179291)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
"""


def test_processes_the_script_spawns_are_emulated(tmp_path):
    (tmp_path / "spawn.py").write_text(SPAWN % {"port": free_port()})
    proc = emulate(["--strict", "spawn.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # (the two processes share one stdout: their lines may interleave)
    assert sorted(re.findall(r"rank \d \[[^]]*\]", proc.stdout)) == ["rank 0 [3.0, 3.0]", "rank 1 [3.0, 3.0]"]
    for rank in (0, 1):
        assert f"process group hccl as gloo: rank {rank} of 2, NPU {rank}" in proc.stderr
