"""The result folder and its staging folder (issue 19): created with the mode the user's umask
gives any new folder (not mkdtemp's 0700), and staging folders of killed runs removed by the next
run into the same output folder, whatever project they belonged to."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from transplant import runner
from transplant.cli import main

CUDA = b"import torch\nx = torch.cuda.is_available()\n"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has this id now (barring reuse within the test)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "pkg").mkdir(parents=True)
    (p / "train.py").write_bytes(CUDA)
    (p / "pkg" / "util.py").write_bytes(b"def f(x):\n    return x.cuda()\n")
    return p


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
    stale = [out / f".proj_msft.{dead}.abcd1234.partial",  # this project, as this version names them
             out / f".other.v2_msft_multi.{dead}.k3_x9q0z.partial"]  # another project, mkdtemp's name
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
        ["proj_msft", live.name, link.name, *(p.name for p in not_ours)])


def test_staging_names_are_what_the_cleaner_recognises(tmp_path):
    made = runner.make_staging(tmp_path / "p_msft")
    match = runner._STAGING.fullmatch(made.name)
    assert match is not None and match["name"] == "p_msft" and int(match["pid"]) == os.getpid()
