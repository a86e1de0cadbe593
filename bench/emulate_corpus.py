"""Corpus programs converted, run under `transplant emulate` and `emulate --strict`, against the original on the CPU.

    python3 bench/emulate_corpus.py --mirror /path/to/mirrors [--only WORD...] [--emulator DIR ...]

Each program (recurrent language models with and without tied weights, a weight-tied GPT, minGPT's
adder; not README's example, whose original needs CUDA) is exported from the local mirrors as bench/corpus.py does and converted by
this checkout's transplant; the original runs on this machine's CPU as the reference, then the
conversion runs under `transplant emulate` and `transplant emulate --strict` with the emulator of
each --emulator folder (a transplant checkout; default this one), so an older emulator and this one
run the same converted program. Every number the program prints must equal the reference's. Prints
one Markdown row per program; everything is written under bench/out/emulate_corpus/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "emulate_corpus"
sys.path.insert(0, str(HERE))

from corpus import export, git_dir  # noqa: E402
from zero_edit import PROGRAMS as ZERO_EDIT  # noqa: E402
from zero_edit import converted_tree, numbers, text, verdict  # noqa: E402

_BY_NAME = {p["name"]: p for p in ZERO_EDIT}
_WLM = _BY_NAME["pytorch/examples word_language_model (tiny)"]
_NANOGPT = _BY_NAME["nanoGPT shakespeare_char (tiny)"]

# each: a zero_edit program, maybe with other arguments; "original" are the original's own extra
# arguments (nanoGPT's original asks for CUDA unless told otherwise)
PROGRAMS: list[dict[str, Any]] = [
    {
        **_NANOGPT,
        "name": "nanoGPT shakespeare_char (weight-tied GPT, float32)",
        "argv": [*_NANOGPT["argv"], "--dtype=float32"],
        "original": ["--device=cpu"],
    },
    {**_BY_NAME["minGPT adder"]},
    {**_WLM, "name": "word_language_model LSTM"},
    {**_WLM, "name": "word_language_model LSTM, tied", "argv": [*_WLM["argv"], "--tied"]},
    {**_WLM, "name": "word_language_model GRU, tied", "argv": [*_WLM["argv"], "--model=GRU", "--tied"]},
    {**_WLM, "name": "word_language_model RNN_TANH", "argv": [*_WLM["argv"], "--model=RNN_TANH"]},
]


def run(argv: list[str], cwd: Path, paths: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", type=Path, required=True, help="folder of git mirrors (owner+name)")
    ap.add_argument("--only", nargs="*", default=[], help="run the programs whose names contain these words")
    ap.add_argument("--emulator", type=Path, nargs="+", default=[ROOT], help="transplant checkouts whose emulator runs")
    args = ap.parse_args(argv)
    python = sys.executable
    rows = []
    for program in PROGRAMS:
        if args.only and not any(word.lower() in program["name"].lower() for word in args.only):
            continue
        work = OUT / re.sub(r"\W+", "_", program["name"]).strip("_")
        if work.exists():
            shutil.rmtree(work)
        original = work / "original"
        if "local" in program:
            shutil.copytree(ROOT / program["local"], original)
        else:
            gdir = git_dir(args.mirror, program["repo"])
            if gdir is None:
                print(f"{program['name']}: no mirror of {program['repo']}", file=sys.stderr)
                continue
            export(gdir, program["commit"], original, program.get("paths"))
        if "text" in program:
            (original / program["text"]).write_text(text())
        for name, size in program.get("texts", {}).items():
            (original / name).write_text(text(size))
        for script in program.get("prepare", []):
            subprocess.run([python, script], cwd=original, check=True, capture_output=True)
        converted = converted_tree(program, original, work / "converted", ())
        pattern, prog, cwd = program["numbers"], program["argv"], program["cwd"]
        extra = [Path(program["pythonpath"])] if "pythonpath" in program else []
        reference_run = run(
            [python, *prog, *program.get("original", [])], original / cwd, [original / p for p in extra]
        )
        reference = numbers(pattern, reference_run.stdout)
        row = {"program": program["name"], "numbers": str(len(reference))}
        if reference_run.returncode != 0:
            row["numbers"] = verdict(reference_run, pattern, reference)
        for emulator in args.emulator:
            paths = [emulator, *(converted / p for p in extra)]
            for strict in ([], ["--strict"]):
                proc = run([python, "-m", "transplant", "emulate", *strict, *prog], converted / cwd, paths)
                label = f"{emulator.name} emulate{' --strict' if strict else ''}"
                row[label] = verdict(proc, pattern, reference)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    if rows:
        keys = list(rows[0])
        print("| " + " | ".join(keys) + " |")
        print("|" + "---|" * len(keys))
        for row in rows:
            print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
