"""Repository mode as the user sees it (transplant/console.py): the plain summary, warnings, and
the progress bar a terminal gets for a long run."""

from __future__ import annotations

import os
import sys

import pytest

from transplant.cli import main

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(CUDA)
    (root / "notes.txt").write_text("plain\n")
    (root / "data[1]").symlink_to("/etc/hostname")  # a link out of the input: a warning with brackets
    return root


def test_summary_is_plain_aligned_text(project, tmp_path, capsys):
    assert main(["-i", str(project), "-o", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    result = tmp_path / "out" / "proj_msft"
    assert out.splitlines() == [
        "transplant summary",
        "  files converted                                    1",
        "  files copied unchanged                             2",
        "  changes                                            2",
        "  errors (rewrite by hand; see unsupported_op.xlsx)  0",
        "  warnings (check or port by hand)                   0",
        "  notes                                              0",
        "  files that could not be parsed                     0",
        f"result: {result}",
    ]
    assert (
        err == "warning: data[1]: symbolic link to /etc/hostname (outside the input) copied as a link, not followed\n"
    )


def test_summary_counts_findings_by_level_and_by_kind(tmp_path, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.py").write_text(
        "import torch\nimport pycuda.autoinit\ntorch.cuda.nccl.all_reduce([x])\n"
        "torch.cuda.nccl.all_reduce([y])\ny = torch.cdist(a, b)\n"
    )
    (root / "b.py").write_text("import pycuda.driver as drv\n")
    # (PyTorch 2.8: the reference tool's list has torch.cdist, as a note; torch_npu's 2.12 list has not)
    assert main(["-j", "1", "-i", str(root), "-o", str(tmp_path / "out"), "--pytorch-version", "2.8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  errors (rewrite by hand; see unsupported_op.xlsx)  4" in out
    assert "  warnings (check or port by hand)                   0" in out
    assert "  notes                                              1" in out
    kinds = out[out.index("findings by kind") + 1 : -1]
    # most errors first; each kind with its count per level
    assert kinds == [
        "  TP201 no-npu-counterpart  2 errors",
        "  TP206 cuda-library        2 errors",
        "  TP202 unsupported-on-npu  1 note",
    ]


def test_quiet_prints_nothing(project, tmp_path, capsys):
    assert main(["-q", "-i", str(project), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr() == ("", "")


def test_a_terminal_gets_coloured_warnings_with_their_brackets_kept(project, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["-i", str(project), "-o", str(tmp_path / "out")]) == 0
    _, err = capsys.readouterr()
    assert "\x1b[" in err  # coloured
    assert "data[1]: symbolic link to /etc/hostname" in err  # not taken for markup


def test_a_terminal_shows_a_progress_bar_only_for_many_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("TERM", "xterm-256color")
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    for i in range(3):
        (small / f"m{i}.py").write_text(CUDA)
    for i in range(20):
        (large / f"m{i}.py").write_text(CUDA)
    assert main(["-j", "1", "-i", str(small), "-o", str(tmp_path / "out")]) == 0
    assert "converting" not in capsys.readouterr().err
    assert main(["-j", "1", "-i", str(large), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "converting" in err and "20/20" in err
    assert sorted(os.listdir(tmp_path / "out")) == ["large_msft", "small_msft"]
