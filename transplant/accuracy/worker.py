"""The child process of ``transplant compare``: imports msprobe once and runs its documented
command, ``msprobe compare -tp TARGET/dump.json -gp GOLDEN/dump.json -o OUT``, for each pair of
step and rank folders.

Run as ``python worker.py JOBS.json RESULTS.json`` with its output going to a log file: msprobe
logs on stdout and may end with a traceback, neither of which is for the user's terminal.
JOBS.json is a list of {"target", "golden", "out"}; RESULTS.json gets one entry per job: null when
msprobe finished, else a one-line reason. Standard library and msprobe only (no transplant import).
"""

import json
import os
import sys


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no module of ours shadows msprobe's
    jobs_file, results_file = sys.argv[1], sys.argv[2]
    with open(jobs_file) as f:
        jobs = json.load(f)
    from msprobe.msprobe import main as msprobe

    results: list[str | None] = []
    for job in jobs:
        sys.argv = ["msprobe", "compare", "-tp", job["target"], "-gp", job["golden"], "-o", job["out"]]
        try:
            msprobe()
            results.append(None)
        except SystemExit as exc:
            results.append(None if exc.code in (None, 0) else f"msprobe compare exited with status {exc.code}")
        except Exception as exc:  # msprobe's own error: reported per pair, the others still run
            results.append(f"msprobe compare failed: {type(exc).__name__}: {exc}".splitlines()[0])
    with open(results_file, "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
