"""File modes (--check, --diff, --in-place, -) as a pre-commit hook and an editor's external tool."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cached_ruleset
from transplant import filemodes, filetypes, pool
from transplant.cli import main
from transplant.filetypes import convert_file

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "filemodes"
LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TP\d{3}) (?P<message>.+)$")


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A copy of the fixtures in a temporary folder, which is also the current folder."""
    target = tmp_path / "proj"
    shutil.copytree(FIXTURES, target)
    monkeypatch.chdir(target)
    return target


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def expected(name: str, data: bytes | None = None) -> bytes | None:
    data = (FIXTURES / name).read_bytes() if data is None else data
    return convert_file(name, data, cached_ruleset()).new


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file below ``folder`` with its bytes, mtime and inode."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            out[str(p.relative_to(folder))] = (p.read_bytes(), st.st_mtime_ns, st.st_ino)
    return out


def parse_lines(text: str) -> list[re.Match]:
    lines = text.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), f"not path:line:col: CODE message: {lines}"
    return matches


def run_module(*argv: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transplant", *argv], input=input, capture_output=True, cwd=cwd, timeout=120
    )


# --------------------------------------------------------------------------- --check


def test_check_reports_changes_and_findings_and_exits_1(work, capsys):
    before = snapshot(work)
    code, out, err = cli(capsys, "--check", "train.py")
    assert code == 1
    got = [(m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in parse_lines(out)]
    assert got == [
        ("train.py", 2, 1, "TP106"),
        ("train.py", 4, 31, "TP102"),
        ("train.py", 5, 30, "TP104"),
        ("train.py", 6, 1, "TP101"),
        ("train.py", 7, 1, "TP201"),
        ("train.py", 8, 1, "TP203"),
    ]
    assert "torch.cuda.synchronize -> torch_npu.npu.synchronize" in out
    assert "1 file would be converted" in err
    assert snapshot(work) == before  # bytes, mtimes and inodes: nothing was written


def test_check_clean_file_exits_0_and_prints_nothing_on_stdout(work, capsys):
    code, out, err = cli(capsys, "--check", "clean.py")
    assert (code, out) == (0, "")
    assert "nothing to convert" in err


def test_notes_do_not_change_the_exit_status(work, capsys):
    code, out, _ = cli(capsys, "--check", "only_note.py")
    assert code == 0
    assert [m["code"] for m in parse_lines(out)] == ["TP203"]


def test_unsupported_api_alone_exits_1(work, capsys):
    code, out, _ = cli(capsys, "--check", "only_unsupported.py")
    assert code == 1
    assert [(m["line"], m["code"]) for m in parse_lines(out)] == [("3", "TP201")]


def test_api_unsupported_for_the_pytorch_version_exits_1(work, capsys):
    code, out, _ = cli(capsys, "--check", "only_version_unsupported.py")
    assert code == 1
    assert [(m["line"], m["col"], m["code"]) for m in parse_lines(out)] == [("3", "5", "TP202")]
    assert "PyTorch 2.12" in out


def test_quiet_drops_the_summary_but_not_the_diagnostics(work, capsys):
    code, out, err = cli(capsys, "--check", "-q", "train.py")
    assert code == 1 and err == ""
    assert len(parse_lines(out)) == 6


def test_check_shell_script_and_notebook(work, capsys):
    code, out, _ = cli(capsys, "--check", "run.sh", "demo.ipynb")
    assert code == 1
    rows = [(m["path"], m["line"], m["col"], m["code"]) for m in parse_lines(out)]
    assert ("run.sh", "2", "8", "TP105") in rows
    assert ("demo.ipynb", "3", "20", "TP102") in rows
    assert "cell 2: .cuda() -> .npu()" in out


def test_check_shows_shell_commands_run_from_python_and_notebooks(work, capsys):
    (work / "gpu.py").write_text(
        'import subprocess as sp\nfrom os import system\n\nsystem("nvidia-smi")\n'
        'sp.run(["nvidia-smi", "-L"])\nprint("nvidia-smi -L")\n',
        encoding="utf-8",
    )
    (work / "gpu.ipynb").write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": ["x = 1\n", "!nvidia-smi -L\n"],
                    }
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        ),
        encoding="utf-8",
    )
    code, out, _ = cli(capsys, "--check", "gpu.py", "gpu.ipynb")
    assert code == 1
    rows = [(m["path"], m["line"], m["col"], m["code"]) for m in parse_lines(out)]
    assert rows == [("gpu.py", "4", "8", "TP107"), ("gpu.py", "5", "9", "TP207"), ("gpu.ipynb", "2", "2", "TP207")]
    assert "cell 1: nvidia-smi:" in out
    code, _, _ = cli(capsys, "--in-place", "gpu.py")
    assert (work / "gpu.py").read_text(encoding="utf-8").splitlines()[3] == 'system("npu-smi info")'
    code, out, _ = cli(capsys, "--check", "gpu.py")
    assert [(m["line"], m["code"]) for m in parse_lines(out)] == [("5", "TP207")]  # what is left for the user


