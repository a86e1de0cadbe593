"""What the tasks of `transplant compare` share: their exit statuses, their one-line error, and
running msprobe's commands in a child process (worker.py), where its imports and output stay apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2
PACKAGE = "mindstudio-probe"
WORKER = Path(__file__).resolve().with_name("worker.py")


def fail(message: str) -> int:
    print(f"transplant compare: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def installed() -> bool:
    from importlib import metadata

    try:
        metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return False
    return True


def run_worker(argvs: list[list[str]], log: Path) -> list[str | None]:
    """Run msprobe once per argument list in one child process (worker.py), its output to ``log``:
    per list None (done), "unsupported" (no such command in this release) or a one-line reason."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, results_file = Path(tmp, "jobs.json"), Path(tmp, "results.json")
        jobs_file.write_text(json.dumps([{"argv": argv} for argv in argvs]))
        with open(log, "w") as out:
            status = subprocess.run(
                [sys.executable, str(WORKER), str(jobs_file), str(results_file)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            ).returncode
        try:
            return json.loads(results_file.read_text())
        except (OSError, ValueError):
            return [f"msprobe ended with status {status}"] * len(argvs)
