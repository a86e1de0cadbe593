"""Issue 25: Ctrl-C (SIGINT to the process group) and SIGTERM (to the parent alone, as `timeout` and
container stops send it) end every mode that runs a worker pool at once, whatever is in flight.

Each run's workers are stuck for good in the file they convert (the test's driver replaces the
conversion with an endless sleep, which forked workers inherit): a parent that waited for its
workers would never exit, so the bound below fails such a run on any machine, fast or slow. The
signal is sent only once the run is stuck in a file, so its handlers are set whatever the load; no
test here asserts how fast the run stops (a busy machine may be slow; that is for bench/)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transplant import runner

# Bounds that only a hang reaches: a busy machine may be slow, and the tests assert what happens, not how fast
BOUND = 120  # seconds from the signal to the exit: a parent that waits for its endless workers never exits
HANG = 300  # seconds for the run to reach its stuck file (start-up and imports on a loaded machine)
CUDA = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
LINE = "transplant: interrupted; no result was written"

DRIVER = """
import os, sys, time
from pathlib import Path

import transplant.filemodes
import transplant.pool

marks, parent = Path(sys.argv[1]), os.getpid()


def stuck(*args, **kwargs):  # a file whose conversion never ends (in a worker, or in the parent with -j 1)
    (marks / str(os.getpid())).touch()
    while True:
        time.sleep(60)


transplant.pool.convert_in = transplant.filetypes.convert_in = stuck
from transplant.cli import main

raise SystemExit(main(sys.argv[2:]))
"""

MODES = {
    "repository": ["-i", "{proj}", "-o", "{out}"],
    "distributed": ["-i", "{proj}", "-o", "{out}", "distributed", "-m", "train.py"],
    "check": ["--check", "{proj}"],
    "diff": ["--diff", "{proj}"],
    "in-place": ["--in-place", "{proj}"],
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA + "model = torch.nn.Linear(2, 2).cuda()\n")
    for i in range(24):  # above the size at which a run uses workers (pool.POOL_MIN_FILES)
        (proj / f"m{i:02}.py").write_text(CUDA)
    return proj


def _run_until_stuck(tmp_path: Path, project: Path, args: list[str], jobs: str, busy: int):
    """Start the driver; return it once ``busy`` processes are stuck in a file (every handler is set by then)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "driver.py").write_text(DRIVER)
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(marks), "-j", jobs, "-q", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    deadline = time.monotonic() + HANG  # a bound for a hang only: a busy machine may take long to start
    while len(list(marks.iterdir())) < busy and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"the run ended before it was stuck: {proc.communicate()}")
    stuck = [int(p.name) for p in marks.iterdir()]
    if len(stuck) < busy:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the run never started converting")
    return proc, stuck


def _stop(proc: subprocess.Popen, signum: int) -> bytes:
    try:
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)  # Ctrl-C: the terminal signals the whole process group
        else:
            proc.send_signal(signum)  # `timeout`, a cancelled job: the parent alone
        try:
            _, err = proc.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail("the parent waited for the files its workers were converting")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_stop_signal_ends_the_run_and_its_workers_at_once(tmp_path, project, mode, signum):
    out = tmp_path / "out"
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    args = [a.format(proj=project, out=out) for a in MODES[mode]]
    proc, workers = _run_until_stuck(tmp_path, project, args, "2", busy=2)
    assert proc.pid not in workers  # -j 2: the workers convert, the parent waits for them
    err = _stop(proc, signum)
    assert proc.returncode == 128 + signum
    assert err.decode().strip() == LINE  # one line, no traceback from the parent or a worker
    assert not any(_alive(pid) for pid in workers)
    if mode in ("repository", "distributed"):
        assert os.listdir(out) == []  # no result, no staging folder
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("mode", ["repository", "check"])
def test_a_stop_signal_ends_an_in_process_run(tmp_path, project, mode, signum):
    """-j 1: the parent itself is in the middle of a file when the signal comes."""
    out = tmp_path / "out"
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    args = [a.format(proj=project, out=out) for a in MODES[mode]]
    proc, stuck = _run_until_stuck(tmp_path, project, args, "1", busy=1)
    assert stuck == [proc.pid]
    err = _stop(proc, signum)
    assert proc.returncode == 128 + signum
    assert err.decode().strip() == LINE
    if mode == "repository":
        assert os.listdir(out) == []
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before


def test_a_killed_run_leaves_only_staging_which_the_next_run_removes(tmp_path, project):
    out = tmp_path / "out"
    proc, _ = _run_until_stuck(tmp_path, project, ["-i", str(project), "-o", str(out)], "1", busy=1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    stale = list(out.glob(".proj_msft.*.partial"))
    assert len(stale) == 1 and not (out / "proj_msft").exists()

    # a run that is still alive keeps its staging folder; a dead one's is removed
    alive = out / f".proj_msft.{os.getpid()}.keep0000.partial"
    alive.mkdir()
    runner.remove_stale_staging(out)
    assert not stale[0].exists() and alive.exists()


def _initialized(proc: subprocess.Popen) -> bool:
    """Send LSP's initialize request; True once the server answers (its signal handling is set up)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    ).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    answer = b""
    deadline = time.monotonic() + HANG
    while b'"id":1' not in answer.replace(b" ", b"") and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return False
            answer += chunk
    return b'"id":1' in answer.replace(b" ", b"")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_language_server_stops_on_a_signal(signum):
    pytest.importorskip("pygls")
    proc = subprocess.Popen(
        [sys.executable, "-m", "transplant", "lsp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert _initialized(proc), "the server did not answer initialize"
        proc.send_signal(signum)
        try:
            _, err = proc.communicate(timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail("the language server did not stop")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum
    assert b"Traceback" not in err