def test_check_never_modifies_anything_even_with_every_kind_of_input(work, capsys):
    before = snapshot(work)
    code, _, _ = cli(capsys, "--check", ".")
    assert code == 2  # broken.py does not parse
    assert snapshot(work) == before
    assert not [p for p in work.rglob("*") if "transplant-tmp" in p.name]


# --------------------------------------------------------------------------- --diff


def test_diff_prints_an_applicable_unified_diff_and_writes_nothing(work, capsys, tmp_path):
    before = snapshot(work)
    code, out, err = cli(capsys, "--diff", "train.py", "run.sh", "clean.py")
    assert code == 1
    assert snapshot(work) == before
    assert out.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "--- run.sh\n+++ run.sh\n" in out and "clean.py" not in out
    assert "\n-torch.cuda.synchronize()\n" in out and "\n+torch_npu.npu.synchronize()\n" in out
    # only what remains for the user goes to stderr; the diff shows the changes
    codes = [m["code"] for m in parse_lines("\n".join(l for l in err.splitlines() if not l.startswith("transplant:")))]
    assert codes == ["TP201", "TP203"]
    # the diff applies with git apply -p0 and gives exactly what --in-place writes
    if shutil.which("git") is None:
        pytest.skip("git is needed to apply the diff")
    copy = tmp_path / "applied"
    shutil.copytree(work, copy)
    (tmp_path / "change.patch").write_text(out)
    subprocess.run(["git", "apply", "-p0", str(tmp_path / "change.patch")], cwd=copy, check=True)
    assert (copy / "train.py").read_bytes() == expected("train.py")
    assert (copy / "run.sh").read_bytes() == expected("run.sh")


def test_diff_of_a_clean_file_is_empty_and_exits_0(work, capsys):
    code, out, _ = cli(capsys, "--diff", "clean.py", "only_note.py")
    assert (code, out) == (0, "")


def test_diff_marks_a_missing_final_newline(work, capsys):
    (work / "nonl.py").write_bytes(b"import torch\ntorch.cuda.synchronize()")
    code, out, _ = cli(capsys, "--diff", "nonl.py")
    assert code == 1
    assert "-torch.cuda.synchronize()\n\\ No newline at end of file\n" in out
    assert out.endswith("+torch_npu.npu.synchronize()\n\\ No newline at end of file\n")


# --------------------------------------------------------------------------- --in-place


