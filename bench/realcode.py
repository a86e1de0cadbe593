"""transplant on real code and on a CUDA-dense recipe, an older commit against this checkout.

    python3 bench/realcode.py                          # everything, against 31faa31, 3 rounds
    python3 bench/realcode.py --old 7d6e416 --rounds 5 --only nanoGPT whisper
    python3 bench/realcode.py --old 31faa31 3aab918 --parts corpus  # two older commits, the same run
    python3 bench/realcode.py --parts dense small --sizes 8000 24000 72000

The older commit is exported with ``git archive`` into bench/out/realcode/trees/ (git-ignored) and
both trees run as subprocesses (``python -m transplant``, PYTHONPATH set to the tree, each with a
code cache of its own, warmed once), interleaved: every round runs each command for each tree,
alternating which tree goes first, so that a machine loaded by other jobs slows both alike. Each
figure is the CPU time of the child (user + system, from wait4, so only that command) and its peak
RSS; the median of the rounds is printed. Parts (``--parts``):

  corpus  every repository of bench/corpus.json whose mirror is found (--mirror, the layout of
          bench/corpus.py), repository mode, -j 1: CPU per repository and in total;
  dense   the file of bench/dense.py at each of --sizes lines, ``--check``: CPU, peak RSS, the growth
          of CPU per line from the smallest to the largest size, and the ratio to libcst's own
          parse + print of the same file (a child that imports libcst, parses and prints: the floor);
  small   ``--check`` of a 5-line CUDA file and repository mode on a two-file project, against
          ``python -c "import libcst"`` (medians of --small-rounds runs);
  lsp     bench/lsp_refresh.py for each tree (needs the lsp extra);
  phases  the time of each phase of the conversion of the largest dense file in this checkout
          (TRANSPLANT_PHASE_TIMES=1, see transplant/engine/phases.py).

The targets of issue 32 are printed beside each figure; nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import io
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from coldstart import SMALL  # noqa: E402  (the same small CUDA file as the cold-start bench)
from corpus import export, git_dir  # noqa: E402
from dense import dense_file  # noqa: E402

WORK = HERE / "out" / "realcode"
UTIL = """import torch


def to_device(t):
    return t.cuda() if torch.cuda.is_available() else t
"""
FLOOR = "import sys, libcst; libcst.parse_module(open(sys.argv[1], 'rb').read()).bytes"


class Tree:
    """A checkout whose transplant is measured: its label, path and environment."""

    def __init__(self, label: str, path: Path) -> None:
        self.label, self.path = label, path
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSPLANT_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))
        env["TRANSPLANT_CACHE_DIR"] = str(WORK / "cache" / label)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env = env

    def cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "transplant", *args]


def measure(cmd: list[str], env: dict[str, str], cwd: Path = WORK) -> tuple[float, float, float]:
    """(CPU seconds, peak RSS in MB, wall seconds) of one child running ``cmd``; not in the checkout's
    root: ``python -m`` puts the working folder first on sys.path, before the tree's PYTHONPATH."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # (--check exits 1 when a file would change)
        sys.stderr.write(f"{' '.join(cmd)}: exit {proc.returncode}\n{err.decode(errors='replace')[-2000:]}\n")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, wall


