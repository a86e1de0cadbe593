"""Repository mode end to end: the example project, notebooks, shell scripts and the reports."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import openpyxl
import pytest

from conftest import FIXTURES, REPO, cached_ruleset
from goldens import check_bytes, check_tree, updating
from transplant import cli
from transplant.filetypes import convert_file

EXAMPLE = REPO / "examples" / "mnist_cuda"
EXPECTED = FIXTURES / "projects" / "mnist_cuda_msft"
REPORTS = {"change_list.csv", "unsupported_op.xlsx", "msFmkTranspltlog.txt"}
CSV_START = "File,Start Line,End Line,Operation Type,Message"


def convert_project(src: Path, out: Path, *extra: str) -> Path:
    code = cli.main(["-i", str(src), "-o", str(out), "-j", "1", "-q", *extra])
    assert code == 0
    result = out / f"{src.name}_msft"
    assert result.is_dir()
    return result


def tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def check_change_list(golden: Path, result: Path) -> None:
    """The change list is the golden one but for the rules' indices (or becomes it, with the switch on)."""
    if updating() and without_rule_index(read_change_list(result)[1]) != without_rule_index(
        read_change_list(golden)[1]
    ):
        check_bytes(golden / "change_list.csv", (result / "change_list.csv").read_bytes())
    assert without_rule_index(read_change_list(result)[1]) == without_rule_index(read_change_list(golden)[1])


def read_change_list(result: Path) -> tuple[str, list[dict[str, str]]]:
    text = (result / "change_list.csv").read_text(encoding="utf-8")
    return text.splitlines()[0], list(csv.DictReader(io.StringIO(text)))