def test_in_place_rewrites_changed_files_only_and_keeps_the_mode(work, capsys):
    os.chmod(work / "train.py", 0o754)
    before = snapshot(work)
    code, out, err = cli(capsys, "--in-place", "train.py", "clean.py", "only_note.py", "run.sh")
    assert code == 1
    assert (work / "train.py").read_bytes() == expected("train.py")
    assert (work / "run.sh").read_bytes() == expected("run.sh")
    assert stat.S_IMODE((work / "train.py").stat().st_mode) == 0o754
    after = snapshot(work)
    for name in ("clean.py", "only_note.py"):
        assert after[name] == before[name]  # same bytes, same mtime, same inode: not touched
    # replaced by rename, not rewritten in place
    assert after["train.py"][2] != before["train.py"][2]
    assert not [p for p in work.iterdir() if "transplant-tmp" in p.name]
    assert "converted train.py (4 changes)" in err and "converted run.sh (1 change)" in err
    # what remains is reported with its place in the new text (one import line was added)
    rows = [(m["path"], m["line"], m["code"]) for m in parse_lines(out)]
    assert rows == [("train.py", "8", "TP201"), ("train.py", "9", "TP203"), ("only_note.py", "3", "TP203")]
    new_lines = (work / "train.py").read_text().splitlines()
    assert new_lines[7].startswith("torch.cuda.nccl.all_reduce")
    assert new_lines[8].startswith("torch.backends.cudnn.benchmark")


def test_in_place_twice_changes_nothing_the_second_time(work, capsys):
    assert cli(capsys, "--in-place", "skip_line.py", "run.sh")[0] == 1
    before = snapshot(work)
    code, out, _ = cli(capsys, "--in-place", "skip_line.py", "run.sh")
    assert (code, out) == (0, "")
    assert snapshot(work) == before


def test_in_place_writes_through_a_symbolic_link(work, capsys):
    (work / "link.py").symlink_to("train.py")
    code, _, _ = cli(capsys, "--in-place", "link.py")
    assert code == 1
    assert (work / "link.py").is_symlink()
    assert (work / "train.py").read_bytes() == expected("train.py")


def test_write_atomic_refuses_a_file_changed_since_it_was_read(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    st = target.stat()
    with pytest.raises(OSError, match="changed while"):
        filemodes.write_atomic(str(target), b"new\n", (st.st_size + 1, st.st_mtime_ns))
    assert target.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]
    filemodes.write_atomic(str(target), b"new\n", (st.st_size, st.st_mtime_ns))
    assert target.read_bytes() == b"new\n"


def test_in_place_converts_a_notebook(work, capsys):
    code, _, _ = cli(capsys, "--in-place", "demo.ipynb")
    assert code == 1
    nb = json.loads((work / "demo.ipynb").read_text())
    source = "".join(nb["cells"][1]["source"])
    assert "import torch_npu" in source and ".npu()" in source and "%matplotlib inline" in source


# --------------------------------------------------------------------------- stdin


def test_stdin_round_trip_in_a_subprocess(work):
    data = (FIXTURES / "train.py").read_bytes()
    proc = run_module("-", "--stdin-filename", "src/train.py", input=data, cwd=work)
    assert proc.returncode == 1
    assert proc.stdout == expected("train.py")
    rows = [(m["path"], m["line"], m["code"]) for m in parse_lines(proc.stderr.decode())]
    assert rows == [("src/train.py", "8", "TP201"), ("src/train.py", "9", "TP203")]
    # converting the output again changes nothing; only the finding keeps the status at 1
    again = run_module("-", input=proc.stdout, cwd=work)
    assert again.stdout == proc.stdout and again.returncode == 1


def test_stdin_clean_source_comes_back_unchanged_with_status_0(work):
    data = (FIXTURES / "clean.py").read_bytes()
    proc = run_module("-", input=data, cwd=work)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, data, b"")


def test_stdin_that_does_not_parse_comes_back_unchanged_with_status_2(work):
    data = (FIXTURES / "broken.py").read_bytes()
    proc = run_module("-", input=data, cwd=work)
    assert proc.returncode == 2
    assert proc.stdout == data
    assert re.search(r"^-:2:\d+: TP900 not converted: syntax error", proc.stderr.decode(), re.M)


def test_stdin_filename_chooses_the_converter(work):
    data = (FIXTURES / "run.sh").read_bytes()
    proc = run_module("-", "--stdin-filename", "scripts/run.sh", input=data, cwd=work)
    assert proc.returncode == 1
    assert proc.stdout == expected("run.sh")
    nb = (FIXTURES / "demo.ipynb").read_bytes()
    proc = run_module("-", "--stdin-filename", "demo.ipynb", input=nb, cwd=work)
    assert proc.returncode == 1 and proc.stdout == expected("demo.ipynb")


