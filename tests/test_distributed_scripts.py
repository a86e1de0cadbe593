"""Distributed mode on everyday single-machine scripts (issue 12): DataParallel gives way to DDP,
fixed device indices follow the process's NPU, scripts that are distributed already keep their own
set-up. Converted sources are checked here; tests/test_distributed.py trains the fixture projects."""

from __future__ import annotations

import csv
import textwrap

import pytest

from transplant.cli import main as cli_main
from transplant.distributed import convert_source


def convert(code: str, target: str = "model") -> str:
    out = convert_source(textwrap.dedent(code).encode(), target).decode()
    assert convert_source(out.encode(), target).decode() == out  # a second conversion changes nothing
    return out


# --------------------------------------------------------------------------- DataParallel


@pytest.mark.parametrize(
    "imports, wrap",
    [
        ("import torch", "torch.nn.DataParallel"),
        ("import torch.nn as nn", "nn.DataParallel"),
        ("from torch import nn", "nn.parallel.DataParallel"),
        ("from torch.nn import DataParallel as DP", "DP"),
        ("from torch.nn.parallel import DataParallel", "DataParallel"),
    ],
)
def test_dataparallel_assigned_is_removed_in_every_spelling(imports, wrap):
    out = convert(f"""\
        import torch
        {imports}
        model = torch.nn.Linear(2, 2).npu()
        model = {wrap}(model, device_ids=[0, 1])
        torch.save(model.module.state_dict(), "m.pt")
        """)
    assert "DataParallel(model" not in out.replace("DistributedDataParallel", "") and f" {wrap}(" not in out
    assert (
        "model = torch.nn.Linear(2, 2).npu()\ninit_distributed_npu()\nif torch.distributed.is_initialized():\n"
        "    model = torch.nn.parallel.DistributedDataParallel(model, "
    ) in out
    # .module of the DataParallel wrapper: the model itself, with or without DDP
    assert '    torch.save(npu_unwrap(model).state_dict(), "m.pt")' in out


def test_dataparallel_inline_keyword_and_in_a_block():
    out = convert("""\
        import torch
        from torch import nn

        def build():
            return nn.DataParallel(module=Net()).npu()

        def main():
            model = nn.DataParallel(Net() if big else Small()).npu()
            if torch_npu.npu.device_count() > 1:
                model = nn.DataParallel(model)
            head = build()
        """)
    assert "DataParallel" not in out.replace("DistributedDataParallel", "")
    assert "    return Net().npu()\n" in out
    assert "    model = (Net() if big else Small()).npu()\n" in out  # parentheses keep the meaning
    assert "    if torch_npu.npu.device_count() > 1:\n        pass\n" in out  # the block keeps a statement