def old_tree(commit: str) -> Path:
    full = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    dest = WORK / "trees" / full[:12]
    if not (dest / "transplant" / "__init__.py").is_file():
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        data = subprocess.run(["git", "-C", str(ROOT), "archive", full], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
    return dest


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rounds_of(trees: list[Tree], rounds: int):
    """(round, trees in this round's order): the first tree alternates."""
    for r in range(rounds):
        yield r, trees if r % 2 == 0 else trees[::-1]


def part_corpus(trees: list[Tree], args: argparse.Namespace) -> None:
    manifest = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))["repositories"]
    sources: dict[str, Path] = {}
    for entry in manifest:
        repo = entry["repo"]
        if args.only and not any(word.lower() in repo.lower() for word in args.only):
            continue
        gdir = git_dir(args.mirror, repo)
        if gdir is None:
            print(f"  {repo}: no mirror under {args.mirror}, left out")
            continue
        dest = WORK / "src" / repo.split("/")[1]
        if not dest.is_dir():
            export(gdir, entry["commit"], dest)
        sources[repo] = dest
    if not sources:
        print("corpus: no repository found")
        return
    cpu: dict[tuple[str, str], list[float]] = {}
    rss: dict[tuple[str, str], list[float]] = {}
    for _r, order in rounds_of(trees, args.rounds):
        for repo, src in sources.items():
            for tree in order:
                out = WORK / "conv" / tree.label / src.name
                used, peak, _ = measure(tree.cmd("-q", "-j", "1", "-i", str(src), "-o", str(out), "--force"), tree.env)
                cpu.setdefault((repo, tree.label), []).append(used)
                rss.setdefault((repo, tree.label), []).append(peak)
    olds, new = [t.label for t in trees[:-1]], trees[-1].label
    print(f"\ncorpus, repository mode, -j 1, CPU s (median of {args.rounds}) and peak RSS MB")
    ratios = " ".join(f"{'/' + old[:8]:>9}" for old in olds)
    print(
        f"  {'repository':42} {'py files':>8} {'lines':>7} "
        + " ".join(f"{label[:9]:>9}" for label in [*olds, new])
        + f" {ratios} {'RSS ' + new:>9}"
    )
    totals = {label: 0.0 for label in [*olds, new]}
    for repo, src in sources.items():
        files = list(src.rglob("*.py"))
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        cells = {label: med(cpu[repo, label]) for label in totals}
        for label, value in cells.items():
            totals[label] += value
        print(
            f"  {repo:42} {len(files):8} {lines:7} "
            + " ".join(f"{v:9.2f}" for v in cells.values())
            + " "
            + " ".join(f"{cells[new] / cells[old]:9.2f}" for old in olds)
            + f" {max(rss[repo, new]):9.0f}"
        )
    print(
        f"  {'total':42} {'':8} {'':7} "
        + " ".join(f"{v:9.2f}" for v in totals.values())
        + " "
        + " ".join(f"{totals[new] / totals[old]:9.2f}" for old in olds)
        + "   (target <= 1.15 of 31faa31)"
    )


def part_dense(trees: list[Tree], args: argparse.Namespace) -> Path:
    files = {}
    for size in args.sizes:
        path = WORK / f"dense_{size}.py"
        text = dense_file(size)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
        files[size] = path
    floor_env = trees[-1].env
    cpu: dict[tuple[int, str], list[float]] = {}
    rss: dict[tuple[int, str], list[float]] = {}
    for _r, order in rounds_of(trees, args.rounds):
        for size, path in files.items():
            used, peak, _ = measure([sys.executable, "-c", FLOOR, str(path)], floor_env)
            cpu.setdefault((size, "floor"), []).append(used)
            rss.setdefault((size, "floor"), []).append(peak)
            for tree in order:
                used, peak, _ = measure(tree.cmd("-q", "--check", str(path)), tree.env)
                cpu.setdefault((size, tree.label), []).append(used)
                rss.setdefault((size, tree.label), []).append(peak)
    labels = [t.label for t in trees]
    print(f"\ndense recipe (bench/dense.py), --check, CPU s (median of {args.rounds}) / peak RSS MB")
    print(f"  {'lines':>6} {'floor':>13} " + " ".join(f"{label:>15}" for label in labels) + "  x floor")
    for size, path in files.items():
        n = path.read_bytes().count(b"\n")
        cells = [f"{med(cpu[size, k]):6.2f} /{max(rss[size, k]):5.0f}" for k in ["floor", *labels]]
        ratio = med(cpu[size, labels[-1]]) / med(cpu[size, "floor"])
        print(f"  {n:6} {cells[0]:>13} " + " ".join(f"{c:>15}" for c in cells[1:]) + f"  {ratio:5.2f} (target <= 2.5)")
    small, large = min(files), max(files)
    if small != large:
        lines_small = files[small].read_bytes().count(b"\n")
        lines_large = files[large].read_bytes().count(b"\n")
        for label in labels:
            growth = (med(cpu[large, label]) / lines_large) / (med(cpu[small, label]) / lines_small)
            print(
                f"  growth of CPU per line {lines_small} -> {lines_large} lines, {label}: {growth:.2f} (target <= 1.15)"
            )
        print(f"  peak RSS at {lines_large} lines, {labels[-1]}: {max(rss[large, labels[-1]]):.0f} MB (target <= 300)")
    return files[large]


