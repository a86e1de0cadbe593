"""The child process of ``transplant compare``: imports msprobe once and runs its documented
commands: ``msprobe compare -tp TARGET/dump.json -gp GOLDEN/dump.json -o OUT [--xlsx]`` for each
pair of step and rank folders, ``msprobe overflow_check -i STEP -o OUT`` for each step folder.

Run as ``python worker.py JOBS.json RESULTS.json`` with its output going to a log file: msprobe
logs on stdout and may end with a traceback, neither of which is for the user's terminal.
JOBS.json is a list of {"argv": msprobe's arguments}; RESULTS.json gets one entry per job: null when
msprobe finished, "unsupported" when the installed release has no such command, else a one-line
reason. Standard library and msprobe only (no transplant import).
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
        sys.argv = ["msprobe", *job["argv"]]
        if job["argv"][0] == "overflow_check" and not _has("msprobe.overflow_check.analyzer"):
            results.append("unsupported")  # releases before 26.x: overflow is a dump task, no offline command
            continue
        try:
            msprobe()
            results.append(None)
        except SystemExit as exc:
            code = exc.code
            results.append(None if code in (None, 0) else f"msprobe {job['argv'][0]} exited with status {code}")
        except Exception as exc:  # msprobe's own error: reported per pair, the others still run
            results.append(f"msprobe {job['argv'][0]} failed: {type(exc).__name__}: {exc}".splitlines()[0])
    with open(results_file, "w") as f:
        json.dump(results, f)
    return 0


def _has(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
