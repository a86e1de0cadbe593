"""The run's log (transplant/reports/log.py): its line format, and its rotation at 1 MB into at most
ten files, laid out as a rotating log lays them out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from transplant.cli import main
from transplant.reports.log import write_log

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) .*$")


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_small_log_is_one_file_in_the_usual_format(tmp_path):
    log = tmp_path / "run.txt"
    written = write_log(log, [("INFO", "first"), ("WARNING", "careful: ü"), ("ERROR", "a.py: not converted")])
    assert written == [log] and sorted(p.name for p in tmp_path.iterdir()) == ["run.txt"]
    got = lines(log)
    assert all(LINE.match(line) for line in got)
    assert [line.split(" ", 2)[2] for line in got] == ["INFO first", "WARNING careful: ü", "ERROR a.py: not converted"]


def test_rotation_keeps_the_newest_lines_in_the_log_and_older_ones_in_numbered_backups(tmp_path):
    log = tmp_path / "run.txt"
    entries = [("INFO", f"entry {i:03d} " + "x" * 60) for i in range(100)]  # about 95 bytes a line
    written = write_log(log, entries, max_bytes=1000, backups=3)
    assert written == [log, tmp_path / "run.txt.1", tmp_path / "run.txt.2", tmp_path / "run.txt.3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.txt", "run.txt.1", "run.txt.2", "run.txt.3"]
    sizes = [p.stat().st_size for p in written]
    assert all(size <= 1000 for size in sizes)
    numbers = [[int(line.split("entry ")[1][:3]) for line in lines(p)] for p in reversed(written)]
    flat = [n for chunk in numbers for n in chunk]
    assert flat == list(range(flat[0], 100))  # oldest backup .. log: in order, the newest last, none lost inside
    assert flat[0] > 0  # what did not fit into four files is dropped, the oldest first


def test_a_line_longer_than_the_limit_gets_a_file_of_its_own(tmp_path):
    log = tmp_path / "run.txt"
    write_log(log, [("INFO", "short"), ("ERROR", "y" * 500), ("INFO", "after")], max_bytes=100, backups=9)
    assert [len(lines(p)) for p in (tmp_path / "run.txt.2", tmp_path / "run.txt.1", log)] == [1, 1, 1]
    assert lines(tmp_path / "run.txt.1")[0].endswith("ERROR " + "y" * 500)


def test_unknown_level_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError):
        write_log(tmp_path / "run.txt", [("DEBUG", "no")])


def test_a_name_that_is_not_utf8_is_logged_with_an_escape(tmp_path):
    log = tmp_path / "run.txt"
    write_log(log, [("WARNING", "caf\udce9.py: cannot copy")])  # a file name os.listdir decoded with surrogates
    assert lines(log)[0].endswith("WARNING caf\\udce9.py: cannot copy")


def test_repository_run_logs_every_record(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n")
    (project / "bad.py").write_text("import torch\ntorch.cuda.synchronize(\n")  # does not parse
    assert main(["-q", "-i", str(project), "-o", str(tmp_path / "out")]) == 0
    got = lines(tmp_path / "out" / "proj_msft" / "msFmkTranspltlog.txt")
    assert all(LINE.match(line) for line in got)
    messages = [line.split(" ", 2)[2] for line in got]
    assert messages[0] == "INFO transplant run: 1 files converted, 1 copied"
    assert "INFO train.py:2:20: TP102 .cuda() -> .npu()" in messages
    assert any(m.startswith("ERROR bad.py: not converted:") for m in messages)
