"""Time from a stop signal to the end of the run, with large files in flight (issue 25).

Writes a project of --files Python files of --lines lines each (CUDA calls throughout, so every
file goes to a worker and each takes the converter seconds), starts
``transplant -i PROJECT -o OUT -j JOBS -q`` from this checkout, sends the signal --after seconds
after the staging folder appears (workers are converting by then), and measures the time until the
command has exited. Ctrl-C is sent to the whole process group, as a terminal does; SIGTERM to the
parent alone, as ``timeout`` or a cancelled CI job does. Also reports the exit status, whether any
process of the run outlived it and whether anything is left in the output folder.

Usage: python bench/interrupt.py [--files 24] [--lines 6000] [--jobs 2] [--after 1.5] [--tries 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_project(root: Path, files: int, lines: int) -> None:
    root.mkdir()
    functions = max(1, lines // 4)
    body = "import torch\n\n" + "".join(
        f"def f{i}(x):\n    torch.cuda.synchronize()\n    return x.cuda() + {i}\n\n" for i in range(functions)
    )
    for i in range(files):
        (root / f"big{i:03}.py").write_text(body)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def one_try(work: Path, signum: int, jobs: int, after: float) -> tuple[float, int, bool, list[str]]:
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "transplant", "-i", str(work / "proj"), "-o", str(out), "-j", str(jobs), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    while not (out.exists() and any(out.iterdir())) and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(after)
    if proc.poll() is not None:
        raise SystemExit("the run ended before the signal: use more or larger files")
    start = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    proc.communicate()
    elapsed = time.monotonic() - start
    time.sleep(0.2)  # orphans, if any, are still alive after this
    left = _group_alive(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    return elapsed, proc.returncode, left, sorted(os.listdir(out)) if out.exists() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--lines", type=int, default=6000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--after", type=float, default=1.5, help="seconds between the start of the work and the signal")
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="transplant-interrupt-"))
    try:
        write_project(work / "proj", args.files, args.lines)
        print(f"{args.files} files of {args.lines} lines, -j {args.jobs}, signal {args.after} s into the work")
        for signum in (signal.SIGINT, signal.SIGTERM):
            times = []
            for _ in range(args.tries):
                elapsed, status, left, leftovers = one_try(work, signum, args.jobs, args.after)
                times.append(elapsed)
                print(
                    f"  {signum.name}: exited {status} after {elapsed:.3f} s; processes left: "
                    f"{'yes' if left else 'none'}; output folder: {leftovers or 'empty'}"
                )
            print(f"{signum.name}: median {statistics.median(times):.3f} s, worst {max(times):.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
