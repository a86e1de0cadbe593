"""A file that takes long to convert is noted on stderr once (transplant/slowfiles.py). No test here
depends on how fast the machine is: a threshold of 0 notes every file at once, and the watcher's
note is awaited, not timed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from transplant import pool, slowfiles
from transplant.cli import main

CUDA = b"import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()"  # 3 lines, the last unended


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_bytes(CUDA)
    (root / "plain.py").write_bytes(b"print('no device code')\n")
    return root


@pytest.mark.parametrize("mode", ["check", "repository"])
def test_every_file_is_noted_once_with_a_threshold_of_0(project, tmp_path, capsys, monkeypatch, mode):
    monkeypatch.setattr(slowfiles, "SLOW_FILE_SECONDS", 0)
    argv = ["--check", str(project)] if mode == "check" else ["-i", str(project), "-o", str(tmp_path / "out")]
    main([*argv, "-j", "1"])
    err = capsys.readouterr().err
    name = str(project / "train.py") if mode == "check" else "train.py"
    assert err.count(f"transplant: still converting {name} (3 lines)\n") == 1, err
    assert err.count("still converting") <= 2, err  # plain.py too, unless the pre-filter settled it first


@pytest.mark.parametrize("mode", ["check", "repository"])
def test_no_note_when_quiet_or_fast(project, tmp_path, capsys, monkeypatch, mode):
    argv = ["--check", str(project)] if mode == "check" else ["-i", str(project), "-o", str(tmp_path / "out")]
    main([*argv, "-j", "1"])  # the default threshold: these files take far less
    assert "still converting" not in capsys.readouterr().err
    monkeypatch.setattr(slowfiles, "SLOW_FILE_SECONDS", 0)
    main([*argv, "-j", "1", "-q", "--force"] if mode == "repository" else [*argv, "-j", "1", "-q"])
    assert "still converting" not in capsys.readouterr().err


def test_the_watcher_notes_a_file_that_is_still_converting(project, capsys, monkeypatch):
    """A conversion that goes on until the watcher has spoken: noted once, then the run finishes."""
    (project / "plain.py").unlink()  # one file: the one the watcher must note
    noted = threading.Event()
    real_note, real_convert = slowfiles._note, pool.convert_in

    def note(path, data):
        real_note(path, data)
        noted.set()

    def slow_convert(*args, **kwargs):
        assert noted.wait(120), "the watcher never noted the file"  # a bound only a hang reaches
        return real_convert(*args, **kwargs)

    monkeypatch.setattr(slowfiles, "_note", note)
    monkeypatch.setattr(pool, "convert_in", slow_convert)
    monkeypatch.setattr(slowfiles, "SLOW_FILE_SECONDS", 0.01)
    out = project.parent / "out"
    assert main(["-i", str(project), "-o", str(out), "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("transplant: still converting") == 1 and "(3 lines)" in err
    assert b"torch_npu" in (out / "proj_msft" / "train.py").read_bytes()