def test_dataparallel_look_alikes_and_other_modes_keep_it(tmp_path):
    out = convert("""\
        import torch
        import mylib
        model = torch.nn.Linear(2, 2)
        model = mylib.DataParallel(model)
        """)
    assert "model = mylib.DataParallel(model)\n" in out
    # outside distributed mode DataParallel stays, reported as the NPU support list says
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text("import torch\nmodel = torch.nn.DataParallel(Net()).cuda()\n")
    assert (
        cli_main(
            ["-q", "-j", "1", "--pytorch-version", "2.1", "-i", str(tmp_path / "p"), "-o", str(tmp_path / "plain")]
        )
        == 0
    )
    assert "torch.nn.DataParallel(Net()).npu()" in (tmp_path / "plain" / "p_msft" / "train.py").read_text()
    assert (
        cli_main(
            [
                "-q",
                "-j",
                "1",
                "--pytorch-version",
                "2.1",
                "-i",
                str(tmp_path / "p"),
                "-o",
                str(tmp_path / "d"),
                "distributed",
                "-m",
                str(tmp_path / "p" / "train.py"),
            ]
        )
        == 0
    )
    result = tmp_path / "d" / "p_msft_multi"
    assert "\nmodel = Net().npu()\n" in (result / "train.py").read_text()
    with open(result / "change_list.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert any(r["Code"] == "TP304" and "takes the place of DataParallel" in r["Message"] for r in rows)
    # the engine's "not supported on NPU" finding for DataParallel went with it
    log = (result / "msFmkTranspltlog.txt").read_text()
    assert "DataParallel: not supported" not in log and "TP202" not in log


# --------------------------------------------------------------------------- fixed device indices


def test_fixed_indices_follow_the_process_npu():
    out = convert("""\
        import torch
        import torch_npu
        GPU = 1
        model = torch.nn.Linear(2, 2)
        a = torch.device("npu:1")
        b = torch.device('npu', 2)
        c = torch.device(type="npu", index=0)
        x = x.npu(0)
        y = y.to(0, non_blocking=True)
        z = torch.zeros(2, device=0)
        w = w.npu(GPU)
        def f(device="npu:0"):
            return "npu:3" if fast else "cpu"
        """)
    for expected in (
        'a = torch.device(f"npu:{npu_index(1)}")',
        "b = torch.device('npu', npu_index(2))",
        'c = torch.device(type="npu", index=npu_index(0))',
        "x = x.npu(npu_index(0))",
        "y = y.to(npu_index(0), non_blocking=True)",
        "z = torch.zeros(2, device=npu_index(0))",
        "w = w.npu(npu_index(GPU))",
        'def f(device=f"npu:{npu_index(0)}"):',
        'return f"npu:{npu_index(3)}" if fast else "cpu"',
    ):
        assert expected in out, expected
    assert "def npu_index(index):" in out


def test_computed_indices_and_comparisons_stay():
    src = """\
        import torch
        import torch_npu
        gpu = 0
        gpu = 1
        model = torch.nn.Linear(2, 2)
        def main(args, local_rank):
            x = x.npu(args.gpu)
            y = y.to(local_rank)
            z = z.npu(gpu)
            if str(x.device) == "npu:0":
                print("npu:0")
            torch_npu.npu.set_device(0)
        """
    out = convert(src)
    for kept in (
        "x = x.npu(args.gpu)",
        "y = y.to(local_rank)",
        'if str(x.device) == "npu:0":',
        'print("npu:0")',
        "        torch_npu.npu.set_device(0)",
    ):
        assert kept in out, kept
    # a global the file gives only fixed indices (0, then 1) is followed (distributed/indexflow.py):
    # each rank uses its own NPU; computed ones (an attribute of args, a parameter) are not
    assert "z = z.npu(npu_index(gpu))" in out
    assert out.count("npu_index(") == 2  # the helper's definition and z


# --------------------------------------------------------------------------- already distributed


@pytest.mark.parametrize(
    "line, reason",
    [
        ('torch.distributed.init_process_group("hccl")', "it calls init_process_group"),
        ("torch.multiprocessing.spawn(work, nprocs=2)", "it starts its processes with torch.multiprocessing"),
        ('rank = int(os.environ["LOCAL_RANK"])', "it reads LOCAL_RANK"),
        ('world = int(os.getenv("WORLD_SIZE", 1))', "it reads WORLD_SIZE"),
        ('parser.add_argument("--local_rank", type=int)', "it reads --local_rank"),
    ],
)
def test_already_distributed_scripts_get_no_second_setup(tmp_path, capsys, line, reason):
    project = tmp_path / "p"
    project.mkdir()
    (project / "train.py").write_text(f"import os\nimport torch\n{line}\nnet = torch.nn.Linear(2, 2).cuda()\n")
    assert (
        cli_main(
            ["-j", "1", "-i", str(project), "-o", str(tmp_path / "out"), "distributed", "-m", str(project / "train.py")]
        )
        == 0
    )  # no 'model' variable: none is needed
    out = capsys.readouterr().out
    assert f"train.py is already distributed ({reason}" in out and "only its CUDA-specific code converted" in out
    result = tmp_path / "out" / "p_msft_multi"
    text = (result / "train.py").read_text()
    assert "net = torch.nn.Linear(2, 2).npu()" in text
    assert "init_distributed_npu" not in text and "DistributedDataParallel" not in text
    # a script that starts its own processes gets no launch script
    assert (result / "run_distributed_npu.sh").exists() == ("spawn" not in line)


def test_index_helper_joins_helpers_of_an_earlier_conversion():
    """A result converted before npu_index existed gets it beside its helpers, once."""
    from transplant.distributed import HELPERS

    earlier = (
        "import atexit\nimport os\nimport torch\nimport torch_npu\n\n\n"
        + HELPERS
        + "\n\nmodel = torch.nn.Linear(2, 2)\nx = x.npu(0)\n"
    )
    out = convert(earlier)
    assert out.count("def npu_index(index):") == 1
    assert (
        "    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model\n\n\n"
        "def npu_index(index):\n" in out
    )
    assert "x = x.npu(npu_index(0))" in out
    compile(out, "train.py", "exec")