def test_check_and_diff_of_stdin(work):
    data = (FIXTURES / "train.py").read_bytes()
    proc = run_module("--check", "-", "--stdin-filename", "train.py", input=data, cwd=work)
    assert proc.returncode == 1
    assert len(parse_lines(proc.stdout.decode())) == 6  # diagnostics, not source
    proc = run_module("--diff", "-", "--stdin-filename", "train.py", input=data, cwd=work)
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("--- train.py\n+++ train.py\n@@ ")


def test_stdin_in_process_with_json(monkeypatch, capsys):
    import io

    data = b"import torch\nx = torch.zeros(1).cuda()\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(["-", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == expected("x.py", data).decode()
    assert json.loads(err) == []  # nothing remains after conversion


# --------------------------------------------------------------------------- formats


def test_json_reads_back_with_every_field(work, capsys):
    code, out, _ = cli(capsys, "--check", "--format", "json", "train.py", "clean.py")
    assert code == 1
    items = json.loads(out)
    text_code, text_out, _ = cli(capsys, "--check", "train.py", "clean.py")
    text_rows = [(m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in parse_lines(text_out)]
    assert [(i["path"], i["line"], i["column"], i["code"]) for i in items] == text_rows
    keys = {"path", "line", "column", "end_line", "end_column", "code", "level", "message", "fix", "suggestion", "rule"}
    assert all(set(i) == keys for i in items)
    by_code = {i["code"]: i for i in items}
    assert by_code["TP101"]["level"] == "fix"
    assert by_code["TP101"]["fix"] == {"old": "torch.cuda.synchronize", "new": "torch_npu.npu.synchronize"}
    assert by_code["TP101"]["end_column"] == by_code["TP101"]["column"] + len("torch.cuda.synchronize")
    assert by_code["TP104"]["fix"] == {"old": '"cuda"', "new": '"npu"'}
    assert by_code["TP201"]["level"] == "error" and by_code["TP201"]["fix"] is None
    assert by_code["TP203"]["level"] == "note"
    assert by_code["TP201"]["rule"].startswith("device_api.json:")


def test_json_of_a_clean_run_is_an_empty_list(work, capsys):
    code, out, _ = cli(capsys, "--check", "--format", "json", "clean.py")
    assert code == 0 and json.loads(out) == []


def test_vscode_problem_matcher_from_the_docs_matches_the_output(work, capsys):
    readme = (REPO / "docs" / "editors.md").read_text()
    block = re.search(r"```json\n(\{\n  \"version\": \"2\.0\.0\".*?)```", readme, re.S)
    assert block, "docs/editors.md has no tasks.json example"
    task = json.loads(block.group(1))["tasks"][0]
    pattern = task["problemMatcher"]["pattern"]
    regexp = re.compile(pattern["regexp"])
    _, out, _ = cli(capsys, "--check", str(work / "train.py"))
    lines = out.splitlines()
    assert lines
    for line in lines:
        m = regexp.match(line)
        assert m, line
        assert Path(m.group(pattern["file"])) == work / "train.py"
        assert int(m.group(pattern["line"])) >= 1 and int(m.group(pattern["column"])) >= 1
        assert re.fullmatch(r"TP\d{3}", m.group(pattern["code"]))
    assert "--check" in task["args"]


# --------------------------------------------------------------------------- suppression comments


def test_skip_file_comment_leaves_the_file_alone_in_every_mode(work, capsys):
    before = snapshot(work)
    assert cli(capsys, "--check", "skip_file.py")[:2] == (0, "")
    assert cli(capsys, "--diff", "skip_file.py")[:2] == (0, "")
    assert cli(capsys, "--in-place", "skip_file.py")[:2] == (0, "")
    assert snapshot(work) == before
    data = (FIXTURES / "skip_file.py").read_bytes()
    proc = run_module("-", input=data, cwd=work)
    assert (proc.returncode, proc.stdout) == (0, data)


def test_skip_line_comment_leaves_that_line_only(work, capsys):
    code, out, _ = cli(capsys, "--check", "skip_line.py")
    assert code == 1
    assert "4" not in [m["line"] for m in parse_lines(out)]
    cli(capsys, "--in-place", "skip_line.py")
    lines = (work / "skip_line.py").read_text().splitlines()
    assert 'device = "cuda"  # transplant: skip' in lines
    assert "torch_npu.npu.synchronize()" in lines and "x = torch.zeros(1).npu()" in lines


def test_skip_comments_in_shell_scripts(work, capsys):
    Path("a.sh").write_bytes(b"export CUDA_VISIBLE_DEVICES=0  # transplant: skip\nexport CUDA_VISIBLE_DEVICES=1\n")
    Path("b.sh").write_bytes(b"#!/bin/sh\n# transplant: skip-file\nexport CUDA_VISIBLE_DEVICES=0\n")
    code, out, _ = cli(capsys, "--check", "a.sh", "b.sh")
    assert code == 1
    assert [(m["path"], m["line"]) for m in parse_lines(out)] == [("a.sh", "2")]
    cli(capsys, "--in-place", "a.sh", "b.sh")
    assert Path("a.sh").read_bytes() == (
        b"export CUDA_VISIBLE_DEVICES=0  # transplant: skip\nexport ASCEND_RT_VISIBLE_DEVICES=1\n"
    )
    assert Path("b.sh").read_bytes() == b"#!/bin/sh\n# transplant: skip-file\nexport CUDA_VISIBLE_DEVICES=0\n"


# --------------------------------------------------------------------------- folders


def test_folders_are_walked_skipping_vcs_venvs_and_links(tmp_path, capsys, monkeypatch):
    cuda = b"import torch\ntorch.cuda.synchronize()\n"
    files = {
        "pkg/a.py": cuda,
        "pkg/sub/b.pyi": cuda,
        "pkg/scripts/run.sh": b"export CUDA_VISIBLE_DEVICES=1\n",
        "pkg/nb.ipynb": (FIXTURES / "demo.ipynb").read_bytes(),
        "pkg/notes.txt": b"torch.cuda.synchronize()\n",
        "pkg/.git/hooks/x.py": cuda,
        "pkg/venv/pyvenv.cfg": b"home = /usr\n",
        "pkg/venv/lib/y.py": cuda,
        "pkg/lib/site-packages/z.py": cuda,
    }
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    (tmp_path / "pkg/link.py").symlink_to("a.py")
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, "--check", "pkg")
    assert code == 1
    paths = sorted({m["path"] for m in parse_lines(out)})
    assert paths == [os.path.join("pkg", p) for p in ("a.py", "nb.ipynb", "scripts/run.sh", "sub/b.pyi")]
    before = snapshot(tmp_path)
    code, _, _ = cli(capsys, "--in-place", "pkg")
    after = snapshot(tmp_path)
    changed = sorted(k for k in after if after[k] != before[k])
    assert changed == ["pkg/a.py", "pkg/nb.ipynb", "pkg/scripts/run.sh", "pkg/sub/b.pyi"]
    assert (tmp_path / "pkg/link.py").is_symlink()


