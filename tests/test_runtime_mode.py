"""Runtime mode (``--mode runtime``, transplant/runtime_mode.py and entry_points.py): what torch_npu's
runtime migration patches is left as it is, the programs and launch scripts switch the migration on,
and the rest changes as in the full conversion, each change saying why the runtime path needs it."""

from __future__ import annotations

import csv
import importlib.util
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from goldens import check_tree

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "runtime"
REASON = "; runtime path: "
SWITCH = 'os.environ.setdefault("TORCH_TRANSFER_TO_NPU", "1")'


def transplant(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transplant", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )


def convert_tree(project: Path, out: Path, *mode: str) -> Path:
    proc = transplant(["-q", "-j", "1", "-i", project, "-o", out, *mode], out.parent)
    assert proc.returncode == 0, proc.stderr
    return out / f"{project.name}_msft"


def rows(tree: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((tree / "change_list.csv").read_text())))


def test_the_project_converted_in_runtime_mode_is_the_golden_tree(tmp_path):
    got = convert_tree(FIXTURES / "project", tmp_path / "out", "--mode", "runtime")
    check_tree(FIXTURES / "project_runtime", got, ignore={"unsupported_op.xlsx", "msFmkTranspltlog.txt"})
    # every change says why the runtime path needs it (TP109, the switch itself, says what it does)
    for row in rows(got):
        assert REASON in row["Message"] or row["Code"] == "TP109", row


def test_what_the_migration_patches_stays_and_what_it_misses_changes(tmp_path):
    got = convert_tree(FIXTURES / "project", tmp_path / "out", "--mode", "runtime")
    train = (got / "train.py").read_text()
    kept = [
        'device = "cuda"',  # the program's own string
        '"cuda" in device',  # a test of it
        'backend = "nccl"',
        "cuda.set_device(rank)",  # from torch import cuda
        "t.cuda.synchronize()",  # import torch as t
        'torch.zeros(2, device="cuda")',
        'torch.ones(2).to("cuda:0")',
        "Net().cuda()",
        "y.is_cuda",
        'torch.autocast(device_type="cuda")',  # torch.autocast is patched, torch.amp.autocast is not
        "scaler = GradScaler()",  # torch.cuda.amp's
        "from torch.cuda.amp import GradScaler",
    ]
    for text in kept:
        assert text in train, text
    changed = [
        'device_type = "npu" if "cuda" in device else "cpu"',
        'x.device.type == "npu"',
        'amp_autocast(device_type="npu", dtype=torch.bfloat16)',  # an aliased import, by keyword
        'torch.amp.autocast("npu")',  # by position
        'torch.amp.GradScaler("npu")',
        "torch_npu.npu.memory.empty_cache()",
    ]
    for text in changed:
        assert text in train, text
    assert train.index(SWITCH) < train.index("import torch\n")
    model = (got / "model.py").read_text()
    assert 'use_fused = device_type == "npu"' in model
    assert 'def pick(device="cuda"):' in model and 'return device == "cuda"' in model
    assert 'autocast_like(device_type="npu"), pick(device="cuda")' in model
    assert 'a = args.device == "cuda"' in model  # the program's own option
    assert 'b = xs[0].device == "npu"' in model and 'c = "npu" in str(x.device)' in model  # a tensor's
    assert SWITCH not in model  # a module the program imports
    assert SWITCH not in (got / "pkg" / "demo.py").read_text()  # a package's module with a demo
    assert "export TORCH_TRANSFER_TO_NPU=1" in (got / "run.sh").read_text()
    assert (got / "configs" / "train.yaml").read_text().startswith("device: npu")


def test_the_full_conversion_of_the_same_project_changes_what_runtime_mode_leaves(tmp_path):
    full = convert_tree(FIXTURES / "project", tmp_path / "out")
    train = (full / "train.py").read_text()
    assert 'device = "npu"' in train and 'torch.zeros(2, device="npu")' in train
    assert "TORCH_TRANSFER_TO_NPU" not in train
    assert all(REASON not in row["Message"] for row in rows(full))


