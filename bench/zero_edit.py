"""The zero-edit path, the runtime mode and the full conversion, on real programs (issue 35).

    python3 bench/zero_edit.py --mirror /path/to/mirrors        # every program below
    python3 bench/zero_edit.py --mirror DIR --only adder        # names containing these words

For each program: the original is run on this machine's CPU as its reference; then, under
`transplant emulate`, (a) the original with torch_npu's runtime migration (`--transfer-to-npu`, the
zero-edit path a user tries first), (b) transplant's runtime mode (`--mode runtime`) of the project,
also with `--transfer-to-npu`, and (c) transplant's full conversion of the project; (a) and (b) also
with `--strict`, which names the first "cuda" the migration leaves. Prints one Markdown row per
program: for each way the lines it changed (every text file), whether the run finished and whether every number
it printed equals the reference's. Programs of the corpus are exported from local mirrors as
bench/corpus.py does; everything is written under bench/out/zero_edit/ (git-ignored).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "zero_edit"
sys.path.insert(0, str(HERE))

from corpus import convert, export, git_dir  # noqa: E402

# name, where the project comes from (a folder of this repository, or a pinned corpus repository),
# the folder the program runs in, its command line, and what it prints that must match
PROGRAMS: list[dict[str, Any]] = [
    {
        "name": "README example (mnist_cuda)",
        "local": "examples/mnist_cuda",
        "cwd": ".",
        "argv": ["train.py", "--epochs", "1"],
        "numbers": r"loss (\S+)",
    },
    {
        "name": "nanoGPT shakespeare_char (tiny)",
        "repo": "karpathy/nanoGPT",
        "commit": "3adf61e154c3fe3fca428ad6bc3818b27a3b8291",
        "cwd": ".",
        # the data set is downloaded by prepare.py unless input.txt is there: a text of our own stands in
        "text": "data/shakespeare_char/input.txt",
        "prepare": ["data/shakespeare_char/prepare.py"],
        "argv": [
            "train.py",
            "config/train_shakespeare_char.py",
            "--compile=False",
            "--max_iters=6",
            "--eval_interval=3",
            "--eval_iters=2",
            "--log_interval=1",
            "--batch_size=4",
            "--block_size=32",
            "--n_layer=2",
            "--n_head=2",
            "--n_embd=32",
            "--dropout=0.0",
        ],  # fmt: skip
        "numbers": r"iter \d+: loss (\S+)|train loss (\S+), val loss (\S+)",
    },
    {
        "name": "minGPT adder",
        "repo": "karpathy/minGPT",
        "commit": "37baab71b9abea1b76ab957409a1cc2fbfba8a26",
        "cwd": "projects/adder",
        "pythonpath": ".",
        "argv": ["adder.py", "--trainer.max_iters=21", "--trainer.num_workers=0"],
        "numbers": r"train loss (\S+)|score: (\S+)",
    },
    {
        "name": "pytorch/examples word_language_model (tiny)",
        "repo": "pytorch/examples",
        "commit": "77f55b912142e11fcfdf5b530231fb9c52f181e8",
        "paths": ["word_language_model"],  # (the program's folder of the repository of examples)
        "cwd": "word_language_model",
        # the mirror lacks wikitext-2's train.txt (its largest file): texts of our own stand in
        "texts": {
            f"word_language_model/data/wikitext-2/{n}.txt": size
            for n, size in (("train", 20_000), ("valid", 4_000), ("test", 4_000))
        },
        "argv": [
            "main.py",
            "--accel",
            "--epochs=1",
            "--emsize=16",
            "--nhid=16",
            "--nlayers=1",
            "--bptt=10",
            "--batch_size=4",
            "--log-interval=50",
            "--save=model.pt",
        ],
        "numbers": r"loss\s+(\S+)",
    },
]


def text(size: int = 40_000) -> str:
    """Lines of made-up words, the same every time (a stand-in for a downloaded corpus)."""
    words = ["the", "npu", "runs", "a", "model", "of", "light", "and", "tensors", "flow", "to", "every", "core"]
    state, lines, total = 12345, [], 0

    def draw() -> int:
        nonlocal state
        state = (state * 1103515245 + 12345) % 2**31
        return state >> 8

    while total < size:
        line = " ".join(words[draw() % len(words)] for _ in range(1 + draw() % 9)).capitalize() + "."
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def run(argv: list[str], cwd: Path, pythonpath: Path | None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), str(pythonpath or "")) if p),
    }
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def numbers(pattern: str, text: str) -> list[str]:
    return ["".join(groups) if isinstance(groups, tuple) else groups for groups in re.findall(pattern, text)]


def changed_lines(before: Path, after: Path) -> int:
    """Lines removed plus lines added, over every text file of the project (Python, shell scripts,
    configs, requirements, Dockerfiles; not the reports the conversion adds)."""
    count = 0
    for path in sorted(p for p in before.rglob("*") if p.is_file()):
        other = after / path.relative_to(before)
        if not other.is_file():
            continue
        try:
            old, new = path.read_text().splitlines(), other.read_text().splitlines()
        except UnicodeDecodeError:
            continue
        count += sum(1 for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:1] in "+-")
        count -= 2 * (old != new)  # the file header lines
    return count


def verdict(proc: subprocess.CompletedProcess, pattern: str, reference: list[str]) -> str:
    if proc.returncode != 0:
        error = next((line for line in reversed(proc.stderr.splitlines()) if line.strip()), "")
        return f"fails: {error[:90]}"
    got = numbers(pattern, proc.stdout)
    if not reference:
        return "nothing to compare"
    return "same numbers" if got == reference else f"other numbers ({len(got)} printed)"


def leftover(proc: subprocess.CompletedProcess) -> str:
    errors = [line for line in proc.stderr.splitlines() if "(CUDA use; --strict)" in line]
    return errors[0].split("error: ", 1)[1].replace(" (CUDA use; --strict)", "") if errors else "none"


def original_tree(program: dict[str, Any], mirror: Path | None, work: Path) -> Path | None:
    """The program's project under ``work``/original (emptied first): copied from this repository
    or exported from the mirrors, with its stand-in texts and prepare scripts run; None (said on
    stderr) when its mirror is missing."""
    if work.exists():
        shutil.rmtree(work)
    original = work / "original"
    if "local" in program:
        shutil.copytree(ROOT / program["local"], original)
    else:
        gdir = git_dir(mirror, program["repo"]) if mirror else None
        if gdir is None:
            print(f"{program['name']}: no mirror of {program['repo']} (--mirror)", file=sys.stderr)
            return None
        export(gdir, program["commit"], original, program.get("paths"))
    if "text" in program:
        (original / program["text"]).write_text(text())
    for name, size in program.get("texts", {}).items():
        (original / name).write_text(text(size))
    for script in program.get("prepare", []):
        subprocess.run([sys.executable, script], cwd=original, check=True, capture_output=True)
    return original


def prepared(programs: list[dict[str, Any]], only: list[str], mirror: Path | None, out: Path) -> Iterator[tuple]:
    """(program, its work folder under ``out``, its original_tree) for each program whose name
    contains one of the words of ``only`` (every program when none), skipping those without a mirror."""
    for program in programs:
        if only and not any(word.lower() in program["name"].lower() for word in only):
            continue
        work = out / re.sub(r"\W+", "_", program["name"]).strip("_")
        original = original_tree(program, mirror, work)
        if original is not None:
            yield program, work, original


def print_table(rows: list[dict[str, Any]]) -> None:
    """The rows as a Markdown table (the first row's keys are the columns)."""
    if rows:
        keys = list(rows[0])
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


def converted_tree(program: dict[str, Any], original: Path, out: Path, options: tuple[str, ...]) -> Path:
    """The project converted by this checkout's transplant (as corpus.py runs it) with ``options``."""
    _secs, status = convert(original, out, options)
    if status != 0:
        raise SystemExit(f"{program['name']}: the conversion {' '.join(options) or '(full)'} failed (status {status})")
    return out / "original_msft"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", type=Path, help="folder of git mirrors (owner+name), for corpus programs")
    ap.add_argument("--only", nargs="*", default=[], help="run the programs whose names contain these words")
    args = ap.parse_args(argv)
    python = sys.executable
    rows = []
    for program, work, original in prepared(PROGRAMS, args.only, args.mirror, OUT):
        converted = converted_tree(program, original, work / "converted", ())
        runtime = converted_tree(program, original, work / "runtime", ("--mode", "runtime"))
        # counted before the runs, which write outputs into the trees
        runtime_lines, converted_lines = changed_lines(original, runtime), changed_lines(original, converted)
        pattern, prog = program["numbers"], program["argv"]
        extra = program.get("pythonpath")

        def path(root: Path, extra: str | None = extra) -> Path | None:
            return root / extra if extra is not None else None

        cwd = program["cwd"]
        reference_run = run([python, *prog], original / cwd, path(original))
        emulate = [python, "-m", "transplant", "emulate"]
        transfer = [*emulate, "--transfer-to-npu"]
        zero = run([*transfer, *prog], original / cwd, path(original))
        zero_strict = run([*transfer, "--strict", *prog], original / cwd, path(original))
        mode = run([*transfer, *prog], runtime / cwd, path(runtime))
        mode_strict = run([*transfer, "--strict", *prog], runtime / cwd, path(runtime))
        conv = run([*emulate, *prog], converted / cwd, path(converted))
        # the original's CPU run, or where it needs CUDA to run at all, the converted run's numbers
        # (on the CPU backing an NPU run computes what a CPU run computes)
        if reference_run.returncode == 0:
            reference, said = numbers(pattern, reference_run.stdout), "the original on the CPU"
        else:
            reference, said = numbers(pattern, conv.stdout), "the full conversion (the original needs CUDA)"
        rows.append(
            {
                "program": program["name"],
                "numbers compared with": f"{said}: {len(reference)}",
                "(a) zero-edit: lines changed": 0,
                "(a) zero-edit": verdict(zero, pattern, reference),
                "(b) runtime mode: lines changed": runtime_lines,
                "(b) runtime mode": verdict(mode, pattern, reference),
                "(c) full conversion: lines changed": converted_lines,
                "(c) full conversion": verdict(conv, pattern, reference)
                if reference_run.returncode == 0
                else "(the reference)",
                "first CUDA use left (--strict): (a)": leftover(zero_strict),
                "(b)": leftover(mode_strict),
            }
        )
    print_table(rows)
    (OUT / "results.json").parent.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
