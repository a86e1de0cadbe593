"""The process pool gives the same result as the in-process run, and streams with bounded memory.

-j 1 and -j 2 must write the same bytes for every file of the result and the same reports (the
log differs only in its timestamps, the workbook only in the time stamped into its metadata).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import openpyxl
import pytest

from conftest import REPO, cached_ruleset
from transplant import pool as workers, runner, walk
from transplant.session import Session

sys.path.insert(0, str(REPO / "bench"))
from synth import generate  # noqa: E402

EXAMPLE = REPO / "examples" / "mnist_cuda"
XLSX = "unsupported_op.xlsx"
LOG = "msFmkTranspltlog.txt"
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", re.MULTILINE)


def transplant(src: Path, out: Path, jobs: int) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "transplant", "-i", str(src), "-o", str(out), "-q", "-j", str(jobs)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out / f"{src.name}_msft"


def files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def sheets(path: Path) -> dict[str, list[tuple]]:
    wb = openpyxl.load_workbook(path)
    return {ws.title: [tuple(c.value for c in row) for row in ws.iter_rows()] for ws in wb.worksheets}


def assert_same_result(a: Path, b: Path) -> None:
    fa, fb = files(a), files(b)
    assert sorted(fa) == sorted(fb)
    for rel, pa in fa.items():
        pb = fb[rel]
        if pa.is_symlink():
            assert os.readlink(pa) == os.readlink(pb), rel
        elif rel == XLSX:
            assert sheets(pa) == sheets(pb)
        elif rel == LOG:
            assert STAMP.sub("", pa.read_text()) == STAMP.sub("", pb.read_text())
        else:
            assert pa.read_bytes() == pb.read_bytes(), rel
            assert pa.stat().st_mode == pb.stat().st_mode, rel


def test_example_project_same_with_one_or_two_jobs(tmp_path: Path) -> None:
    one = transplant(EXAMPLE, tmp_path / "one", 1)
    two = transplant(EXAMPLE, tmp_path / "two", 2)
    assert_same_result(one, two)
    assert (one / "change_list.csv").read_bytes() == (two / "change_list.csv").read_bytes()
    assert len((one / "change_list.csv").read_text().splitlines()) > 5  # there are changes to compare


def _synthetic(root: Path) -> Path:
    src = root / "synthetic"
    counts = generate(src, 60, seed=7)
    assert counts["cuda"] >= 5 and counts["plain"] >= 20
    # the awkward cases: a file that does not parse, one that is not UTF-8, a symlink, a script
    (src / "broken.py").write_text("import torch\ntorch.cuda.synchronize(\n", encoding="utf-8")
    (src / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(1).cuda()  # \xe9\n")
    (src / "link.py").symlink_to("broken.py")
    script = src / "train.sh"
    script.write_text("#!/bin/sh\nCUDA_VISIBLE_DEVICES=0 python train.py\n", encoding="utf-8")
    script.chmod(0o755)
    return src


def test_synthetic_repository_same_with_one_or_two_jobs(tmp_path: Path) -> None:
    src = _synthetic(tmp_path)
    one = transplant(src, tmp_path / "one", 1)
    two = transplant(src, tmp_path / "two", 2)
    assert_same_result(one, two)
    rows = (one / "change_list.csv").read_text().splitlines()
    assert len(rows) > 20 and any(r.startswith("train.sh,") for r in rows)
    assert (one / "train.sh").stat().st_mode & 0o111


class _CountingPool:
    """A real pool that records how many submitted chunks have not been handed back yet."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool
        self.submitted = 0

    def submit(self, fn, *args):
        self.submitted += 1
        return self.pool.submit(fn, *args)


def test_results_stream_in_order_with_bounded_submission(tmp_path: Path) -> None:
    src = _synthetic(tmp_path)
    session = Session(cached_ruleset())
    entries = [e for e in walk.walk(src, lambda message: None) if e.kind == "file"]
    jobs = [
        workers.Job(e.rel, str(src / e.rel))
        for e in entries
        if not e.rel.endswith((".md", ".png", ".txt", ".yaml", ".json"))
    ]
    window = 2
    seen: list[str] = []
    most = 0
    with ProcessPoolExecutor(max_workers=2, initializer=workers.init_worker, initargs=(session,)) as executor:
        pool = _CountingPool(executor)
        for result in workers._ordered(
            pool, session, workers._work, jobs, chunk=1, window=window, screen=workers._screen
        ):
            seen.append(result.path)
            # chunks submitted but not yet handed back (the one being yielded counts as handed back)
            most = max(most, pool.submitted - sum(1 for path in seen if path in _heavy(jobs, session)))
    assert seen == [job[0] for job in jobs]
    assert pool.submitted > window  # the work did not fit in one window
    assert most <= window + 1


def _heavy(jobs, session, _cache: dict = {}) -> set[str]:  # noqa: B006  (a cache across calls)
    key = id(jobs)
    if key not in _cache:
        _cache[key] = {job.rel for job in jobs if workers._screen(session, job)[0] is not None}
    return _cache[key]


@pytest.mark.parametrize("jobs", [1, 2])
def test_converted_bytes_are_not_kept_after_writing(tmp_path: Path, jobs: int) -> None:
    src = _synthetic(tmp_path)
    config = runner.Config(input=src, output=tmp_path / f"out{jobs}", jobs=jobs, progress=False)
    summary = runner.run(config, cached_ruleset())
    converted = [r for r in summary.results if r.new is not None]
    assert converted and all(r.new == b"" for r in converted)
    assert summary.changed_files == len(converted)