def test_the_current_folder_is_shown_without_a_dot_prefix(work, capsys):
    _, out, _ = cli(capsys, "--check", ".")
    assert {m["path"] for m in parse_lines(out)} >= {"train.py", "run.sh", "demo.ipynb", "broken.py"}


def test_a_file_named_twice_is_converted_once(work, capsys):
    code, _, err = cli(capsys, "--in-place", "train.py", ".", str(work / "train.py"))
    assert code == 2  # broken.py, found in "."
    assert err.count("converted ") == 4  # train.py, demo.ipynb, run.sh, skip_line.py
    assert "3 unsupported API uses" in err  # two TP201, one TP202; the TP900 of broken.py is not one
    assert err.count("converted train.py") == 1 and str(work / "train.py") not in err
    assert (work / "train.py").read_bytes() == expected("train.py")


def test_extensionless_script_with_python_shebang_is_converted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("train").write_bytes(b"#!/usr/bin/env python3\nimport torch\ntorch.cuda.synchronize()\n")
    Path("launch").write_bytes(b"#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\n")
    code, _, _ = cli(capsys, "--in-place", "train", "launch")
    assert code == 1
    assert b"torch_npu.npu.synchronize()" in Path("train").read_bytes()
    assert Path("launch").read_bytes() == b"#!/bin/sh\nexport ASCEND_RT_VISIBLE_DEVICES=0\n"


