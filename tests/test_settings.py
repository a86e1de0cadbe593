"""[tool.transplant] in pyproject.toml: read by the command line (and the language server), with
command-line flags winning over the table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from transplant.config import RuleOptions
from transplant.rules import RuleError
from transplant.settings import find_pyproject, options_for, project_options, read_table

SOURCE = "import torch\nimport mylib\ntorch.cuda.set_device(0)\ny = mylib.cuda_kernel()\n"
USER_RULES = '{"rules": {"FuncNameModifyRule": [{"old_name": "mylib.cuda_kernel", "new_name": "mylib.npu_kernel"}]}}'


def run(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transplant", *args], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=120
    )


def project(tmp_path: Path, table: str) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n[tool.transplant]\n{table}\n")
    (root / "src" / "train.py").write_text(SOURCE)
    return root


def test_table_is_read_and_checked(tmp_path: Path):
    root = project(tmp_path, 'rules = ["r.json"]\nspecify_device = true\npytorch_version = "2.6"')
    assert find_pyproject(root / "src") == root / "pyproject.toml"
    table = read_table(root / "pyproject.toml")
    # the release is the newest final one that ships the version (torch_npu 7.3 ships PyTorch 2.6)
    assert options_for(table) == RuleOptions((root / "r.json",), True, False, "2.6", "7.3")
    # flags win: -r replaces the table's rules, --pytorch-version its version; -sim turns similar on
    assert options_for(table, rules=[Path("x.json")], similar=True, pytorch_version="2.1") == RuleOptions(
        (Path("x.json"),), True, True, "2.1", "7.2"
    )
    assert project_options(root / "src", similar=True) == (
        RuleOptions((root / "r.json",), True, True, "2.6", "7.3"),
        root / "pyproject.toml",
    )


@pytest.mark.parametrize(
    "table, message",
    [
        ("colour = true", "unknown key 'colour'"),
        ('similar = "yes"', "similar must be true or false"),
        ('pytorch_version = "1.0"', "pytorch_version must be one of"),
        ('torch_npu = "25.0"', "torch_npu must be one of"),
        ('pytorch_version = "2.8"\ntorch_npu = "26.1"', "torch_npu 26.1 does not ship PyTorch 2.8"),
        ('rules = "r.json"', "rules must be a list"),
        ("rules = [", "not valid TOML"),
    ],
)
def test_a_bad_table_is_one_line_and_exit_2(tmp_path: Path, table: str, message: str):
    root = project(tmp_path, table)
    with pytest.raises(RuleError, match=message):
        options_for(read_table(root / "pyproject.toml"))
    out = run(root, "--check", "src")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_the_stack_is_a_pair(tmp_path: Path):
    """A table's pair holds; a flag for either half replaces the pair, the other half derived."""
    root = project(tmp_path, 'pytorch_version = "2.9"\ntorch_npu = "26.0"')
    table = read_table(root / "pyproject.toml")
    assert options_for(table).pytorch_version == "2.9" and options_for(table).torch_npu == "26.0"
    assert options_for(table, pytorch_version="2.13").torch_npu == "26.2"  # only the 26.2 betas ship 2.13
    assert options_for(table, torch_npu="26.2").pytorch_version == "2.12"  # the recommended version
    assert options_for(table, torch_npu="7.2").pytorch_version == "2.8"  # the newest 7.2 ships
    assert options_for({}) == RuleOptions((), False, False, "2.12", "26.1")  # the recommended pair


def test_check_uses_the_table_and_flags_win(tmp_path: Path):
    plain = run(tmp_path, "--check", "-", stdin=SOURCE).stdout
    with_s = run(tmp_path, "--check", "-s", "-", stdin=SOURCE).stdout
    assert plain != with_s
    root = project(tmp_path, "specify_device = true")
    assert run(root, "--check", "-", stdin=SOURCE).stdout == with_s
    assert run(root / "src", "--check", "-", stdin=SOURCE).stdout == with_s  # found from a subfolder
    # user rules from the table, relative to the pyproject.toml
    (root / "pyproject.toml").write_text('[tool.transplant]\nrules = ["r.json"]\n')
    (root / "r.json").write_text(USER_RULES)
    with_r = run(tmp_path, "--check", "-r", str(root / "r.json"), "-", stdin=SOURCE).stdout
    assert with_r != plain
    assert run(root / "src", "--check", "-", stdin=SOURCE).stdout == with_r
    # -r on the command line replaces the table's list
    (root / "empty.json").write_text('{"rules": {}}')
    assert run(root, "--check", "-r", "empty.json", "-", stdin=SOURCE).stdout == plain


def test_repository_mode_reads_the_input_project(tmp_path: Path):
    root = project(tmp_path, "specify_device = true")
    out = tmp_path / "out"
    assert run(tmp_path, "-i", str(root), "-o", str(out), "-q", "-j1").returncode == 0
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "train.py").write_text(SOURCE)
    assert run(tmp_path, "-i", str(bare), "-o", str(tmp_path / "plain"), "-q", "-j1").returncode == 0
    assert run(tmp_path, "-i", str(bare), "-o", str(tmp_path / "flag"), "-q", "-j1", "-s").returncode == 0
    table_result = (out / "proj_msft" / "src" / "train.py").read_text()
    flag_result = (tmp_path / "flag" / "bare_msft" / "train.py").read_text()
    assert (tmp_path / "plain" / "bare_msft" / "train.py").read_text() != flag_result
    assert table_result == flag_result and "DEVICE_ID" in table_result


def test_file_modes_read_the_table_of_each_files_project(tmp_path: Path):
    """As ruff and the language server do: the nearest pyproject.toml above each file, not the
    current folder's (here one whose table names a rule file that does not exist)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text('[tool.transplant]\nrules = ["missing.json"]\n')
    with_s = project(tmp_path / "a", "specify_device = true") / "src" / "train.py"
    plain = project(tmp_path / "b", "similar = false") / "src" / "train.py"
    out = run(elsewhere, "--diff", str(with_s), str(plain.parent))
    assert out.returncode == 1, out.stderr
    diffs = dict(re.findall(r"^--- (\S+)\n(.*?)(?=^--- |\Z)", out.stdout, re.M | re.S))
    assert sorted(diffs) == sorted([str(with_s), str(plain)])
    assert "DEVICE_ID" in diffs[str(with_s)] and "DEVICE_ID" not in diffs[str(plain)]
    # the flag still wins over every project's table
    flagged = run(elsewhere, "--diff", "-s", str(plain))
    assert "DEVICE_ID" in flagged.stdout
    # standard input: the project of --stdin-filename
    named = run(elsewhere, "--check", "--stdin-filename", str(with_s), "-", stdin=SOURCE)
    assert named.stdout == run(with_s.parent, "--check", "--stdin-filename", str(with_s), "-", stdin=SOURCE).stdout
    assert "DEVICE_ID" in named.stdout


def test_check_takes_the_release_from_the_table(tmp_path: Path):
    """--check (and so the pre-commit hook) reads torch_npu from [tool.transplant]; a flag replaces the pair."""
    source = 'import os\nos.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"\n'
    root = project(tmp_path, 'pytorch_version = "2.12"\ntorch_npu = "26.2"')
    (root / "src" / "dist.py").write_text(source)
    assert "-> TORCH_HCCL_ASYNC_ERROR_HANDLING" in run(root, "--check", "src/dist.py").stdout
    assert "-> HCCL_ASYNC_ERROR_HANDLING" in run(root, "--check", "--torch-npu", "26.1", "src/dist.py").stdout
