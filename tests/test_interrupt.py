"""Issue 25: Ctrl-C (SIGINT to the process group) and SIGTERM (to the parent alone, as `timeout` and
container stops send it) end every mode that runs a worker pool at once, whatever is in flight.

Each run's workers are stuck for good in the file they convert (the test's driver replaces the
conversion with an endless sleep, which forked workers inherit): a parent that waited for its
workers would never exit, so the bound below fails such a run on any machine, fast or slow."""

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

BOUND = 30  # seconds: only a parent that waits for its (endless) workers comes near it
CUDA = "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n"
LINE = "transplant: interrupted; no result was written"

DRIVER = """
import os, sys, time
from pathlib import Path

import transplant.filemodes
import transplant.pool

marks, parent = Path(sys.argv[1]), os.getpid()


def stuck(*args, **kwargs):  # a file whose conversion never ends
    if os.getpid() != parent:
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


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("mode", list(MODES))
def test_a_stop_signal_ends_the_run_and_its_workers_at_once(tmp_path, project, mode, signum):
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "driver.py").write_text(DRIVER)
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    args = [a.format(proj=project, out=out) for a in MODES[mode]]
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(marks), "-j", "2", "-q", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        workers = [int(p.name) for p in marks.iterdir()]
        assert len(workers) == 2, "the workers never started converting"
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
    assert proc.returncode == 128 + signum
    assert err.decode().strip() == LINE  # one line, no traceback from the parent or a worker
    assert not any(_alive(pid) for pid in workers)
    if mode in ("repository", "distributed"):
        assert os.listdir(out) == []  # no result, no staging folder
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before


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
    deadline = time.monotonic() + 120
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
