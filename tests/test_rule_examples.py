"""Rules that carry their own examples (transplant/ruleexamples.py, ``transplant test-rules``): every
example of the shipped rules holds, each rule kind shows how, and a failing example is one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from transplant.cli import main
from transplant.ruleexamples import examples, run, shipped_rule_files
from transplant.rules import schema

EXAMPLE_FIXTURES = sorted((FIXTURES / "rule_examples").glob("*.json"))


def write(tmp_path: Path, rules: dict, name: str = "mine.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"rules": rules}, indent=1), encoding="utf-8")
    return path


def test_every_example_of_the_shipped_rules_holds():
    outcome = run(shipped_rule_files())
    assert outcome.failures == []
    assert outcome.passed >= 20 and outcome.rules >= 10


def test_the_fixture_rule_files_examples_hold():
    outcome = run(EXAMPLE_FIXTURES)
    assert outcome.failures == [] and outcome.passed >= 3


def test_every_rule_kind_has_an_example_a_rule_author_can_copy():
    kinds = set(schema()["properties"]["rules"]["properties"])
    shown = {(e.kind, e.valid) for path in shipped_rule_files() + EXAMPLE_FIXTURES for e in examples(path)}
    assert {kind for kind, valid in shown if not valid} == kinds
    assert {kind for kind, valid in shown if valid} == kinds
    # the shipped rules show every kind they use (ModuleNameModifyRule: only the fixture has one)
    shipped = {e.kind for path in shipped_rule_files() for e in examples(path)}
    assert kinds - shipped == {"ModuleNameModifyRule"}
    # and the optional keys: another file kind, another PyTorch version, a rule behind an option
    data = [(e.entry, e.data) for path in shipped_rule_files() for e in examples(path)]
    assert any(d.get("file") == "run.sh" for _, d in data)
    assert any(d.get("pytorch_version") == "2.1" for _, d in data)
    assert any(entry.get("option") == "specify_device" for entry, _ in data)


def test_failing_examples_are_one_line_each_and_the_exit_status_is_1(tmp_path, capsys):
    rules = {
        "FuncNameModifyRule": [
            {
                "old_name": "mylib.cuda_sync",
                "new_name": "mylib.npu_sync",
                "examples": {
                    "valid": [
                        "import mylib\nmylib.npu_sync()\n",  # holds
                        "import mylib\nmylib.cuda_sync()\n",
                    ],  # changes
                    "invalid": [
                        {
                            "source": "import mylib\nmylib.cuda_sync()\n",
                            "output": "import mylib\nmylib.npu_sync()\n",
                            "code": "TP101",
                        },  # holds
                        {
                            "source": "import mylib as m\nm.cuda_sync()\n",
                            "output": "import mylib as m\nm.npu_sync(1)\n",
                        },
                        {"source": "import mylib\nmylib.cuda_sync()\n", "code": "TP201"},
                        {"source": "import other\nother.cuda_sync()\n"},
                    ],
                },
            }
        ],
        "UnsupportedRule": [
            {"name": "mylib.gpu_only", "level": "error", "examples": {"valid": ["import mylib\nmylib.gpu_only()\n"]}}
        ],  # reported
    }
    path = write(tmp_path, rules)
    assert main(["test-rules", str(path)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    where = f"{path}: rules."
    assert lines == [
        f"{where}FuncNameModifyRule[0].examples.valid[1]: a valid example must stay as it is; "
        "line 2 is 'mylib.npu_sync()\\n', expected 'mylib.cuda_sync()\\n'",
        f"{where}FuncNameModifyRule[0].examples.invalid[1]: line 2 is 'm.npu_sync()\\n', expected 'm.npu_sync(1)\\n'",
        f"{where}FuncNameModifyRule[0].examples.invalid[2]: expected TP201, got TP101 at line 2 "
        "(mylib.cuda_sync -> mylib.npu_sync)",
        f"{where}FuncNameModifyRule[0].examples.invalid[3]: the rule does nothing on this example "
        "(all records: nothing)",
        f"{where}UnsupportedRule[0].examples.valid[0]: a valid example must not be reported by the rule; it gets "
        "TP201 at line 2 (mylib.gpu_only: not supported on NPU)",
        "transplant test-rules: 7 examples of 2 rules in 1 file: 2 passed, 5 failed",
    ]
    assert err == ""


def test_examples_in_other_file_kinds_and_a_clean_run(tmp_path, capsys):
    cell = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["!gpustat\n"]}
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    rules = {
        "ShellCommandRule": [
            {
                "old_name": "gpustat",
                "new_name": "npu-smi info",
                "examples": {
                    "valid": [{"file": "run.sh", "source": "echo gpustat\n"}],
                    "invalid": [
                        {"file": "run.sh", "source": "gpustat\n", "output": "npu-smi info\n", "code": "TP107"},
                        {"file": "nb.ipynb", "source": json.dumps(cell), "code": "TP107"},
                        {"file": "Dockerfile", "source": "FROM ubuntu\nRUN gpustat -i\n", "code": "TP207"},
                    ],
                },
            }
        ]
    }
    assert main(["test-rules", str(write(tmp_path, rules))]) == 0
    assert capsys.readouterr().out == "transplant test-rules: 4 examples of 1 rule in 1 file: 4 passed, 0 failed\n"
    plain = write(tmp_path, {"EnvVarModifyRule": [{"old_name": "MY_CUDA", "new_name": "MY_NPU"}]}, "plain.json")
    assert main(["test-rules", str(plain)]) == 0
    assert capsys.readouterr().out == "transplant test-rules: no examples in 1 rule file\n"


@pytest.mark.parametrize(
    "examples_value, complaint",
    [
        ({"invalid": [{"output": "x"}]}, "examples.invalid[0]: 'source' is a required property"),
        ({"valid": [{"source": "x", "outptu": "y"}]}, "examples.valid[0]"),
        ({"invalid": [{"source": "x", "code": "E101"}]}, "examples.invalid[0].code"),
        ({"invalid": [{"source": "x", "file": "a/b.py"}]}, "examples.invalid[0].file"),
        ({}, "examples"),
    ],
)
def test_a_bad_example_is_a_schema_error_with_its_place(tmp_path, capsys, examples_value, complaint):
    path = write(tmp_path, {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": "a.c", "examples": examples_value}]})
    assert main(["test-rules", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"transplant test-rules: error: {path}: rules.FuncNameModifyRule[0].") and complaint in err


def test_unusable_paths_exit_2_with_one_line(tmp_path, capsys):
    assert main(["test-rules", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == f"transplant test-rules: error: {tmp_path / 'nope.json'}: rule file not found\n"
    (tmp_path / "bad.json").write_text("{")
    assert main(["test-rules", str(tmp_path / "bad.json")]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_the_installed_command_checks_the_shipped_rules():
    proc = subprocess.run([sys.executable, "-m", "transplant", "test-rules"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("transplant test-rules: ") and proc.stdout.endswith(" 0 failed\n")


def test_the_documented_example_rule_holds(tmp_path, capsys):
    """The rule with examples the documentation shows (README or docs/) is one test-rules accepts."""
    import re

    texts = [
        p.read_text(encoding="utf-8")
        for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
        if p.is_file()
    ]
    blocks = [b for text in texts for b in re.findall(r"```json\n(.*?)\n```", text, re.S) if '"examples"' in b]
    assert len(blocks) == 1
    entry = json.loads(blocks[0])
    path = write(tmp_path, {"EnvVarModifyRule": [entry]})
    assert main(["test-rules", str(path)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.endswith(": 2 passed, 0 failed\n")
