"""Cold start of the command line, against the floors of the interpreter and of libcst.

Runs, interleaved (so a busy machine slows every command alike), each of:
  python -c pass                          the interpreter's own start
  python -c "import libcst"               the parser library every conversion needs
  transplant --check small.py             a 5-line CUDA file (target: 0.2 s)
  transplant -i repo -o out --force       a two-file repository (target: 0.3 s)
  transplant --check clean.py             a file without CUDA (the usual pre-commit run)
and the two conversions again as the first run after installing (no compiled-code cache yet, see
transplant/codecache.py) and with the cache turned off (TRANSPLANT_NO_CACHE=1). Prints the median
and the fastest wall time of each, in milliseconds, the median above the libcst floor, and the
median CPU time (user + system, all processes of the command), which a busy machine disturbs much
less than the wall time. Every command runs with this checkout (or --tree) first on PYTHONPATH, with
a cache folder of its own, and with bytecode caching on (PYTHONDONTWRITEBYTECODE removed), as
after ``pip install``, which compiles the package: without .pyc files every start compiles
transplant's modules again.

Usage: python bench/coldstart.py [--runs 15] [--tree OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = """import torch
model = torch.nn.Linear(4, 4).cuda()
x = torch.randn(2, 4, device="cuda")
torch.cuda.synchronize()
print(model(x).sum().item())
"""
UTIL = """import os
import resource


def helper(path):
    return os.path.join(path, "data")
"""


CLEAN = """import os


def size(path):
    return os.path.getsize(path)
"""


def commands(work: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (argv, environment changes); an empty TRANSPLANT_CACHE_DIR value means: a cache
    folder that is emptied before each run."""
    py = sys.executable
    check = [py, "-m", "transplant", "--check", str(work / "small.py")]
    repo = [py, "-m", "transplant", "-i", str(work / "repo"), "-o", str(work / "out"), "--force"]
    return {
        "python -c pass": ([py, "-c", "pass"], {}),
        "python -c 'import libcst'": ([py, "-c", "import libcst"], {}),
        "transplant --check small.py": (check, {}),
        "transplant -i repo (2 files)": (repo, {}),
        "transplant --check clean.py": ([py, "-m", "transplant", "--check", str(work / "clean.py")], {}),
        "  --check small.py, first run": (check, {"TRANSPLANT_CACHE_DIR": ""}),
        "  -i repo, first run": (repo, {"TRANSPLANT_CACHE_DIR": ""}),
        "  --check small.py, no cache": (check, {"TRANSPLANT_NO_CACHE": "1"}),
        "  -i repo, no cache": (repo, {"TRANSPLANT_NO_CACHE": "1"}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose transplant is measured")
    parser.add_argument("--markdown", action="store_true", help="also print the figures as a Markdown table")
    args = parser.parse_args()
    path = os.pathsep.join(filter(None, [str(args.tree.resolve()), os.environ.get("PYTHONPATH")]))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSPLANT_")}
    base_env["PYTHONPATH"] = path
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "repo").mkdir()
        (work / "repo" / "train.py").write_text(SMALL)
        (work / "repo" / "util.py").write_text(UTIL)
        (work / "small.py").write_text(SMALL)
        (work / "clean.py").write_text(CLEAN)
        cache, fresh = work / "cache", work / "fresh-cache"
        cmds = commands(work)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}

        def run(cmd: list[str], changes: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
            env = {**base_env, "TRANSPLANT_CACHE_DIR": str(cache), **changes}
            if changes.get("TRANSPLANT_CACHE_DIR") == "":
                shutil.rmtree(fresh, ignore_errors=True)
                env["TRANSPLANT_CACHE_DIR"] = str(fresh)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done

        for cmd, changes in cmds.values():  # warm the file cache, the .pyc files and the code cache
            run(cmd, changes)
        for _ in range(args.runs):
            for name, (cmd, changes) in cmds.items():
                wall, used, done = run(cmd, changes)
                times[name].append(wall)
                cpu[name].append(used)
                if done.returncode not in (0, 1):
                    sys.exit(f"{name} failed: {done.stderr.decode(errors='replace').strip()}")
    floor = statistics.median(times["python -c 'import libcst'"])
    print(
        f"{'command':32s} {'median':>8s} {'fastest':>8s} {'over libcst':>12s} {'cpu':>8s}   ({args.runs} runs, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})"
    )
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:32s} {median * 1000:6.0f}ms {min(values) * 1000:6.0f}ms {(median - floor) * 1000:+10.0f}ms "
            f"{statistics.median(cpu[name]) * 1000:6.0f}ms"
        )
    if args.markdown:
        print("\n| command | wall, median | wall, fastest | CPU, median |\n|---|---|---|---|")
        for name, values in times.items():
            print(
                f"| {name.strip()} | {statistics.median(values) * 1000:.0f} ms | {min(values) * 1000:.0f} ms | "
                f"{statistics.median(cpu[name]) * 1000:.0f} ms |"
            )


if __name__ == "__main__":
    main()
