"""Issue 6: transplant never loses or damages user files, never writes outside its output, and
explains every failure in one line (``transplant: error: ...``) with a non-zero exit status."""

from __future__ import annotations

import ast
import builtins
import errno
import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from transplant import pool, runner
from transplant.cli import main
from transplant.nesting import MAX_BRACKETS, MAX_DEPTH, nesting_error

from conftest import FIXTURES

RULES = FIXTURES / "robustness" / "rules"
CUDA = b"import torch\nx = torch.cuda.is_available()\n"
REPORTS = {"change_list.csv", "unsupported_op.xlsx", "msFmkTranspltlog.txt"}


def snapshot(root: Path) -> dict[str, str]:
    """Every entry below root (links not followed) with its content hash or link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main([*args, "-j", "1"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("transplant: error: "), err
    assert "Traceback" not in err
    return lines[0]


def no_staging_left(out: Path) -> bool:
    return not list(out.glob(".*.partial")) and not list(out.glob(".*.old"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "pkg").mkdir(parents=True)
    (p / "train.py").write_bytes(CUDA)
    (p / "pkg" / "util.py").write_bytes(b"def f(x):\n    return x.cuda()\n")
    (p / "README.md").write_text("hello\n")
    return p


# --------------------------------------------------------------------------- paths


def test_missing_input(tmp_path, capsys):
    rc, _, err = run(capsys, "-i", str(tmp_path / "nope"), "-o", str(tmp_path / "out"))
    assert rc == 2
    assert "does not exist" in one_error_line(err)
    assert not (tmp_path / "out").exists()


def test_unreadable_input_is_refused(project, tmp_path, capsys, monkeypatch):
    if os.geteuid() != 0:  # a real permission check where permissions are enforced
        project.chmod(0)
        try:
            rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
        finally:
            project.chmod(0o755)
    else:  # root reads everything: simulate what the check sees for an unreadable folder
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == project else real(p, mode, **kw))
        rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
    assert rc == 2
    assert "not readable" in one_error_line(err)
    assert not (tmp_path / "out").exists()


def test_unreadable_file_inside_is_reported_and_run_continues(project, tmp_path, capsys, monkeypatch):
    secret = project / "secret.py"
    secret.write_bytes(CUDA)
    real_open = builtins.open

    def fake_open(file, *a, **kw):
        if str(file) == str(secret):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(runner.shutil, "copy2", _failing_copy(secret, runner.shutil.copy2))
    rc, out, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
    assert rc == 0, err
    result = tmp_path / "out" / "proj_msft"
    assert (result / "train.py").read_bytes() != CUDA  # the rest was converted
    assert not (result / "secret.py").exists()
    assert "secret.py" in out and "Traceback" not in out + err
    # counted once: it could not be read, and then not copied either (one file, not two)
    assert re.search(r"files that could not be parsed +1\n", out), out
    assert err.count("secret.py") == 1, err  # the one warning: cannot copy
    rc, _, _ = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "--force", "--strict-exit")
    assert rc == 1  # CI's choice: a file that could not be converted fails the run


# --------------------------------------------------------------------------- exit status and empty input


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    "files, said",
    [({}, "is empty"), ({"README.md": "hi\n", "run.sh": "nvidia-smi\n"}, "has no Python file or notebook")],
    ids=["empty", "no-python"],
)
def test_an_input_with_nothing_to_convert_is_warned(tmp_path, capsys, files, said, strict):
    src = tmp_path / "proj"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    rc, out, err = run(capsys, "-i", str(src), "-o", str(tmp_path / "out"), *(["--strict-exit"] if strict else []))
    assert rc == (1 if strict else 0)
    assert err == f"warning: input {src} {said}\n"
    assert (tmp_path / "out" / "proj_msft" / "change_list.csv").exists()  # the (empty) result is written


def test_strict_exit_is_1_only_for_files_that_could_not_be_converted(project, tmp_path, capsys):
    rc, _, _ = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "--strict-exit")
    assert rc == 0  # converted, with findings: a complete run
    (project / "broken.py").write_bytes(b"def f(:\n    x.cuda()\n")
    rc, out, _ = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "--force")
    assert rc == 0 and re.search(r"files that could not be parsed +1\n", out)
    rc, _, _ = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "--force", "--strict-exit")
    assert rc == 1


def _failing_copy(path: Path, real):
    def copy(src, dst, **kw):
        if str(src) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(src))
        return real(src, dst, **kw)

    return copy


def test_output_inside_input_is_refused(project, capsys):
    before = snapshot(project)
    rc, _, err = run(capsys, "-i", str(project), "-o", str(project / "out"))
    assert rc == 2
    assert "inside the input" in one_error_line(err)
    assert snapshot(project) == before


def test_output_through_a_link_into_the_input_is_refused(project, tmp_path, capsys):
    os.symlink(project / "pkg", tmp_path / "sneaky")
    before = snapshot(project)
    rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "sneaky"))
    assert rc == 2
    assert "inside the input" in one_error_line(err)
    assert snapshot(project) == before


def test_input_inside_result_folder_is_refused_even_with_force(tmp_path, capsys):
    inner = tmp_path / "out" / "proj_msft" / "proj"
    inner.mkdir(parents=True)
    (inner / "a.py").write_bytes(CUDA)
    before = snapshot(tmp_path / "out")
    rc, _, err = run(capsys, "-i", str(inner), "-o", str(tmp_path / "out"), "--force")
    assert rc == 2
    assert "would delete the input" in one_error_line(err)
    assert snapshot(tmp_path / "out") == before


def test_output_is_a_file(project, tmp_path, capsys):
    f = tmp_path / "out"
    f.write_text("keep me")
    rc, _, err = run(capsys, "-i", str(project), "-o", str(f))
    assert rc == 2
    assert "not a folder" in one_error_line(err)
    assert f.read_text() == "keep me"
    rc, _, err = run(capsys, "-i", str(project), "-o", str(f / "below"))
    assert rc == 2
    assert str(f) in one_error_line(err)


def test_existing_result_needs_force_and_force_replaces_it(project, tmp_path, capsys):
    out = tmp_path / "out"
    old = out / "proj_msft"
    old.mkdir(parents=True)
    (old / "stale.txt").write_text("old result")
    rc, _, err = run(capsys, "-i", str(project), "-o", str(out))
    assert rc == 2
    assert "--force" in one_error_line(err)
    assert (old / "stale.txt").read_text() == "old result"

    rc, _, err = run(capsys, "-q", "-i", str(project), "-o", str(out), "--force")
    assert rc == 0, err
    assert not (old / "stale.txt").exists()
    assert set(snapshot(old)) == set(snapshot(project)) | REPORTS
    assert no_staging_left(out)


def test_force_replaces_a_file_in_the_way(project, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "proj_msft").write_text("a file, not a folder")
    rc, _, err = run(capsys, "-q", "-i", str(project), "-o", str(out), "--force")
    assert rc == 0, err
    assert (out / "proj_msft" / "train.py").exists()
    assert no_staging_left(out)


def test_project_report_names_are_not_clobbered(project, tmp_path, capsys):
    (project / "change_list.csv").write_text("mine\n")
    rc, out, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
    assert rc == 0, err
    result = tmp_path / "out" / "proj_msft"
    assert (result / "change_list.csv").read_text() == "mine\n"
    assert "Operation Type" in (result / "transplant_change_list.csv").read_text()
    assert "written as transplant_change_list.csv" in out


# --------------------------------------------------------------------------- rule files


@pytest.mark.parametrize(
    "name, expected",
    [
        ("not_json.json", "not_json.json:2:22: not valid JSON"),
        ("wrong_type.json", "rules.ArgsModifyRule[0].arg_idx: 'x' is not of type 'integer'"),
        ("missing_key.json", "rules.ArgsModifyRule[0]: 'arg_new' is a required property"),
        ("unknown_kind.json", "unknown rule kind 'RenameEverything'"),
        ("bad_arg_new.json", "rules.ArgsModifyRule[0].arg_new: '1 +' is not a Python expression"),
        ("bad_name.json", "rules.FuncNameModifyRule[0].new_name: 'a.1x' is not a valid Python name"),
        ("keyword_name.json", "rules.FuncNameModifyRule[0].new_name: 'a.class' is not a valid Python name"),
        ("not_object.json", "(top level): [] is not of type 'object'"),
        ("entries_not_list.json", "rules.FuncNameModifyRule: {} is not of type 'array'"),
    ],
)
def test_invalid_rule_file_stops_before_writing(project, tmp_path, capsys, name, expected):
    rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "-r", str(RULES / name))
    assert rc == 2
    line = one_error_line(err)
    assert name in line and expected in line
    assert not (tmp_path / "out").exists()


def test_pathological_rule_files(project, tmp_path, capsys):
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100_000 + "]" * 100_000)
    deep_expr = tmp_path / "deep_expr.json"
    deep_expr.write_text(
        '{"rules": {"ArgsModifyRule": [{"func_name": "a.b", "arg_idx": 0, "arg_new": "%s"}]}}'
        % ("(" * 5000 + "1" + ")" * 5000)
    )
    for path, expected in (
        (deep_json, "nested too deeply"),
        (deep_expr, "arg_new: expression nested too deeply"),
        (tmp_path / "absent.json", "rule file not found"),
        (tmp_path, "is a directory"),
    ):
        rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"), "-r", str(path))
        assert rc == 2
        assert expected in one_error_line(err)
        assert len(err) < 300
    assert not (tmp_path / "out").exists()


def test_rule_file_with_byte_order_mark_is_accepted(project, tmp_path, capsys):
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": "a.c"}]}}')
    rc, _, err = run(capsys, "-q", "-i", str(project), "-o", str(tmp_path / "out"), "-r", str(bom))
    assert rc == 0, err


# --------------------------------------------------------------------------- file contents

CONTENTS = {
    # name: (bytes, converted?)
    "syntax.py": (CUDA + b"def f(:\n", False),
    "py2.py": (b"import torch\nprint 'cuda'\nx = torch.cuda.is_available()\n", False),
    "binary.py": (bytes(range(256)) * 8 + b"cuda", False),
    "nul.py": (b"import torch\x00\nx = torch.cuda.is_available()\n", False),
    "empty.py": (b"", False),
    "undecodable.py": (b"import torch\ns = '\xff\xfe'\nx = torch.cuda.is_available()\n", False),
    "bad_cookie.py": (b"# coding: no-such-codec\n" + CUDA, False),
    "bom.py": (b"\xef\xbb\xbf" + CUDA, True),
    "latin1.py": (b"# -*- coding: latin-1 -*-\nimport torch\ns = 'caf\xe9'\nx = torch.cuda.is_available()\n", True),
    "gbk.py": (b"# coding: gbk\nimport torch\ns = '\xd6\xd0\xce\xc4'\nx = torch.cuda.is_available()\n", True),
    "crlf.py": (b"import torch\r\nx = torch.cuda.is_available()\r\n", True),
    "mixed.py": (b"import torch\r\nx = torch.cuda.is_available()\ny = torch.cuda.device_count()\r\n", True),
    "tabs.py": (b"import torch\nif True:\n\tx = torch.cuda.is_available()\n\tif x:\n\t\ty = 1\n", True),
    "deep_parens.py": (CUDA + b"y = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", False),
    "long_sum.py": (CUDA + b"y = " + b" + ".join([b"1"] * 100_000) + b"\n", False),
    "long_attr.py": (CUDA + b"y = a" + b".b" * 20_000 + b"\n", False),
    # below the guard's limit but deep enough for a RecursionError in the tree walk today
    "recursion.py": (CUDA + b"y = " + b" + ".join([b"1"] * 700) + b"\n", None),
    "large_plain.py": (b"import torch\n" + b"a = 1\n" * 50_000, False),  # no CUDA: copied as is
    "large_converted.py": (CUDA + b"a = 1\n" * 5_000, True),
}


def test_file_contents_are_converted_or_copied_unchanged(tmp_path):
    """Runs in a subprocess: a regression in the nesting guard kills a process with SIGSEGV."""
    src = tmp_path / "proj"
    src.mkdir()
    for name, (data, _) in CONTENTS.items():
        (src / name).write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "transplant", "-i", str(src), "-o", str(tmp_path / "out"), "-j", "2"],
        capture_output=True,
        timeout=120,
    )
    err, out = proc.stderr.decode(), proc.stdout.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err + out
    result = tmp_path / "out" / "proj_msft"
    for name, (data, converted) in CONTENTS.items():
        new = (result / name).read_bytes()
        if converted:
            assert new != data and b"torch_npu" in new, name
        elif converted is False:
            assert new == data, name
        else:  # either, but never damaged
            assert new == data or (b"torch_npu" in new and compile(new, name, "exec", ast.PyCF_ONLY_AST)), name
    for name in ("syntax.py", "py2.py", "binary.py", "undecodable.py", "deep_parens.py", "long_sum.py"):
        assert f"not converted: {name}" in out
    assert (result / "bom.py").read_bytes().startswith(b"\xef\xbb\xbfimport torch\nimport torch_npu\n")
    assert b"caf\xe9" in (result / "latin1.py").read_bytes()
    assert "中文" in (result / "gbk.py").read_bytes().decode("gbk")
    assert (
        result / "crlf.py"
    ).read_bytes() == b"import torch\r\nimport torch_npu\r\nx = torch_npu.npu.is_available()\r\n"
    assert b"\n\tx = torch_npu.npu.is_available()\n\tif x:\n\t\ty = 1\n" in (result / "tabs.py").read_bytes()
    log = (result / "msFmkTranspltlog.txt").read_text()
    assert "deep_parens.py: not converted: source is nested too deeply" in log


@pytest.mark.parametrize(
    "source, deep",
    [
        (b"x = " + b"(" * (MAX_BRACKETS + 1) + b"1" + b")" * (MAX_BRACKETS + 1), True),
        (b"x = " + b"(" * MAX_BRACKETS + b"1" + b")" * MAX_BRACKETS, False),
        (b"x = " + b"-" * (MAX_DEPTH + 1) + b"1", True),
        (b"x = f" + b"()" * (MAX_DEPTH + 1), True),
        (b"x = [" + b", ".join([b"a + b"] * 10_000) + b"]", False),  # wide, not deep
        (b"x = " + b" < ".join([b"a"] * 10_000), False),  # comparisons are one flat node
        (b"s = '" + b"(" * 5000 + b"'  # " + b"[" * 5000 + b"\n", False),  # strings and comments
        (b"x = 1\n" * 5000, False),
    ],
)
def test_nesting_guard(source, deep):
    assert (nesting_error(source) is not None) == deep


# --------------------------------------------------------------------------- trees


def test_tree_edge_cases(tmp_path, capsys):
    outside = tmp_path / "outside"
    (outside / "d").mkdir(parents=True)
    (outside / "target.py").write_bytes(CUDA)
    (outside / "d" / "t.py").write_bytes(CUDA)
    before_outside = snapshot(outside)
    p = tmp_path / "proj"
    for d in ("empty", ".hidden", ".git/objects", "venv/lib", "lib/site-packages/pkg", "données et espaces", "深"):
        (p / d).mkdir(parents=True)
    (p / ".hidden" / "h.py").write_bytes(CUDA)
    (p / ".git" / "objects" / "x.py").write_bytes(CUDA)
    (p / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (p / "venv" / "lib" / "v.py").write_bytes(CUDA)
    (p / "lib" / "site-packages" / "pkg" / "s.py").write_bytes(CUDA)
    (p / "données et espaces" / "mon fichier.py").write_bytes(CUDA)
    (p / "深" / "模型 1.py").write_bytes(CUDA)
    os.symlink(outside / "target.py", p / "link_file.py")
    os.symlink(outside / "d", p / "link_dir")
    os.symlink("loop_b", p / "loop_a")
    os.symlink("loop_a", p / "loop_b")
    os.symlink("..", p / "empty" / "up")
    os.symlink("missing.py", p / "dangling.py")
    before = snapshot(p)

    rc, out, err = run(capsys, "-i", str(p), "-o", str(tmp_path / "out"))
    assert rc == 0, err
    assert "Traceback" not in out + err
    result = tmp_path / "out" / "proj_msft"
    got = snapshot(result)
    assert set(got) == (set(before) - {".git", ".git/objects", ".git/objects/x.py"}) | REPORTS
    for link in ("link_file.py", "link_dir", "loop_a", "loop_b", "empty/up", "dangling.py"):
        assert got[link] == before[link]  # copied as the same link
    assert "link_file.py: symbolic link" in err and "outside the input" in err
    assert snapshot(outside) == before_outside and snapshot(p) == before
    converted = {"深/模型 1.py", "données et espaces/mon fichier.py", ".hidden/h.py"}
    for rel in converted:
        assert got[rel] != before[rel], rel
    for rel in ("venv/lib/v.py", "lib/site-packages/pkg/s.py"):
        assert got[rel] == before[rel], rel


# --------------------------------------------------------------------------- system errors


def test_disk_full_while_writing_is_one_line_naming_the_path(project, tmp_path, capsys, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
    assert rc != 0
    line = one_error_line(err)
    assert "No space left on device" in line
    assert str(tmp_path / "out" / "proj_msft") in line
    assert not (tmp_path / "out" / "proj_msft").exists() and no_staging_left(tmp_path / "out")


def test_disk_full_while_copying_stops_the_run(project, tmp_path, capsys, monkeypatch):
    def full(src, dst, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner.shutil, "copy2", full)
    rc, _, err = run(capsys, "-i", str(project), "-o", str(tmp_path / "out"))
    assert rc != 0
    assert "README.md: No space left on device" in one_error_line(err)
    assert not (tmp_path / "out" / "proj_msft").exists() and no_staging_left(tmp_path / "out")


def test_unwritable_output_is_one_line_naming_the_path(project, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    if os.geteuid() != 0:
        out.chmod(0o500)
    else:  # root writes everywhere: simulate the refusal
        real_mkdir = os.mkdir

        def mkdir(path, *a, **kw):
            if str(path).startswith(str(out)):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_mkdir(path, *a, **kw)

        monkeypatch.setattr(os, "mkdir", mkdir)
    try:
        rc, _, err = run(capsys, "-i", str(project), "-o", str(out))
    finally:
        out.chmod(0o755)
    assert rc != 0
    line = one_error_line(err)
    assert str(out) in line and "Permission denied" in line
    assert list(out.iterdir()) == []


def test_debug_shows_the_traceback(project, tmp_path, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(OSError):
        main(["-i", str(project), "-o", str(tmp_path / "out"), "-j", "1", "--debug", "-q"])


# --------------------------------------------------------------------------- converter failures


def _failing_convert(monkeypatch, action):
    """Make the converter fail on files named bad*.py (workers are forked: they inherit this)."""
    real = pool.convert_in

    def convert_in(session, rel, data):
        if Path(rel).name.startswith("bad"):
            action()
        return real(session, rel, data)

    monkeypatch.setattr(pool, "convert_in", convert_in)


def _bigger_project(root: Path, bad: set[int]) -> Path:
    for i in range(24):
        name = f"bad{i}.py" if i in bad else f"m{i:02}.py"
        (root / name).write_bytes(CUDA)
    return root


def _bug():
    raise ValueError("engine bug")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_engine_bug_on_one_file_does_not_stop_the_run(tmp_path, capsys, monkeypatch, jobs):
    (tmp_path / "proj").mkdir()
    src = _bigger_project(tmp_path / "proj", {5})
    _failing_convert(monkeypatch, _bug)
    rc = main(["-i", str(src), "-o", str(tmp_path / "out"), "-j", jobs])
    out = capsys.readouterr().out
    assert rc == 0
    result = tmp_path / "out" / "proj_msft"
    assert (result / "bad5.py").read_bytes() == CUDA  # copied unchanged
    assert all(b"torch_npu.npu" in (result / f"m{i:02}.py").read_bytes() for i in range(24) if i != 5)
    assert "not converted: bad5.py: internal error: ValueError: engine bug" in out
    assert "bad5.py" in (result / "msFmkTranspltlog.txt").read_text()
    with pytest.raises(ValueError):  # --debug: the traceback, as before
        main(["-i", str(src), "-o", str(tmp_path / "out2"), "-j", jobs, "--debug", "-q"])


def test_a_worker_that_dies_costs_only_its_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "proj").mkdir()
    src = _bigger_project(tmp_path / "proj", {3, 17})
    _failing_convert(monkeypatch, lambda: os.kill(os.getpid(), signal.SIGKILL))  # as the OOM killer would
    rc = main(["-i", str(src), "-o", str(tmp_path / "out"), "-j", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    result = tmp_path / "out" / "proj_msft"
    for i in (3, 17):
        assert (result / f"bad{i}.py").read_bytes() == CUDA
        assert f"not converted: bad{i}.py: the converter's worker process died on this file" in out
    assert all(b"torch_npu.npu" in (result / f"m{i:02}.py").read_bytes() for i in range(24) if i not in (3, 17))
    assert sorted(p.name for p in result.iterdir()) == sorted([*(p.name for p in src.iterdir()), *REPORTS])


# --------------------------------------------------------------------------- interruption
# Ctrl-C, SIGTERM and SIGKILL in the middle of a run: tests/test_interrupt.py


# --------------------------------------------------------------------------- the result folder (issue 19)
# Created with the mode the user's umask gives any new folder (not mkdtemp's 0700); staging folders of
# killed runs are removed by the next run into the same output folder, whatever project they were of.


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has this id now (barring reuse within the test)


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_result_folder_has_the_mode_of_a_plain_mkdir(tmp_path, project, capsys, umask):
    old = os.umask(umask)
    try:
        rc = main(["-i", str(project), "-o", str(tmp_path / "out"), "-j", "1", "-q"])
    finally:
        os.umask(old)
    assert rc == 0
    result = tmp_path / "out" / "proj_msft"
    assert stat.S_IMODE(result.stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((result / "pkg").stat().st_mode) == 0o777 & ~umask  # as its subfolders


def test_stale_staging_of_any_project_is_removed_live_and_foreign_kept(tmp_path, project, capsys):
    out = tmp_path / "out"
    out.mkdir()
    dead = _dead_pid()
    stale = [
        out / f".proj_msft.{dead}.abcd1234.partial",  # this project, as this version names them
        out / f".other.v2_msft_multi.{dead}.k3_x9q0z.partial",
    ]  # another project, mkdtemp's name
    for path in stale:
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "f.py").write_bytes(CUDA)
    live = out / f".other_msft.{os.getpid()}.0123abcd.partial"  # a run in progress (this process)
    live.mkdir()
    not_ours = [out / f".notes.{dead}.partial", out / f".x.{dead}.abcd1234.partial.bak"]
    not_ours[0].mkdir()
    not_ours[1].write_text("a user's file")
    link = out / f".link.{dead}.abcd1234.partial"
    link.symlink_to(project, target_is_directory=True)

    assert main(["-i", str(project), "-o", str(out), "-j", "1", "-q"]) == 0
    assert not any(path.exists() for path in stale)
    assert live.is_dir() and all(path.exists() for path in not_ours)
    assert link.is_symlink() and (project / "train.py").read_bytes() == CUDA
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["proj_msft", live.name, link.name, *(p.name for p in not_ours)]
    )


def test_staging_names_are_what_the_cleaner_recognises(tmp_path):
    made = runner.make_staging(tmp_path / "p_msft")
    match = runner._STAGING.fullmatch(made.name)
    assert match is not None and match["name"] == "p_msft" and int(match["pid"]) == os.getpid()


# --------------------------------------------------------------------------- file modes


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    pytest.importorskip("transplant.filemodes")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "t.py").write_bytes(CUDA)
    p = tmp_path / "p"
    p.mkdir()
    for name in ("good.py", "deep_parens.py", "long_sum.py", "syntax.py", "binary.py", "crlf.py", "gbk.py"):
        data = CONTENTS.get(name, (CUDA, True))[0]
        (p / name).write_bytes(data)
    os.symlink(tmp_path / "outside" / "t.py", p / "link.py")
    return p


def test_in_place_converts_what_it_can_and_leaves_the_rest_alone(sources, tmp_path, capsys):
    before = snapshot(sources)
    rc = main(["--in-place", str(sources), "-j", "1"])
    cap = capsys.readouterr()
    assert rc == 2  # files that do not parse are input errors in the file modes
    assert "Traceback" not in cap.out + cap.err
    after = snapshot(sources)
    assert set(after) == set(before)  # no temporary files left behind
    for name in ("good.py", "crlf.py", "gbk.py"):
        assert after[name] != before[name], name
    for name in ("deep_parens.py", "long_sum.py", "syntax.py", "binary.py", "link.py"):
        assert after[name] == before[name], name
    assert (tmp_path / "outside" / "t.py").read_bytes() == CUDA  # a link in a folder is not followed
    assert "deep_parens.py:3:1: TP900 not converted: source is nested too deeply" in cap.out + cap.err


def test_check_and_diff_write_nothing_and_fail_in_one_line(sources, tmp_path, capfdbinary):
    # binary capture: the diff of gbk.py is in the file's own encoding
    before = snapshot(sources)
    for mode in ("--check", "--diff"):
        rc = main([mode, str(sources), "-j", "1"])
        cap = capfdbinary.readouterr()
        assert rc != 0 and b"Traceback" not in cap.out + cap.err
        rc = main([mode, str(tmp_path / "missing.py")])
        cap = capfdbinary.readouterr()
        assert rc == 2
        errors = [l for l in cap.err.decode().splitlines() if l.startswith("transplant: error: ")]
        assert errors == [f"transplant: error: {tmp_path / 'missing.py'}: no such file or folder"]
    assert snapshot(sources) == before


def test_in_place_disk_full_leaves_the_file_intact(sources, capsys, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = sources / "good.py"
    rc = main(["--in-place", str(target), "-j", "1"])
    cap = capsys.readouterr()
    assert rc != 0
    assert f"transplant: error: {target}: cannot write: No space left on device" in cap.err.splitlines()
    assert target.read_bytes() == CUDA
    assert sorted(p.name for p in sources.iterdir()) == sorted(snapshot(sources))  # no temporary file


def test_stdin_that_cannot_be_parsed_is_echoed_unchanged(tmp_path):
    pytest.importorskip("transplant.filemodes")
    data = CONTENTS["deep_parens.py"][0]
    proc = subprocess.run([sys.executable, "-m", "transplant", "-"], input=data, capture_output=True, timeout=120)
    assert proc.stdout == data
    assert b"Traceback" not in proc.stderr
    assert b"nested too deeply" in proc.stderr
