"""The workbook written by a child forked at the start of a repository run
(transplant/reports/writer_child.py): the same bytes as written in process, and the run writes it
itself when the child is gone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from transplant.reports import writer_child
from transplant.reports.xlsx import PERCENT, Sheet, write_workbook

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the child is forked")

SHEETS = [
    Sheet("Unsupported", ["File", "Line", "Note"], [40, 8, 20], [["x.py", 3, "a < b"], ["y.py", 10, ""]]),
    Sheet("Rates", ["Rate"], [10], [[0.25], [1.0]], styles={(2, 1): PERCENT}),
]


def test_the_child_writes_the_same_bytes(tmp_path: Path):
    write_workbook(tmp_path / "here.xlsx", SHEETS)
    writer_child.start()
    assert writer_child.running()
    assert writer_child.write(tmp_path / "child.xlsx", SHEETS)
    assert not writer_child.running()
    assert (tmp_path / "child.xlsx").read_bytes() == (tmp_path / "here.xlsx").read_bytes()


def test_a_child_that_died_leaves_the_writing_to_the_run(tmp_path: Path):
    writer_child.start()
    assert writer_child._child is not None
    os.kill(writer_child._child[0], signal.SIGKILL)
    assert not writer_child.write(tmp_path / "child.xlsx", SHEETS)
    assert not (tmp_path / "child.xlsx").exists()


def test_stop_ends_a_child_without_a_workbook(tmp_path: Path):
    writer_child.start()
    assert writer_child._child is not None
    pid = writer_child._child[0]
    writer_child.stop()
    assert not writer_child.running()
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(pid, 0)
    assert not writer_child.write(tmp_path / "child.xlsx", SHEETS)  # nothing to hand it to


def test_a_worker_closes_its_copy_of_the_pipe(tmp_path: Path):
    from transplant.config import RuleOptions
    from transplant.pool import init_worker
    from transplant.session import Session, load_rules

    session = Session(load_rules(RuleOptions()))
    writer_child.start()
    assert writer_child._child is not None
    fd = writer_child._child[1]
    worker = os.fork()
    if worker == 0:  # as a pool worker forked from the run
        status = 1
        try:
            init_worker(session)
            try:
                os.fstat(fd)
            except OSError:
                status = 0 if writer_child._child is None else 2
        finally:
            os._exit(status)
    _pid, status = os.waitpid(worker, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    os.fstat(fd)  # the run's own end is open, and the child still writes the workbook
    assert writer_child.write(tmp_path / "child.xlsx", SHEETS)
    write_workbook(tmp_path / "here.xlsx", SHEETS)
    assert (tmp_path / "child.xlsx").read_bytes() == (tmp_path / "here.xlsx").read_bytes()