def test_lightning_accelerator_strings_get_the_full_conversions_report_in_runtime_mode(tmp_path):
    # The migration never sees Lightning's accelerator="gpu"/"cuda", devices= or gpus= (Lightning picks
    # its CUDA accelerator from them). The full conversion keeps them and reports each (TP207: there is
    # no NPU accelerator upstream); runtime mode must say the same, in Python and in a YAML config.
    project = FIXTURES / "lightning"

    def findings(mode: str) -> list[str]:
        proc = transplant(["--mode", mode, "--check", "train.py", "configs/trainer.yaml"], project)
        assert proc.returncode == 1, proc.stderr
        return [line for line in proc.stdout.splitlines() if " TP207 " in line]

    full, runtime = findings("full"), findings("runtime")
    assert runtime == full
    assert [line.split(" TP207 ")[0] for line in runtime] == [
        "train.py:7:37:",  # accelerator="gpu"
        "train.py:8:27:",  # gpus=1
        "train.py:8:42:",  # accelerator="cuda"
        "train.py:9:35:",  # Fabric(accelerator="cuda")
        "configs/trainer.yaml:2:16:",  # accelerator: gpu (not accelerator_name, nor accelerator="cpu")
    ]
    got = convert_tree(project, tmp_path / "out", "--mode", "runtime")
    train = (got / "train.py").read_text()
    for kept in ('accelerator="gpu", devices=2', "gpus=1", 'torch.ones(2, device="cuda")'):
        assert kept in train, kept
    assert SWITCH in train
    assert (got / "configs" / "trainer.yaml").read_text() == (project / "configs" / "trainer.yaml").read_text()


@pytest.mark.parametrize("release, changed", [("26.0", True), ("26.1", False), ("26.2", False)])
def test_a_backend_string_with_cuda_changes_for_the_releases_whose_migration_leaves_it(tmp_path, release, changed):
    # 26.0's migration makes "cpu:gloo,cuda:nccl" "cpu:gloo,cuda:hccl" (no CUDA device on an NPU
    # machine); from 26.1 on it is "cpu:gloo,npu:hccl" (transfer_api.ADDED["backend string cuda"])
    source = 'import torch.distributed as dist\n\ndist.init_process_group("cpu:gloo,cuda:nccl")\ndist.init_process_group(backend="nccl")\n'
    (tmp_path / "pg.py").write_text(source)
    diff = transplant(["--mode", "runtime", "--torch-npu", release, "--diff", "pg.py"], tmp_path)
    assert ('+dist.init_process_group("cpu:gloo,npu:hccl")' in diff.stdout) is changed, diff.stdout + diff.stderr
    assert 'backend="hccl"' not in diff.stdout  # a plain "nccl": every release rewrites it


def test_runtime_mode_is_idempotent(tmp_path):
    once = convert_tree(FIXTURES / "project", tmp_path / "one", "--mode", "runtime")
    shutil.rmtree(tmp_path / "one" / "project_msft" / "configs")  # (keep the second input small)
    again = tmp_path / "project"
    shutil.copytree(once, again, ignore=shutil.ignore_patterns("*.csv", "*.xlsx", "*.txt"))
    proc = transplant(["--mode", "runtime", "--check", "train.py", "model.py", "run.sh"], again)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_single_file_check_and_diff(tmp_path):
    shutil.copy(FIXTURES / "project" / "train.py", tmp_path / "train.py")
    diff = transplant(["--mode", "runtime", "--diff", "train.py"], tmp_path)
    assert diff.returncode == 1
    assert f"+{SWITCH}" in diff.stdout and '-device = "cuda"' not in diff.stdout
    check = transplant(["--mode", "runtime", "--check", "train.py"], tmp_path)
    assert check.returncode == 1
    assert re.search(
        r"train\.py:\d+:\d+: TP104 .*runtime path: the runtime migration does not patch torch\.amp\.autocast",
        check.stdout,
    )
    assert "TP109" in check.stdout


