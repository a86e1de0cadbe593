"""Reports a person acts on (issue 36): no row without something to do, at the level the written
policy gives it (docs/reports.md, "Levels").

* ``torch`` without ``torch_npu``: once per project (the file nearest the root), a note, and only
  where the converted code imports torch_npu.
* Exception classes every torch build defines (``except torch.cuda.CudaError``): a note.
* Every warning of the per-version support lists has a suggestion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_project import convert_project
from test_reports import sheet
from transplant.resources import rules_dir

REQUIREMENTS = "torch==2.1.0\nnumpy\n"


def _project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _rows(tmp_path: Path, files: dict[str, str]) -> list[tuple]:
    src = _project(tmp_path / "proj", files)
    return sheet(convert_project(src, tmp_path / "out"), "Unsupported")


def test_torch_npu_reminder_once_per_project_as_a_note(tmp_path: Path):
    rows = _rows(
        tmp_path,
        {
            "requirements.txt": REQUIREMENTS,
            "examples/a/requirements.txt": REQUIREMENTS,
            "examples/b/requirements-dev.txt": "torch>=2.0\n",
            "train.py": "import torch\nx = torch.ones(2).cuda()\n",
        },
    )
    reminders = [r for r in rows if r[4] == "torch_npu"]
    assert [(r[0], r[5]) for r in reminders] == [("requirements.txt", "note")]
    assert "examples/a/requirements.txt" in reminders[0][6] and "examples/b/requirements-dev.txt" in reminders[0][6]


def test_no_torch_npu_reminder_where_nothing_imports_it(tmp_path: Path):
    rows = _rows(
        tmp_path,
        {
            "requirements.txt": REQUIREMENTS,
            "examples/a/requirements.txt": REQUIREMENTS,
            "cpu_only.py": "import torch\nx = torch.ones(2)\n",
            "run.sh": "nvidia-smi\n",  # converted, but no Python file imports torch_npu
        },
    )
    assert [r for r in rows if r[4] == "torch_npu"] == []


def test_torch_npu_reminder_is_not_counted_against_the_conversion_rate(tmp_path: Path):
    src = _project(
        tmp_path / "proj", {"requirements.txt": REQUIREMENTS, "train.py": "import torch\ntorch.cuda.synchronize()\n"}
    )
    summary = {r[0]: r[1:] for r in sheet(convert_project(src, tmp_path / "out"), "Summary")}
    assert summary["requirements.txt"] == (0, 0, None, 0, 0, 1, None)  # a note: no rate
    assert summary["TOTAL"][2] == 1.0


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    x = torch.ones(2).cuda()\nexcept torch.cuda.CudaError:\n    x = None\n",
        "try:\n    x = torch.ones(2).cuda()\nexcept (torch.cuda.CudaError, ValueError) as e:\n    x = None\n",
        "from torch.cuda import CudaError\ntry:\n    x = torch.ones(2).cuda()\nexcept CudaError:\n    x = None\n",
        "try:\n    x = torch.ones(2).cuda()\nexcept torch.cuda.DeferredCudaCallError:\n    x = None\n",
    ],
)
def test_cuda_exception_classes_are_notes(tmp_path: Path, code: str):
    rows = _rows(tmp_path, {"train.py": "import torch\n" + code})
    found = [r for r in rows if "Error" in (r[4] or "")]
    assert found and all(r[5] == "note" for r in found), found
    assert all("never catches on an NPU" in r[6] and r[7] for r in found)


def test_every_support_list_warning_says_what_to_do():
    for path in sorted((rules_dir() / "npu_support").glob("unsupported_*.json")):
        rules = json.loads(path.read_text(encoding="utf-8"))["rules"]["UnsupportedRule"]
        empty = [r["name"] for r in rules if r["level"] in ("error", "warning") and not r.get("suggestion")]
        assert empty == [], path.name
    rules = json.loads((rules_dir() / "npu_support" / "unsupported_2.8.json").read_text(encoding="utf-8"))
    by_name = {r["name"]: r for r in rules["rules"]["UnsupportedRule"]}
    assert "DistributedDataParallel" in by_name["torch.nn.DataParallel"]["suggestion"]
    assert "-m distributed" in by_name["torch.nn.DataParallel"]["suggestion"]


def test_change_list_names_the_rule_not_its_index(tmp_path: Path):
    from test_project import read_change_list

    src = _project(
        tmp_path / "proj",
        {
            "train.py": "import os\nimport torch\nx = torch.ones(2).to('cuda')\ntorch.cuda.synchronize()\n"
            "y = torch.load('m.pt', map_location='cuda')\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
        },
    )
    _, rows = read_change_list(convert_project(src, tmp_path / "out"))
    rules = [r["Rule"] for r in rows]
    assert rules == [
        "builtin",
        "device_args.json: .to()",
        "device_api.json: torch.cuda.synchronize",
        "device_args.json: torch.load",
        "env_vars.json: CUDA_VISIBLE_DEVICES",
    ]


def test_rule_label_keeps_ids_it_cannot_name():
    from transplant.reports.rulenames import rule_label

    assert rule_label("builtin") == "builtin"
    assert rule_label("my_rules.json:FuncNameModifyRule[0]", "mylib.f") == "my_rules.json:FuncNameModifyRule[0]"
    assert rule_label("device_api.json:FuncNameModifyRule[99999]") == "device_api.json:FuncNameModifyRule[99999]"
    # a user's file named like a built-in one: the built-in rule at that index is about something else
    assert rule_label("env_vars.json:EnvVarModifyRule[0]", "MY_VAR") == "env_vars.json:EnvVarModifyRule[0]"