def test_many_files_in_worker_processes_give_the_same_result(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(pool.POOL_MIN_FILES + 4):
        Path(f"m{i:02}.py").write_bytes(b"import torch\nx = torch.zeros(%d).cuda()\n" % i)
    serial = cli(capsys, "--check", "-j", "1", ".")
    parallel = cli(capsys, "--check", "-j", "3", ".")
    assert serial == parallel
    assert serial[0] == 1 and len(parse_lines(serial[1])) == 2 * (pool.POOL_MIN_FILES + 4)


# --------------------------------------------------------------------------- rules


def test_user_rules_apply_as_in_repository_mode(work, capsys):
    code, out, _ = cli(capsys, "--check", "uses_mylib.py")
    assert (code, out) == (0, "")
    code, out, _ = cli(capsys, "--check", "-r", "user_rules.json", "uses_mylib.py")
    assert code == 1
    assert [(m["line"], m["code"], m["message"]) for m in parse_lines(out)] == [
        ("3", "TP101", "mylib.cuda_kernel -> mylib.npu_kernel")
    ]


def test_invalid_user_rules_are_a_usage_error(work, capsys):
    Path("bad_rules.json").write_text('{"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "x"}]}}')
    before = snapshot(work)
    code, out, err = cli(capsys, "--in-place", "-r", "bad_rules.json", "train.py")
    assert code == 2 and out == ""
    assert "bad_rules.json" in err
    assert snapshot(work) == before


# --------------------------------------------------------------------------- errors and usage


def test_missing_path_is_exit_2_and_the_other_files_are_still_checked(work, capsys):
    code, out, err = cli(capsys, "--check", "missing.py", "train.py")
    assert code == 2
    assert "transplant: error: missing.py: no such file or folder" in err
    assert len(parse_lines(out)) == 6


def test_file_that_does_not_parse_is_an_error_for_that_file_only(work, capsys):
    code, out, err = cli(capsys, "--in-place", "broken.py", "train.py")
    assert code == 2
    assert (work / "broken.py").read_bytes() == (FIXTURES / "broken.py").read_bytes()
    assert (work / "train.py").read_bytes() == expected("train.py")
    broken = [m for m in parse_lines(out) if m["path"] == "broken.py"]
    assert [(m["line"], m["code"]) for m in broken] == [("2", "TP900")]
    assert "syntax error" in broken[0]["message"]
    assert "1 file could not be parsed" in err


def test_unreadable_file_is_exit_2(work, capsys, monkeypatch):
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("train.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(filemodes, "open", fake_open, raising=False)
    code, out, err = cli(capsys, "--check", "train.py", "only_unsupported.py")
    assert code == 2
    assert "transplant: error: train.py: cannot read: Permission denied" in err
    assert [m["path"] for m in parse_lines(out)] == ["only_unsupported.py"]


def test_an_internal_error_in_one_file_does_not_stop_the_others(work, capsys, monkeypatch):
    real = filetypes.convert_in

    def failing(session, name, data):
        if b"nccl" in data:
            raise ValueError("engine bug")
        return real(session, name, data)

    monkeypatch.setattr(filetypes, "convert_in", failing)
    code, out, err = cli(capsys, "--in-place", "train.py", "run.sh")
    assert code == 2
    assert "train.py: internal error: ValueError: engine bug" in err
    assert (work / "train.py").read_bytes() == (FIXTURES / "train.py").read_bytes()
    assert (work / "run.sh").read_bytes() == expected("run.sh")
    with pytest.raises(ValueError):
        main(["--check", "--debug", "train.py"])


def test_file_of_unknown_type_is_exit_2(work, capsys):
    (work / "notes.md").write_text("x.cuda()\n")
    code, _, err = cli(capsys, "--check", "notes.md")
    assert code == 2
    assert "notes.md: not a file type transplant converts" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--check"], "no files or folders given"),
        (["--in-place", "-"], "--in-place cannot be used with -"),
        (["train.py", "-"], "unexpected arguments"),
        (["-", "train.py"], "cannot be combined with other paths"),
        (["--check", "-", "train.py"], "cannot be combined with other paths"),
        (["--check", "--stdin-filename", "x.py", "train.py"], "--stdin-filename is only used with -"),
        (["--check", "-i", "train.py", "-o", "out", "train.py"], "cannot be combined"),
        (["--check", "--diff", "train.py"], "not allowed with argument"),
    ],
)
def test_usage_errors_exit_2(work, capsys, argv, message):
    before = snapshot(work)
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err
    assert snapshot(work) == before