def without_rule_index(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The Rule column names file, kind and index; the index moves when a rule file is regenerated."""
    return [{**row, "Rule": re.sub(r"\[\d+\]$", "", row["Rule"])} for row in rows]


@pytest.fixture(scope="module")
def example_result(tmp_path_factory) -> Path:
    return convert_project(EXAMPLE, tmp_path_factory.mktemp("example"))


def test_example_tree_matches_expected_byte_for_byte(example_result: Path):
    check_tree(EXPECTED, example_result, ignore=REPORTS)
    # files without anything to convert are copied as they are, modes included
    assert (example_result / "README.md").read_bytes() == (EXAMPLE / "README.md").read_bytes()
    assert os.stat(example_result / "scripts" / "run.sh").st_mode == os.stat(EXAMPLE / "scripts" / "run.sh").st_mode


def test_example_change_list(example_result: Path):
    header, rows = read_change_list(example_result)
    assert header.startswith(CSV_START)
    assert header == CSV_START + ",Rule,Code"
    check_change_list(EXPECTED, example_result)
    by_file = {}
    for row in rows:
        by_file.setdefault(row["File"], []).append(row)
    assert sorted(by_file) == ["scripts/run.sh", "train.py", "utils.py"]
    assert [(r["Start Line"], r["Code"]) for r in by_file["scripts/run.sh"]] == [("2", "TP105")]
    # (its one device string is the default of --device: a TP108 row, a default that changes the NPU path)
    assert {"TP101", "TP102", "TP106", "TP108"} <= {r["Code"] for r in by_file["train.py"]}
    assert all(int(r["Start Line"]) <= int(r["End Line"]) for r in rows)


def test_example_unsupported_workbook(example_result: Path):
    wb = openpyxl.load_workbook(example_result / "unsupported_op.xlsx")
    assert wb.sheetnames == ["Unsupported", "NPU paths", "API counts", "Custom operators", "Libraries", "Summary"]
    headers = {
        "Unsupported": (
            "File",
            "Line",
            "Converted line",
            "Column",
            "API",
            "Level",
            "Message",
            "Suggestion",
            "Count",
            "Lines",
        ),
        "Custom operators": ("File", "Operator", "Registration line", "Calls found"),
        "Libraries": ("Library", "Uses", "Where", "NPU route"),
        "API counts": ("API", "Level", "Occurrences", "Files"),
        "Summary": (
            "File",
            "Converted references",
            "Unsupported references",
            "Conversion rate",
            "Errors",
            "Warnings",
            "Notes",
            "Not parsed",
        ),
    }
    for name, header in headers.items():
        ws = wb[name]
        assert tuple(c.value for c in ws[1]) == header
        assert ws.freeze_panes == "A2"
        assert ws.auto_filter.ref == f"A1:{chr(ord('A') + len(header) - 1)}{ws.max_row}"
        assert ws[1][0].font.bold

    rows = list(wb["Unsupported"].iter_rows(min_row=2, values_only=True))
    nccl = [r for r in rows if r[4] == "torch.cuda.nccl.all_reduce"]
    # line 19 of utils.py is line 20 of the converted file (import torch_npu was added above it)
    assert nccl == [
        (
            "utils.py",
            19,
            20,
            5,
            "torch.cuda.nccl.all_reduce",
            "error",
            nccl[0][6],
            "use torch.distributed collectives (backend='hccl')",
            1,
            None,
        )
    ]
    assert "no torch_npu counterpart" in nccl[0][6]
    assert all(r[5] in ("error", "warning", "note") for r in rows)
    # errors first, then warnings, then notes
    assert [r[5] for r in rows] == sorted((r[5] for r in rows), key=["error", "warning", "note"].index)
    # an everyday operator the reference tool listed for PyTorch 2.8 (a note there) is not reported
    # with the default PyTorch 2.12: torch_npu's own 2.12 support list marks it ✔ on every product
    assert [r for r in rows if r[4] == "torch.nn.MaxPool2d"] == []
    assert [r[4] for r in rows if r[5] in ("error", "warning")] == ["torch.cuda.nccl.all_reduce"]

    counts = {(r[0], r[1]): (r[2], r[3]) for r in wb["API counts"].iter_rows(min_row=2, values_only=True)}
    assert counts[("torch.cuda.nccl.all_reduce", "error")] == (1, 1)
    assert sum(n for n, _ in counts.values()) == len(rows)

    summary = {r[0]: r[1:] for r in wb["Summary"].iter_rows(min_row=2, values_only=True)}
    _, changes = read_change_list(example_result)
    assert summary["train.py"][:2] == (sum(1 for r in changes if r["File"] == "train.py"), 0)
    # it needed no change and has no finding with the default stack (PyTorch 2.12): no row
    assert "model.py" not in summary
    total = summary["TOTAL"]
    assert total[0] == len(changes)
    assert total[1] == sum(1 for r in rows if r[5] in ("error", "warning"))
    assert total[2] == pytest.approx(total[0] / (total[0] + total[1]))
    # the Summary counts what the Unsupported sheet shows, per level (notes of the files it lists)
    assert total[3:6] == tuple(sum(1 for r in rows if r[5] == level) for level in ("error", "warning", "note"))
    assert list(summary)[-1] == "TOTAL"


def test_a_file_with_notes_alone_has_a_summary_row_without_a_rate(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "model.py").write_text("import torch\ntry:\n    pass\nexcept torch.cuda.CudaError:\n    pass\n")
    (src / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    result = convert_project(src, tmp_path / "out")
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    summary = {r[0]: r[1:] for r in wb["Summary"].iter_rows(min_row=2, values_only=True)}
    # no change, one note: listed with the note, and no conversion rate at all, not 0%
    assert summary["model.py"] == (0, 0, None, 0, 0, 1, None)
    assert summary["train.py"][:3] == (2, 0, 1)  # the import of torch_npu and .npu()


def test_example_log_names_the_findings(example_result: Path):
    log = (example_result / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "utils.py:19:5: TP201 torch.cuda.nccl.all_reduce" in log


# ---- notebooks


def notebook(*cells: tuple[str, list[str]], indent: int = 1) -> bytes:
    nb = {
        "cells": [
            {
                "cell_type": kind,
                "metadata": {},
                "source": source,
                **({"execution_count": None, "outputs": []} if kind == "code" else {}),
            }
            for kind, source in cells
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return (json.dumps(nb, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


def assert_valid_nbformat4(data: bytes) -> dict:
    nb = json.loads(data.decode("utf-8"))
    assert nb["nbformat"] == 4 and isinstance(nb["nbformat_minor"], int)
    assert isinstance(nb["metadata"], dict)
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("code", "markdown", "raw")
        assert isinstance(cell["metadata"], dict)
        source = cell["source"]
        assert isinstance(source, str) or all(isinstance(line, str) for line in source)
        if cell["cell_type"] == "code":
            assert isinstance(cell["outputs"], list) and "execution_count" in cell
    return nb


def test_notebook_is_converted_as_one_program_and_stays_nbformat4(tmp_path):
    project = tmp_path / "nbproj"
    project.mkdir()
    source = notebook(
        ("markdown", ["# Training on cuda\n", "Call `x.cuda()` to move x. Überall.\n"]),
        ("code", ["%matplotlib inline\n", "import torch\n", "!nvidia-smi\n", "x = torch.zeros(1).cuda()"]),
        ("code", ["torch.cuda.synchronize()\n", "x?\n"]),
        ("code", ["%%bash\n", "export CUDA_VISIBLE_DEVICES=0\n", "echo $MY_CUDA_VISIBLE_DEVICES\n"]),
        ("code", ["%env CUDA_VISIBLE_DEVICES=1\n", "from torch import cuda\n", "cuda.empty_cache()\n"]),
        ("code", ["def broken(:\n", "    torch.cuda.synchronize()\n"]),
    )
    (project / "train.ipynb").write_bytes(source)
    result = convert_project(project, tmp_path / "out")
    out = (result / "train.ipynb").read_bytes()
    nb = assert_valid_nbformat4(out)
    cells = [cell["source"] for cell in nb["cells"]]
    assert cells[0] == ["# Training on cuda\n", "Call `x.cuda()` to move x. Überall.\n"]
    assert cells[1] == [
        "%matplotlib inline\n",
        "import torch\n",
        "import torch_npu\n",
        "!npu-smi info\n",
        "x = torch.zeros(1).npu()",
    ]
    assert cells[2] == ["torch_npu.npu.synchronize()\n", "x?\n"]  # torch was imported in cell 2
    assert cells[3] == ["%%bash\n", "export ASCEND_RT_VISIBLE_DEVICES=0\n", "echo $MY_CUDA_VISIBLE_DEVICES\n"]
    assert cells[4] == ["%env ASCEND_RT_VISIBLE_DEVICES=1\n", "torch_npu.npu.empty_cache()\n"]
    assert cells[5] == ["def broken(:\n", "    torch.cuda.synchronize()\n"]  # does not parse: kept
    # the layout of the file is Jupyter's own: only changed lines differ
    changed = [line for line in out.decode().splitlines() if line not in source.decode().splitlines()]
    assert len(changed) == 7
    assert "Überall" in out.decode("utf-8")

    _, rows = read_change_list(result)
    assert {r["File"] for r in rows} == {"train.ipynb"}
    messages = [r["Message"] for r in rows]
    assert any(m.startswith("cell 3: torch.cuda.synchronize -> torch_npu.npu.synchronize") for m in messages)
    assert any(m.startswith("cell 4: CUDA_VISIBLE_DEVICES") for m in messages)
    assert ("1", "TP101") in {(r["Start Line"], r["Code"]) for r in rows if r["Message"].startswith("cell 3:")}


def test_notebook_shell_lines_and_cells_get_the_shell_command_rules(tmp_path):
    project = tmp_path / "nbcmd"
    project.mkdir()
    source = notebook(
        (
            "code",
            [
                "import torch\n",
                "!nvidia-smi\n",
                "gpu_info = !nvidia-smi\n",
                "!nvidia-smi -L\n",
                "print('run nvidia-smi to see the GPUs')\n",
                "x = torch.zeros(1).cuda()\n",
            ],
        ),
        ("code", ["%%bash\n", "nvidia-smi\n", "nvcc --version\n", "echo nvidia-smi  # not run\n"]),
        ("markdown", ["Run `!nvidia-smi` first.\n"]),
        ("code", ["%%capture\n", "!!nvidia-smi --query-gpu=name --format=csv\n"]),
        ("code", ["%sx nvidia-smi\n", "!my-nvidia-smi\n"]),
    )
    (project / "gpu.ipynb").write_bytes(source)
    result = convert_project(project, tmp_path / "out")
    nb = assert_valid_nbformat4((result / "gpu.ipynb").read_bytes())
    cells = [cell["source"] for cell in nb["cells"]]
    assert cells[0] == [
        "import torch\n",
        "import torch_npu\n",
        "!npu-smi info\n",
        "gpu_info = !npu-smi info\n",
        "!nvidia-smi -L\n",
        "print('run nvidia-smi to see the GPUs')\n",
        "x = torch.zeros(1).npu()\n",
    ]
    assert cells[1] == ["%%bash\n", "npu-smi info\n", "nvcc --version\n", "echo nvidia-smi  # not run\n"]
    assert cells[2] == ["Run `!nvidia-smi` first.\n"]  # markdown is prose
    assert cells[3] == ["%%capture\n", "!!nvidia-smi --query-gpu=name --format=csv\n"]
    assert cells[4] == ["%sx npu-smi info\n", "!my-nvidia-smi\n"]
    _, rows = read_change_list(result)
    # lines and columns are those of the cell as it was (the import added above does not move them)
    got = sorted((r["Message"].split(":", 1)[0], r["Start Line"]) for r in rows if r["Code"] == "TP107")
    assert got == [("cell 1", "2"), ("cell 1", "3"), ("cell 2", "2"), ("cell 5", "1")]
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    found = sorted(
        (row[1], row[4])
        for row in wb["Unsupported"].iter_rows(min_row=2, values_only=True)
        if row[0] == "gpu.ipynb" and row[4] in ("nvidia-smi", "nvcc")
    )
    assert found == [(2, "nvidia-smi"), (3, "nvcc"), (4, "nvidia-smi")]  # cells 4, 2 and 1
    again = convert_file("gpu.ipynb", (result / "gpu.ipynb").read_bytes(), cached_ruleset())
    assert again.new is None and again.changes == []


def test_shell_commands_run_from_python_are_replaced_or_reported(tmp_path):
    project = tmp_path / "gpuinfo"
    project.mkdir()
    (project / "status.py").write_text(
        "import subprocess as sp\nfrom os import system\n\n"
        'system("nvidia-smi")\n'
        'used = sp.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])\n'
        'sp.run(["gpustat"])\n'
        'print("nvidia-smi shows the GPUs")\n',
        encoding="utf-8",
    )
    user = FIXTURES / "rules" / "commands_user.json"
    result = convert_project(project, tmp_path / "out", "-r", str(user))
    assert (result / "status.py").read_text(encoding="utf-8") == (
        "import subprocess as sp\nfrom os import system\n\n"
        'system("npu-smi info")\n'
        'used = sp.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])\n'
        'sp.run(["npu-smi", "info"])\n'
        'print("nvidia-smi shows the GPUs")\n'
    )  # no torch_npu import: a command needs none
    _, rows = read_change_list(result)
    assert [(r["File"], r["Start Line"], r["Operation Type"], r["Message"].split(" (")[0]) for r in rows] == [
        ("status.py", "4", "shell command", "nvidia-smi -> npu-smi info"),
        ("status.py", "6", "shell command", "gpustat -> npu-smi info"),
    ]
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    found = [(row[0], row[1], row[4], row[5]) for row in wb["Unsupported"].iter_rows(min_row=2, values_only=True)]
    assert found == [("status.py", 5, "nvidia-smi", "warning")]
    again = convert_file("status.py", (result / "status.py").read_bytes(), cached_ruleset((str(user),)))
    assert again.new is None and again.changes == []


def test_notebook_calls_of_the_projects_custom_operators_reach_the_workbook(tmp_path):
    project = tmp_path / "nbops"
    (project / "csrc").mkdir(parents=True)
    (project / "csrc" / "ops.cu").write_text('PYBIND11_MODULE(my_ext, m) { m.def("go", &go); }\n', encoding="utf-8")
    (project / "demo.ipynb").write_bytes(
        notebook(
            ("markdown", ["`my_ext.go` is our kernel\n"]),
            ("code", ["import my_ext\n"]),
            ("code", ["%time y = 1\n", "y = my_ext.go(x)\n"]),
        )
    )
    result = convert_project(project, tmp_path / "out")
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    rows = [row for row in wb["Unsupported"].iter_rows(min_row=2, values_only=True) if row[0] == "demo.ipynb"]
    assert [(row[1], row[3], row[4], row[5]) for row in rows] == [
        (1, 1, "my_ext", "error"),
        (2, 5, "my_ext.go", "error"),
    ]
    assert str(rows[0][6]).startswith("cell 2: my_ext: imports the project's compiled CUDA extension")
    assert any(str(cell).startswith("cell 3: my_ext.go: custom CUDA operator") for cell in rows[1])
    assert (result / "demo.ipynb").read_bytes() == (project / "demo.ipynb").read_bytes()  # reported, not changed
    ops = [row for row in wb["Custom operators"].iter_rows(min_row=2, values_only=True)]
    assert ops == [("csrc/ops.cu", "my_ext.go", 1, "demo.ipynb cell 3:2")]


@pytest.mark.parametrize("indent,eol", [(1, b"\n"), (2, b"\n"), (1, b"\r\n")])
def test_notebook_layout_is_kept(tmp_path, indent, eol):
    project = tmp_path / "nb2"
    project.mkdir()
    source = notebook(("code", ["import torch\n", "torch.cuda.synchronize()\n"]), indent=indent).replace(b"\n", eol)
    (project / "a.ipynb").write_bytes(source)
    result = convert_project(project, tmp_path / "out")
    out = (result / "a.ipynb").read_bytes()
    pad = b" " * (4 * indent)
    expected = source.replace(
        b'"torch.cuda.synchronize()\\n"', b'"import torch_npu\\n",' + eol + pad + b'"torch_npu.npu.synchronize()\\n"'
    )
    assert out == expected


def test_notebook_skip_comments_apply_to_the_cell(tmp_path):
    project = tmp_path / "nb4"
    project.mkdir()
    source = notebook(
        ("code", ["# transplant: skip-file\n", "import torch\n", "!CUDA_VISIBLE_DEVICES=0 ls\n", "x.cuda()"]),
        ("code", ["y.cuda()\n", "z.cuda()  # transplant: skip\n"]),
    )
    (project / "skip.ipynb").write_bytes(source)
    result = convert_project(project, tmp_path / "out")
    nb = assert_valid_nbformat4((result / "skip.ipynb").read_bytes())
    assert nb["cells"][0]["source"] == [
        "# transplant: skip-file\n",
        "import torch\n",
        "!CUDA_VISIBLE_DEVICES=0 ls\n",
        "x.cuda()",
    ]
    assert nb["cells"][1]["source"] == ["import torch_npu\n", "y.npu()\n", "z.cuda()  # transplant: skip\n"]


def test_notebook_without_cuda_is_copied(tmp_path):
    project = tmp_path / "nb3"
    project.mkdir()
    source = notebook(("code", ["print('cuda or cpu')\n"]), ("markdown", ["torch.cuda"]))
    (project / "plain.ipynb").write_bytes(source)
    result = convert_project(project, tmp_path / "out")
    assert (result / "plain.ipynb").read_bytes() == source


# ---- shell scripts


def test_shell_script_variables_are_renamed_and_listed(tmp_path):
    project = tmp_path / "sh"
    (project / "tools").mkdir(parents=True)
    script = (
        b"#!/usr/bin/env bash\r\n"
        b"export CUDA_VISIBLE_DEVICES=0,1\r\n"
        b"CUDA_LAUNCH_BLOCKING=1 python train.py --gpus ${CUDA_VISIBLE_DEVICES}\r\n"
        b'echo "$MY_CUDA_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES_X"\r\n'
    )
    (project / "tools" / "launch.sh").write_bytes(script)
    os.chmod(project / "tools" / "launch.sh", 0o755)
    result = convert_project(project, tmp_path / "out")
    out = result / "tools" / "launch.sh"
    assert out.read_bytes() == (
        b"#!/usr/bin/env bash\r\n"
        b"export ASCEND_RT_VISIBLE_DEVICES=0,1\r\n"
        b"ASCEND_LAUNCH_BLOCKING=1 python train.py --gpus ${ASCEND_RT_VISIBLE_DEVICES}\r\n"
        b'echo "$MY_CUDA_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES_X"\r\n'
    )
    assert os.stat(out).st_mode & 0o777 == 0o755
    _, rows = read_change_list(result)
    assert [(r["File"], r["Start Line"], r["Code"], r["Message"]) for r in rows] == [
        ("tools/launch.sh", "2", "TP105", "CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES"),
        ("tools/launch.sh", "3", "TP105", "CUDA_LAUNCH_BLOCKING -> ASCEND_LAUNCH_BLOCKING"),
        ("tools/launch.sh", "3", "TP105", "CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES"),
    ]


# ---- reports cannot run formulas


@pytest.mark.parametrize("name", ["=SUM(1,2).py", "+cmd.py", "-x.py", "@calc.py"])
def test_formula_cells_are_quoted_in_csv_and_xlsx(tmp_path, name):
    project = tmp_path / "inj"
    project.mkdir()
    (project / name).write_text("import torch\ntorch.cuda.nccl.all_reduce([])\nx = torch.zeros(1).cuda()\n")
    result = convert_project(project, tmp_path / "out")
    assert (
        result / name
    ).read_text() == "import torch\nimport torch_npu\ntorch.cuda.nccl.all_reduce([])\nx = torch.zeros(1).npu()\n"
    _, rows = read_change_list(result)
    assert rows and {r["File"] for r in rows} == {"'" + name}
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    for sheet in ("Unsupported", "Summary"):
        values = [row[0] for row in wb[sheet].iter_rows(min_row=2, values_only=True)]
        assert "'" + name in values
        assert name not in values
    for ws in wb:
        for row in ws.iter_rows(values_only=True):
            for value in row:
                assert not (isinstance(value, str) and value[:1] in "=+-@"), value


def test_converting_the_result_again_changes_nothing():
    for name in sorted(tree(EXPECTED) - REPORTS):
        result = convert_file(name, (EXPECTED / name).read_bytes(), cached_ruleset())
        assert result.new is None and result.changes == [], name
