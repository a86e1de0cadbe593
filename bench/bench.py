"""Benchmark transplant on synthetic PyTorch-shaped repositories and compare with a floor.

    python3 bench/bench.py                       # 1500 and 4500 files, -j <cores>
    python3 bench/bench.py --files 1500 --jobs 1 2 --repeat 3

For each repository size it prints, for transplant run as a subprocess (`python -m transplant`):
wall seconds, files/s, lines/s, peak RSS (sum over the process tree, sampled from /proc every
20 ms; and the largest single process from getrusage(RUSAGE_CHILDREN)), CPU seconds, and the ratio
of the wall time to the FLOOR: copying the tree with shutil.copytree plus one ``libcst.parse_module`` +
``module.bytes`` round trip, in this one process, of every .py file that mentions cuda or nccl.
The floor runs in the same session, interleaved with transplant; the best of --repeat runs is shown.

Repositories are generated under bench/out/ (git-ignored), deterministically from --seed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synth import generate  # noqa: E402


def tree_stats(root: Path) -> tuple[int, int]:
    files = lines = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            files += 1
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as fh:
                    lines += fh.read().count(b"\n")
    return files, lines


def floor(repo: Path, dest: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the floor."""
    import libcst

    if dest.exists():
        shutil.rmtree(dest)
    cpu = time.process_time()
    start = time.perf_counter()
    shutil.copytree(repo, dest, symlinks=True)
    for dirpath, _dirs, names in os.walk(repo):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as fh:
                    data = fh.read()
                if b"cuda" in data or b"nccl" in data:
                    _ = libcst.parse_module(data).bytes
    return time.perf_counter() - start, time.process_time() - cpu


def _tree_rss(root_pid: int) -> int:
    """Sum of VmRSS (bytes) of root_pid and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
            pid = int(entry)
            parents[pid] = int(fields[1])
            rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total = 0
    for pid in rss:
        p = pid
        while p and p != root_pid:
            p = parents.get(p, 0)
        if p == root_pid:
            total += rss[pid]
    return total


def run_transplant(repo: Path, out: Path, jobs: int) -> tuple[float, int, int, float]:
    """Wall seconds, peak tree RSS (sampled), max single-process RSS (getrusage), in bytes, and
    CPU seconds (user + system, all processes)."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "transplant", "-i", str(repo), "-o", str(out), "--force", "-q", "-j", str(jobs)]
    peak = 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=HERE.parent)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.02):
            peak = max(peak, _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    if code != 0:
        raise SystemExit(f"transplant exited with {code}: {' '.join(cmd)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, peak, after.ru_maxrss * 1024, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, nargs="+", default=[1500, 4500])
    ap.add_argument("--jobs", type=int, nargs="+", default=[os.cpu_count() or 1])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args(argv)

    import libcst  # noqa: F401  (the floor does not pay for importing libcst)

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, best of {args.repeat}")
    print(
        f"{'files':>6} {'lines':>8} {'jobs':>4} {'floor s':>8} {'wall s':>7} {'files/s':>8} {'lines/s':>9} "
        f"{'tree RSS MB':>11} {'max proc MB':>11} {'x floor':>7} {'floor CPU s':>11} {'CPU s':>6}"
    )
    per_file: dict[int, dict[int, float]] = {}
    for n in args.files:
        repo = args.out / f"repo{n}_s{args.seed}" / "project"
        marker = repo.parent / "complete"
        if not marker.exists():
            if repo.parent.exists():
                shutil.rmtree(repo.parent)
            generate(repo, n, args.seed)
            marker.write_text("ok\n")
        files, lines = tree_stats(repo)
        floors = []
        results: dict[int, list[tuple[float, int, int, float]]] = {j: [] for j in args.jobs}
        floor(repo, args.out / "floor_copy")  # warm the page cache
        for _ in range(args.repeat):
            floors.append(floor(repo, args.out / "floor_copy"))
            for j in args.jobs:
                results[j].append(run_transplant(repo, args.out / f"result{n}", j))
        shutil.rmtree(args.out / "floor_copy", ignore_errors=True)
        best_floor = min(f[0] for f in floors)
        floor_cpu = min(f[1] for f in floors)
        for j in args.jobs:
            wall = min(r[0] for r in results[j])
            tree = max(r[1] for r in results[j])
            single = max(r[2] for r in results[j])
            cpu = min(r[3] for r in results[j])
            per_file.setdefault(j, {})[n] = wall / files
            print(
                f"{files:>6} {lines:>8} {j:>4} {best_floor:>8.2f} {wall:>7.2f} {files / wall:>8.0f} {lines / wall:>9.0f} "
                f"{tree / 2**20:>11.0f} {single / 2**20:>11.0f} {wall / best_floor:>7.2f} {floor_cpu:>11.2f} {cpu:>6.2f}"
            )
    for j, by_size in per_file.items():
        sizes = sorted(by_size)
        if len(sizes) >= 2:
            growth = by_size[sizes[-1]] / by_size[sizes[0]]
            print(f"-j {j}: time per file grows {growth:.2f}x from {sizes[0]} to {sizes[-1]} files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
