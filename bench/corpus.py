"""Convert the real repositories named in bench/corpus.json and print what a reviewer reads first.

    python3 bench/corpus.py --mirror /path/to/mirrors            # every repository in the manifest
    python3 bench/corpus.py --mirror DIR --only nanoGPT mamba      # names containing these words

Each repository is exported at its pinned commit from a local git directory,
``MIRROR/<owner>+<name>/repo`` or ``MIRROR/<owner>+<name>`` (the layout the session's fetch tool
writes), into bench/out/corpus/<name>/ (git-ignored), converted with this checkout's transplant,
then converted a second time to check that nothing changes. For each repository it prints the
seconds of the conversion, the Python files changed, the rows of change_list.csv, the rows of the
workbook's Unsupported sheet by level (when openpyxl is installed), and whether the second run was
idempotent. A unified diff of every changed file is written to bench/out/corpus/<name>.diff, to be
read as a reviewer would.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "corpus"


def git_dir(mirror: Path, repo: str) -> Path | None:
    base = mirror / repo.replace("/", "+")
    for candidate in (base / "repo", base, base / ".git", base.with_name(base.name + ".git")):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def export(gdir: Path, commit: str, dest: Path, paths: list[str] | None = None) -> int:
    """Write the commit's files (only those under `paths` when given) under dest; blobs the mirror
    lacks (its largest files) are skipped. Returns how many were skipped."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    listing = subprocess.run(
        ["git", "--git-dir", str(gdir), "ls-tree", "-r", "-z", commit, "--", *(paths or [])],
        check=True,
        capture_output=True,
    ).stdout
    entries = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, raw_path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha, raw_path.decode("utf-8", "surrogateescape")))
    batch = subprocess.run(
        ["git", "--git-dir", str(gdir), "cat-file", "--batch"],
        check=True,
        input=b"".join(sha + b"\n" for _, sha, _ in entries),
        capture_output=True,
    ).stdout
    skipped, pos = 0, 0
    for mode, _sha, path in entries:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            skipped += 1
            continue
        size = int(header[2])
        data, pos = batch[pos : pos + size], pos + size + 1
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            continue  # symbolic links are left out of the export
        target.write_bytes(data)
        if mode == b"100755":
            target.chmod(0o755)
    return skipped


def convert(src: Path, out: Path, options: tuple[str, ...] = ()) -> tuple[float, int]:
    """Convert ``src`` into ``out`` with this checkout's transplant (``options``: more of its flags)."""
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "transplant", "-q", "-i", str(src), "-o", str(out), "--force", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
    return time.perf_counter() - start, proc.returncode


def python_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.py") if p.is_file()}


def write_diff(before: dict[str, bytes], after: dict[str, bytes], path: Path) -> int:
    changed = 0
    with path.open("w", encoding="utf-8") as fh:
        for name in sorted(after):
            old, new = before.get(name, b""), after[name]
            if old == new:
                continue
            changed += 1
            fh.writelines(
                difflib.unified_diff(
                    old.decode("utf-8", "replace").splitlines(True),
                    new.decode("utf-8", "replace").splitlines(True),
                    f"a/{name}",
                    f"b/{name}",
                )
            )
    return changed


def sheet_levels(workbook: Path) -> str:
    try:
        import openpyxl
    except ImportError:
        return "-"
    if not workbook.is_file():
        return "-"
    sheet = openpyxl.load_workbook(workbook, read_only=True)["Unsupported"]
    rows = list(sheet.iter_rows(values_only=True))
    if not rows:
        return "0"
    header = [str(h).lower() if h is not None else "" for h in rows[0]]
    level = header.index("level") if "level" in header else None
    if level is None:
        return str(len(rows) - 1)
    counts = Counter(str(r[level]) for r in rows[1:])
    return " ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("TRANSPLANT_MIRROR", "/work/.mirror")))
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    manifest = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))["repositories"]
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"{'repository':40} {'secs':>6} {'changed':>8} {'rows':>6}  {'idempotent':10} unsupported sheet")
    status = 0
    for entry in manifest:
        repo, commit = entry["repo"], entry["commit"]
        name = repo.split("/")[1]
        if args.only and not any(word.lower() in repo.lower() for word in args.only):
            continue
        gdir = git_dir(args.mirror, repo)
        if gdir is None:
            print(f"{repo:40} no mirror under {args.mirror}")
            continue
        src = OUT / "src" / name
        export(gdir, commit, src)
        secs, code = convert(src, OUT / "first")
        if code != 0:
            print(f"{repo:40} conversion exited {code}")
            status = 1
            continue
        result = OUT / "first" / f"{name}_msft"
        after = python_files(result)
        changed = write_diff(python_files(src), after, OUT / f"{name}.diff")
        with (result / "change_list.csv").open(encoding="utf-8", newline="") as fh:
            rows = sum(1 for _ in csv.reader(fh)) - 1
        _, code2 = convert(result, OUT / "second")
        again = python_files(OUT / "second" / f"{name}_msft_msft") if code2 == 0 else {}
        idempotent = code2 == 0 and all(again.get(k) == v for k, v in after.items())
        status |= 0 if idempotent else 1
        print(
            f"{repo:40} {secs:6.2f} {changed:8d} {rows:6d}  {str(idempotent):10} "
            f"{sheet_levels(result / 'unsupported_op.xlsx')}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