def part_small(trees: list[Tree], args: argparse.Namespace) -> None:
    work = WORK / "small"
    shutil.rmtree(work, ignore_errors=True)
    (work / "repo").mkdir(parents=True)
    (work / "repo" / "train.py").write_text(SMALL)
    (work / "repo" / "util.py").write_text(UTIL)
    (work / "small.py").write_text(SMALL)
    floor_env = trees[-1].env
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {
        "import libcst": ([sys.executable, "-c", "import libcst"], floor_env)
    }
    for tree in trees:
        cmds[f"--check small.py ({tree.label})"] = (tree.cmd("-q", "--check", str(work / "small.py")), tree.env)
        repo_cmd = tree.cmd("-q", "-i", str(work / "repo"), "-o", str(work / f"out-{tree.label}"), "--force")
        cmds[f"two-file repository ({tree.label})"] = (repo_cmd, tree.env)
    for cmd, env in cmds.values():  # warm the caches
        measure(cmd, env, work)
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    wall: dict[str, list[float]] = {name: [] for name in cmds}
    for r in range(args.small_rounds):
        names = list(cmds) if r % 2 == 0 else list(cmds)[::-1]
        for name in names:
            used, _peak, took = measure(*cmds[name], work)
            cpu[name].append(used)
            wall[name].append(took)
    base_cpu, base_wall = med(cpu["import libcst"]), med(wall["import libcst"])
    print(f"\nsmall runs, median of {args.small_rounds}: CPU s, wall s, and the ratio to `import libcst`")
    for name in cmds:
        c, w = med(cpu[name]), med(wall[name])
        target = " (target <= 1.2)" if "small.py" in name else " (target <= 1.5)" if "repository" in name else ""
        print(f"  {name:40} {c:6.3f} {w:6.3f}   x{c / base_cpu:4.2f} CPU  x{w / base_wall:4.2f} wall{target}")


def part_lsp(trees: list[Tree], args: argparse.Namespace) -> None:
    for tree in trees:
        print(f"\nlanguage server refresh, bench/lsp_refresh.py ({tree.label}; target <= 0.3 s)")
        done = subprocess.run(
            [sys.executable, str(HERE / "lsp_refresh.py"), "--repeat", str(args.lsp_repeat)],
            env=tree.env,
            cwd=WORK,  # (not the checkout: "python -m transplant lsp" would import this checkout's server)
            capture_output=True,
            text=True,
        )
        sys.stdout.write("".join("  " + line + "\n" for line in (done.stdout + done.stderr).splitlines()))


def part_phases(trees: list[Tree], largest: Path) -> None:
    tree = trees[-1]
    print(f"\nphases of the conversion of {largest.name} ({tree.label}), TRANSPLANT_PHASE_TIMES=1")
    done = subprocess.run(
        tree.cmd("-q", "--check", str(largest)),
        env={**tree.env, "TRANSPLANT_PHASE_TIMES": "1"},
        cwd=WORK,
        capture_output=True,
        text=True,
    )
    sys.stdout.write("".join("  " + line + "\n" for line in done.stderr.splitlines() if "phase" in line))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--old", nargs="+", default=["31faa31"], help="the older commits to compare with (default 31faa31)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small-rounds", type=int, default=15)
    parser.add_argument("--lsp-repeat", type=int, default=20)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("TRANSPLANT_MIRROR", "/work/.mirror")))
    parser.add_argument("--only", nargs="*", default=[], help="corpus repositories whose names contain these words")
    parser.add_argument("--sizes", nargs="*", type=int, default=[8000, 24000, 72000])
    parts = ["corpus", "dense", "small", "lsp", "phases"]
    parser.add_argument("--parts", nargs="*", choices=parts, default=parts)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    trees = [*(Tree(commit, old_tree(commit)) for commit in args.old), Tree("this", ROOT)]
    for tree in trees:  # compile the .pyc files and the code cache once
        measure(tree.cmd("--version"), tree.env)
    older = ", ".join(f"{t.label} ({t.path})" for t in trees[:-1])
    print(f"older trees: {older}; this tree: {ROOT}; CPU = user + sys of the child")
    if "corpus" in args.parts:
        part_corpus(trees, args)
    largest = part_dense(trees, args) if "dense" in args.parts or "phases" in args.parts else None
    if "small" in args.parts:
        part_small(trees, args)
    if "lsp" in args.parts:
        part_lsp(trees, args)
    if "phases" in args.parts and largest is not None:
        part_phases(trees, largest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