def test_real_subprocess_exit_codes(work):
    assert run_module("--check", "clean.py", cwd=work).returncode == 0
    proc = run_module("--check", "train.py", cwd=work)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines()[0] == "train.py:2:1: TP106 add import torch_npu"
    assert run_module("--check", "nope.py", cwd=work).returncode == 2
    proc = run_module("--in-place", "-q", "only_unsupported.py", "run.sh", cwd=work)
    assert (proc.returncode, proc.stderr) == (1, b"")
    assert (work / "run.sh").read_bytes() == expected("run.sh")


# --------------------------------------------------------------------------- pre-commit


def test_pre_commit_manifest_is_valid():
    clientlib = pytest.importorskip("pre_commit.clientlib")
    hooks = {h["id"]: h for h in clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}
    assert hooks["transplant-check"]["args"] == ["--check"]
    assert hooks["transplant-fix"]["args"] == ["--in-place"]
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert {"python", "jupyter", "shell"} <= set(hook["types_or"])
        assert hook["entry"] == "transplant"
        assert hook["require_serial"] is True


def _hook_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A throw-away git repository holding this checkout's working tree.

    ``pre-commit try-repo`` on a checkout with uncommitted changes clones HEAD and adds the changes
    to *tracked* files only (``git add -u``): files not yet committed would be missing. So the
    hooks are tried from a fresh repository with every file of the working tree (tracked or not,
    minus .gitignore'd ones) committed.
    """
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PRE_COMMIT_COLOR="never",
    )
    env.pop("GIT_DIR", None)
    env.pop("GIT_INDEX_FILE", None)
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    hook_repo = tmp_path / "hook-repo"
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file() and not rel.startswith(("tests/", "bench/")):
            (hook_repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, hook_repo / rel)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "hooks"]):
        subprocess.run(cmd, cwd=hook_repo, env=env, check=True)
    return hook_repo, env


def _user_repo(tmp_path: Path, env: dict[str, str]) -> Path:
    user = tmp_path / "user-repo"
    (user / "scripts").mkdir(parents=True)
    (user / "train.py").write_bytes(b"import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    (user / "clean.py").write_bytes(b"print('cuda or cpu')\n")
    (user / "scripts/run.sh").write_bytes(b"export CUDA_VISIBLE_DEVICES=0\n")
    (user / "Dockerfile").write_bytes(b"FROM python:3.11\nENV CUDA_VISIBLE_DEVICES=0\n")
    # tagged toml by identify, but not a file transplant converts: the hooks' `files` keeps it out
    (user / "uv.lock").write_bytes(b'version = 1\n[[package]]\nname = "cuda"\n')
    subprocess.run(["git", "init", "-q"], cwd=user, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=user, env=env, check=True)
    return user


def _pre_commit(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    output = proc.stdout + proc.stderr
    offline = (
        r"Could not find a version that satisfies|No matching distribution found|NewConnectionError|"
        r"Max retries exceeded|Temporary failure in name resolution|Network is unreachable"
    )
    if proc.returncode == 3 and re.search(offline, output):
        pytest.skip("pre-commit could not install the hook's environment (no package index?):\n" + output[-2000:])
    return proc


@pytest.mark.slow
def test_pre_commit_try_repo_check_hook(tmp_path):
    pytest.importorskip("pre_commit")
    hook_repo, env = _hook_repo(tmp_path)
    user = _user_repo(tmp_path, env)
    proc = _pre_commit(["try-repo", str(hook_repo), "transplant-check", "--all-files"], user, env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "train.py:1:1: TP106 add import torch_npu" in output
    assert "train.py:2:31: TP102 .cuda() -> .npu()" in output
    assert "scripts/run.sh:1:8: TP105" in output
    assert "Dockerfile:2:5: TP105 CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES" in output
    assert "clean.py:" not in output and "uv.lock" not in output
    assert (user / "train.py").read_bytes() == b"import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


@pytest.mark.slow
def test_pre_commit_config_with_both_hooks(tmp_path):
    """The hooks as a user's .pre-commit-config.yaml names them: check fails, fix converts, then all pass."""
    pytest.importorskip("pre_commit")
    hook_repo, env = _hook_repo(tmp_path)
    user = _user_repo(tmp_path, env)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    (user / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n"
        "      - id: transplant-check\n      - id: transplant-fix\n"
    )
    subprocess.run(["git", "add", "-A"], cwd=user, env=env, check=True)
    first = _pre_commit(["run", "--all-files"], user, env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert (user / "train.py").read_bytes() == b"import torch\nimport torch_npu\nmodel = torch.nn.Linear(2, 2).npu()\n"
    assert (user / "scripts/run.sh").read_bytes() == b"export ASCEND_RT_VISIBLE_DEVICES=0\n"
    assert (user / "Dockerfile").read_bytes() == b"FROM python:3.11\nENV ASCEND_RT_VISIBLE_DEVICES=0\n"
    subprocess.run(["git", "add", "-A"], cwd=user, env=env, check=True)
    second = _pre_commit(["run", "--all-files"], user, env)
    assert second.returncode == 0, second.stdout + second.stderr


def test_checking_files_without_cuda_code_loads_no_parser(tmp_path: Path) -> None:
    # a commit touching only plain files should not pay for loading libcst (or the schema checker)
    plain = tmp_path / "plain.py"
    plain.write_text("import os\nprint(os.getcwd())\n", encoding="utf-8")
    cuda = tmp_path / "gpu.py"
    cuda.write_text("import torch\ntorch.cuda.synchronize()\n", encoding="utf-8")
    probe = (
        "import sys\nfrom transplant.cli import main\ncode = main(['--check', sys.argv[1]])\n"
        "print(code, 'libcst' in sys.modules, 'jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(plain)], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.split()[-3:] == ["0", "False", "False"], out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-c", probe, str(cuda)], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.split()[-3:] == ["1", "True", "False"], out.stdout + out.stderr


def test_a_worker_that_dies_costs_only_its_file(tmp_path, capsys, monkeypatch):
    cuda = b"import torch\ntorch.cuda.synchronize()\n"
    for i in range(pool.POOL_MIN_FILES + 4):
        (tmp_path / ("bad3.py" if i == 3 else f"m{i:02}.py")).write_bytes(cuda + (b"# boom\n" if i == 3 else b""))
    real = filetypes.convert_in

    def dies_on_bad(session, name, data):
        if b"# boom" in data:
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        return real(session, name, data)

    monkeypatch.setattr(filetypes, "convert_in", dies_on_bad)  # the forked workers inherit it
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "--check", "-j", "2", ".")
    assert code == 2
    assert "bad3.py: not converted: the converter's worker process died on this file" in err
    paths = {m["path"] for m in parse_lines(out)}
    assert paths == {f"m{i:02}.py" for i in range(pool.POOL_MIN_FILES + 4) if i != 3}
