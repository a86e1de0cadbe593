"""Dump the error and warning rows of the Unsupported sheet of the corpus, to read them one by one.

    python3 bench/report_rows.py --only FastChat                 # convert, then dump its rows
    python3 bench/report_rows.py --only verl --levels error warning note
    python3 bench/report_rows.py --reuse                         # dump what the last run converted

Each repository of bench/corpus.json is exported at its pinned commit (bench/corpus.py's export) and
converted once into bench/out/rows/<name>_msft/. Then every row of the workbook's Unsupported sheet
at the chosen levels is printed with its file:line, API, message and suggestion, and the source
lines of the original file where it points (each line of the row's Lines, up to --context of them),
so that a reader can say of each row whether it asks the user for something. A row's line in a
project file that is not Python is shown the same way. The last line per repository counts the
rows by level.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import convert, export, git_dir  # noqa: E402  (bench/ is not a package)

OUT = HERE / "out" / "rows"


def rows(workbook: Path) -> list[dict[str, object]]:
    import openpyxl

    sheet = openpyxl.load_workbook(workbook, read_only=True)["Unsupported"]
    table = list(sheet.iter_rows(values_only=True))
    if not table:
        return []
    header = [str(h) for h in table[0]]
    return [dict(zip(header, r)) for r in table[1:]]


def source_line(src: Path, rel: str, line: int) -> str:
    path = src / rel
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no such file in the source)"
    return text[line - 1].strip() if 0 < line <= len(text) else "(past the end)"


def dump(name: str, src: Path, workbook: Path, levels: list[str], context: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for row in rows(workbook):
        level = str(row.get("Level"))
        counts[level] += 1
        if level not in levels:
            continue
        rel, first = str(row["File"]), int(row["Line"] or 1)  # type: ignore[call-overload]
        lines = [int(x) for x in str(row.get("Lines") or first).split(", ") if x.strip().isdigit()]
        print(f"[{name}] {level} {rel}:{first}  {row['API']}")
        print(f"    message: {row['Message']}")
        print(f"    suggestion: {row['Suggestion'] or '(none)'}")
        for n in lines[:context]:
            print(f"    {n:>5} | {source_line(src, rel, n)}")
        if len(lines) > context:
            print(f"    ... {len(lines) - context} more lines")
    print(f"[{name}] rows: " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("TRANSPLANT_MIRROR", "/work/.mirror")))
    parser.add_argument("--only", nargs="*", default=[], help="repositories whose names contain these words")
    parser.add_argument("--levels", nargs="*", default=["error", "warning"], help="levels to print")
    parser.add_argument("--context", type=int, default=3, help="source lines shown per row")
    parser.add_argument("--reuse", action="store_true", help="read the last conversion instead of converting")
    args = parser.parse_args()
    manifest = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))["repositories"]
    status = 0
    for entry in manifest:
        repo, commit = entry["repo"], entry["commit"]
        name = repo.split("/")[1]
        if args.only and not any(word.lower() in repo.lower() for word in args.only):
            continue
        src, out = OUT / "src" / name, OUT / name
        if not args.reuse:
            gdir = git_dir(args.mirror, repo)
            if gdir is None:
                print(f"[{name}] no mirror under {args.mirror}")
                continue
            export(gdir, commit, src)
            _, code = convert(src, out)
            if code != 0:
                print(f"[{name}] conversion exited {code}")
                status = 1
                continue
        workbook = out / f"{name}_msft" / "unsupported_op.xlsx"
        if not workbook.is_file():
            print(f"[{name}] no workbook at {workbook}")
            continue
        dump(name, src, workbook, args.levels, args.context)
    return status


if __name__ == "__main__":
    sys.exit(main())