def test_the_mode_comes_from_pyproject_and_bad_values_are_one_line_errors(tmp_path):
    shutil.copy(FIXTURES / "project" / "train.py", tmp_path / "train.py")
    (tmp_path / "pyproject.toml").write_text('[tool.transplant]\nmode = "runtime"\n')
    diff = transplant(["--diff", "train.py"], tmp_path)
    assert SWITCH in diff.stdout
    full = transplant(["--mode", "full", "--diff", "train.py"], tmp_path)  # the flag wins
    assert SWITCH not in full.stdout and 'device = "npu"' in full.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.transplant]\nmode = "zero"\n')
    bad = transplant(["--diff", "train.py"], tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "[tool.transplant] mode must be one of full, runtime, not 'zero'" in bad.stderr
    (tmp_path / "pyproject.toml").unlink()
    old = transplant(["--mode", "runtime", "--torch-npu", "7.3", "--diff", "train.py"], tmp_path)
    assert old.returncode == 2 and "Traceback" not in old.stderr
    assert "--mode runtime needs torch_npu 26.0 or later" in old.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "name, source, switched",
    [
        ("guarded.py", "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(1))\n", True),
        ("script.py", "import torch\n\nfor i in range(2):\n    print(torch.ones(i))\n", True),
        ("under_if.py", "import torch\n\nif True:\n    with torch.no_grad():\n        print(1)\n", True),
        ("shebang.py", "#!/usr/bin/env python\nimport torch\nprint(torch.ones(1))\n", True),
        ("library.py", "import torch\n\n\ndef f():\n    return torch.ones(1)\n", False),
        ("stdlib_main.py", "import sys\n\nif __name__ == '__main__':\n    print(sys.argv)\n", False),
        ("loop_no_torch.py", "import sys\n\nfor a in sys.argv:\n    print(a)\n", False),
        # a program of other libraries that never names CUDA: the migration changes nothing it runs
        ("numpy_main.py", "import numpy as np\n\nif __name__ == '__main__':\n    print(np.ones(1))\n", False),
        # ... and one that hands "cuda" to a library, which passes it on to torch
        (
            "hf_main.py",
            "from transformers import pipeline\n\nif __name__ == '__main__':\n    pipeline('x', device='cuda')\n",
            True,
        ),
        ("from_torch.py", "from torch import nn\n\nif __name__ == '__main__':\n    print(nn.Linear(1, 1))\n", True),
    ],
)
def test_which_python_files_are_programs(tmp_path, name, source, switched):
    (tmp_path / name).write_text(source)
    diff = transplant(["--mode", "runtime", "--diff", name], tmp_path)
    assert (SWITCH in diff.stdout) is switched, diff.stdout + diff.stderr


def test_a_program_gets_the_switch_when_the_project_modules_it_imports_reach_torch(tmp_path):
    # main.py names neither torch nor CUDA; the module it imports (and the one that imports) does
    (tmp_path / "main.py").write_text("import helpers\n\nif __name__ == '__main__':\n    helpers.run()\n")
    (tmp_path / "helpers.py").write_text("from models import build\n\n\ndef run():\n    return build()\n")
    (tmp_path / "models.py").write_text("import torch\n\n\ndef build():\n    return torch.nn.Linear(1, 1)\n")
    # look-alike: the same program over project modules of plain Python (a data-preparation script)
    (tmp_path / "prepare.py").write_text(
        "import numpy\nimport text_io\n\nif __name__ == '__main__':\n    text_io.dump()\n"
    )
    (tmp_path / "text_io.py").write_text("import json\n\n\ndef dump():\n    return json.dumps([1])\n")
    out = convert_tree(tmp_path, tmp_path.parent / "out", "--mode", "runtime")
    assert SWITCH in (out / "main.py").read_text()
    assert (out / "prepare.py").read_text() == (tmp_path / "prepare.py").read_text()
    assert SWITCH not in (out / "helpers.py").read_text() and SWITCH not in (out / "models.py").read_text()
    # from standard input the project is not read: an import of a module of its own counts
    stdin = transplant(
        ["--mode", "runtime", "-"], tmp_path, stdin="from . import helpers\n\nif __name__ == '__main__':\n    pass\n"
    )
    assert SWITCH in stdin.stdout, stdin.stderr


