"""Cold start of the command line, against the floors of the interpreter and of libcst.

Runs, interleaved (so a busy machine slows every command alike), each of:
  python -c pass                          the interpreter's own start
  python -c "import libcst"               the parser library every conversion needs
  transplant --check small.py             a 5-line CUDA file (target: 0.2 s)
  transplant -i repo -o out --force       a two-file repository (target: 0.3 s)
and prints the median and the fastest wall time of each, in milliseconds, the median above the
libcst floor, and the median CPU time (user + system, all processes of the command), which a
busy machine disturbs much less than the wall time. Every command runs with this checkout (or --tree) first on PYTHONPATH,
and with bytecode caching on (PYTHONDONTWRITEBYTECODE removed), as after ``pip install``, which
compiles the package: without .pyc files every start compiles transplant's modules again.

Usage: python bench/coldstart.py [--runs 15] [--tree OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import resource
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


def commands(work: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import libcst'": [py, "-c", "import libcst"],
        "transplant --check small.py": [py, "-m", "transplant", "--check", str(work / "small.py")],
        "transplant -i repo (2 files)": [py, "-m", "transplant", "-i", str(work / "repo"), "-o", str(work / "out"),
                                         "--force"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose transplant is measured")
    args = parser.parse_args()
    path = os.pathsep.join(filter(None, [str(args.tree.resolve()), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "repo").mkdir()
        (work / "repo" / "train.py").write_text(SMALL)
        (work / "repo" / "util.py").write_text(UTIL)
        (work / "small.py").write_text(SMALL)
        cmds = commands(work)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        for name, cmd in cmds.items():  # warm the file cache and the .pyc files
            subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                done = subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                times[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                if done.returncode not in (0, 1):
                    sys.exit(f"{name} failed: {done.stderr.decode(errors='replace').strip()}")
    floor = statistics.median(times["python -c 'import libcst'"])
    print(f"{'command':32s} {'median':>8s} {'fastest':>8s} {'over libcst':>12s} {'cpu':>8s}   ({args.runs} runs, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:32s} {median * 1000:6.0f}ms {min(values) * 1000:6.0f}ms {(median - floor) * 1000:+10.0f}ms "
              f"{statistics.median(cpu[name]) * 1000:6.0f}ms")


if __name__ == "__main__":
    main()
