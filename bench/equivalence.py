"""Check that folding statements away (transplant.skeleton) changes no result, on real code.

    python3 bench/equivalence.py PATH...      # e.g. the site-packages/torch of an installed PyTorch

For every .py file under PATH: the skeleton, when there is one, restores to the file byte for byte;
for every file the pre-filter lets through, converting through the skeleton gives the same bytes,
records and errors as converting the whole source. Prints the files that differ, the counts, and
the conversion time both ways. Exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transplant import engine  # noqa: E402
from transplant.engine import driver  # noqa: E402
from transplant.rules import load_ruleset  # noqa: E402
from transplant.skeleton import skeleton  # noqa: E402


def outcome(convert, data: bytes, rules) -> tuple[float, object]:
    start = time.perf_counter()
    try:
        conv = convert(data, rules)
        result: object = (conv.new, [dataclasses.astuple(r) for r in conv.records])
    except engine.SourceError as exc:
        result = ("error", str(exc), exc.line, exc.col)
    return time.perf_counter() - start, result


def whole(data: bytes, rules) -> engine.Conversion:
    folding = driver.skeleton
    driver.skeleton = lambda *args: None
    try:
        return engine.convert(data, rules)
    finally:
        driver.skeleton = folding


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path)
    args = ap.parse_args(argv)
    rules = load_ruleset([])
    files = converted = folded = bad = 0
    fast_s = whole_s = 0.0
    for root in args.paths:
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                files += 1
                skel = skeleton(data, rules)
                if skel is not None and skel.restore(skel.text) != data:
                    print(f"restore differs: {path}")
                    bad += 1
                if not rules.may_match(data):
                    continue
                converted += 1
                folded += skel is not None
                t_fast, fast = outcome(engine.convert, data, rules)
                t_whole, slow = outcome(whole, data, rules)
                fast_s += t_fast
                whole_s += t_whole
                if fast != slow:
                    print(f"conversion differs: {path}")
                    bad += 1
    print(
        f"{files} files, {converted} converted ({folded} through a skeleton), {bad} differ; "
        f"conversion {fast_s:.1f} s with skeletons, {whole_s:.1f} s whole"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