def test_where_the_switch_goes(tmp_path):
    source = '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nimport torch\n\nif __name__ == "__main__":\n    pass\n'
    (tmp_path / "prog.py").write_text(source)
    proc = transplant(["--mode", "runtime", "--in-place", "-q", "prog.py"], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    lines = (tmp_path / "prog.py").read_text().splitlines()
    # after the docstring and the __future__ import, and after the program's own "import os"
    assert lines[:5] == ['"""Doc."""', "from __future__ import annotations", "", "import os", lines[4]]
    assert lines[4].startswith(SWITCH) and lines[5] == "import torch"
    assert lines.count("import os") == 1


def test_launch_scripts_export_the_variable(tmp_path):
    (tmp_path / "run.sh").write_text("#!/bin/bash\n# comment\nset -e\ntorchrun --nproc_per_node 2 train.py\n")
    (tmp_path / "clean.sh").write_text("#!/bin/bash\nrm -rf out\n")
    proc = transplant(["--mode", "runtime", "--in-place", "-q", "run.sh", "clean.sh"], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert (tmp_path / "run.sh").read_text().splitlines()[:3] == [
        "#!/bin/bash",
        "# comment",
        "export TORCH_TRANSFER_TO_NPU=1",
    ]
    assert (tmp_path / "clean.sh").read_text() == "#!/bin/bash\nrm -rf out\n"


# --------------------------------------------------------------------------- a run under the migration

PROGRAM = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8).to(device)
    y = torch.randn(16, 4).to(device)
    for step in range(3):
        with torch.amp.autocast(device_type=device_type, dtype=torch.bfloat16):
            out = model(x)
        loss = ((out.float() - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f} {out.dtype}")


if __name__ == "__main__":
    main()
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_a_program_in_runtime_mode_runs_under_the_migration_as_the_original_on_the_cpu(tmp_path):
    from test_emulate import emulate, run

    (tmp_path / "prog.py").write_text(PROGRAM)
    original = run(["prog.py"], tmp_path)
    assert original.returncode == 0, original.stderr
    steps = [line for line in original.stdout.splitlines() if line.startswith("step")]
    assert len(steps) == 3 and all(line.endswith("torch.bfloat16") for line in steps)
    # the zero-edit path: autocast gets "cuda", which casts nothing on an NPU
    zero = emulate(["--transfer-to-npu", "-q", "prog.py"], tmp_path)
    assert zero.returncode == 0, zero.stderr
    assert all(line.endswith("torch.float32") for line in zero.stdout.splitlines() if line.startswith("step"))
    converted = transplant(["--mode", "runtime", "--in-place", "-q", "prog.py"], tmp_path)
    assert converted.returncode in (0, 1), converted.stderr
    text = (tmp_path / "prog.py").read_text()
    assert 'device = "cuda" if' in text and 'device_type = "npu" if "cuda" in device' in text and SWITCH in text
    mode = emulate(["--transfer-to-npu", "-q", "prog.py"], tmp_path)
    assert mode.returncode == 0, mode.stderr
    assert [line for line in mode.stdout.splitlines() if line.startswith("step")] == steps
    # without the flag the program's own switch turns the migration on, at its first import of torch
    switched = emulate(["-q", "prog.py"], tmp_path)
    assert switched.returncode == 0, switched.stderr
    assert "runtime migration (transfer_to_npu) is on" in switched.stderr
    assert [line for line in switched.stdout.splitlines() if line.startswith("step")] == steps
    # a launch that says "0" wins over the program's setdefault: no migration, and "cuda" fails
    off = emulate(["-q", "prog.py"], tmp_path, TORCH_TRANSFER_TO_NPU="0")
    assert "runtime migration (transfer_to_npu) is on" not in off.stderr


DEVICE_TESTS = """
import torch


class Trainer:
    def __init__(self, args):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.args = args

    def run(self):
        x = torch.ones(2).to(self.device)
        print("made", self.device.type == "cuda", self.args.device.type == "cuda")
        print("tensor", x.device.type == "cuda")


class Args:
    device = torch.device("cuda")


if __name__ == "__main__":
    Trainer(Args()).run()
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_device_tests_of_a_device_the_program_made_decide_as_on_the_zero_edit_path(tmp_path):
    from test_emulate import emulate

    (tmp_path / "prog.py").write_text(DEVICE_TESTS)
    zero = emulate(["--transfer-to-npu", "-q", "prog.py"], tmp_path)
    assert zero.returncode == 0, zero.stderr
    # the migration leaves a torch.device the program made CUDA's; the tensor it moved is on the NPU
    assert zero.stdout.splitlines() == ["made True True", "tensor False"]
    converted = transplant(["--mode", "runtime", "--in-place", "-q", "prog.py"], tmp_path)
    assert converted.returncode in (0, 1), converted.stderr
    text = (tmp_path / "prog.py").read_text()
    assert 'self.device.type == "cuda", self.args.device.type == "cuda"' in text
    assert 'x.device.type == "npu"' in text
    mode = emulate(["--transfer-to-npu", "-q", "prog.py"], tmp_path)
    assert mode.returncode == 0, mode.stderr
    assert mode.stdout.splitlines() == ["made True True", "tensor True"]


def test_distributed_and_accuracy_modes_refuse_runtime_mode(tmp_path):
    shutil.copy(FIXTURES / "project" / "train.py", tmp_path / "train.py")
    for mode in ("distributed", "accuracy"):
        proc = transplant(
            ["-i", tmp_path, "-o", tmp_path / "out", "--mode", "runtime", mode, "-m", "train.py"], tmp_path
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.strip().endswith(
            f"{mode} mode converts for the full conversion: --mode runtime (or [tool.transplant] mode) cannot be combined with it"
        )
        assert not (tmp_path / "out").exists()
