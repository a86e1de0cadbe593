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
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "emulate_corpus"
sys.path.insert(0, str(HERE))

from zero_edit import PROGRAMS as ZERO_EDIT  # noqa: E402
from zero_edit import converted_tree, numbers, prepared, print_table  # noqa: E402

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


def verdict(proc: subprocess.CompletedProcess, pattern: str, reference: list[str]) -> str:
    """ "same numbers", "other numbers (N printed)", or "fails: " and the exception's line."""
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        error = next(
            (line for line in reversed(lines) if re.match(r"\w+(Error|Exception)\b|transplant emulate: error", line)),
            "",
        )
        return f"fails: {(error or lines[-1] if lines else '')[:100]}"
    got = numbers(pattern, proc.stdout)
    if not reference:
        return "nothing to compare"
    return "same numbers" if got == reference else f"other numbers ({len(got)} printed)"


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
    for program, work, original in prepared(PROGRAMS, args.only, args.mirror, OUT):
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
    print_table(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
