"""Run public projects' own test suites on the original and, converted, under `transplant emulate -m pytest`.

    python3 bench/suites/run_suites.py --clones DIR [--only NAME] [--keep] [--zero-edit]

DIR holds a clone or bare mirror of each repository of manifest.json as DIR/<owner>+<name> (or
DIR/<owner>+<name>/repo, the layout of the session's mirrors). For each project: the pinned commit's
"paths" are exported (bench/corpus.py's exporter) into a temporary folder; its tests run there with this
Python (`python -m pytest`, per-test results from JUnit XML); the folder is converted (`transplant -i
... -o ...`); the converted copy's tests run under `transplant emulate -m pytest`. Printed per project:
the counts before and after, and every test that passed before and did not after, with the reason when
manifest.json's "differences" names one, and the outcomes of the tests only the conversion ran (skipped
on the CPU original, or an NPU entry in a test device list). The exit status is 1 when such a test has
no documented reason. Nothing is downloaded: the projects' own requirements ("requires") must be
importable here.

With --zero-edit (issue 35) each suite runs four ways: the original on the CPU (the baseline), the
original under `transplant emulate --transfer-to-npu` (torch_npu's runtime migration, the zero-edit
path), the project's `transplant --mode runtime` conversion under `emulate --transfer-to-npu` (a test
suite is started by pytest, not by one of the project's programs, so the variable comes from the
launch, as it would on an NPU), and the full conversion under `emulate`. Printed: one Markdown row per
project with, for each way, the lines it changed (bench/zero_edit.py's count), the tests passed /
failed / errored, and the tests that passed on the original and not there; the exit status is 1 when
runtime mode loses a test that the zero-edit path passes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFEST = HERE / "manifest.json"
sys.path.insert(0, str(HERE.parent))
import corpus  # noqa: E402  (bench/corpus.py: the exporter shared with the corpus run)
from zero_edit import changed_lines  # noqa: E402  (the same count as the programs' table)


def export(clones: Path, project: dict, into: Path) -> Path:
    """The pinned commit's files named in "paths", written by corpus.py's exporter (which skips the
    blobs a mirror lacks, where `git archive` would stop)."""
    gdir = corpus.git_dir(clones, project["repo"])
    if gdir is None:
        raise SystemExit(f"run_suites: no clone of {project['repo']} in {clones}")
    target = into / project["name"]
    skipped = corpus.export(gdir, project["commit"], target, project.get("paths"))
    if skipped:
        print(f"{project['name']}: {skipped} file(s) missing from the mirror were left out")
    return target


def outcomes(xml: Path, errors: bool = False) -> dict[str, str]:
    """test id -> passed / failed / skipped, from pytest's JUnit XML; with ``errors``, a test whose
    set-up or tear-down raised (JUnit's error) is "errored", else it counts as failed."""
    if not xml.exists():
        return {}
    result = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        if "error" in kinds:
            result[test] = "errored" if errors else "failed"
        else:
            result[test] = "failed" if "failure" in kinds else "skipped" if "skipped" in kinds else "passed"
    return result


def run_suite(
    folder: Path, tests: list[str], xml: Path, emulated: bool, transfer: bool = False, errors: bool = False
) -> tuple[dict[str, str], float, int]:
    """The suite's ``tests`` in ``folder``: with this Python, or under `transplant emulate`
    (``emulated``), with torch_npu's runtime migration (``transfer``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *tests]
    emulate = ["-m", "transplant", "emulate", *(["--transfer-to-npu"] if transfer else [])]
    command = [sys.executable, *(emulate if emulated else []), *pytest]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    (xml.parent / f"{xml.stem}.log").write_text(proc.stdout + proc.stderr)
    return outcomes(xml, errors), time.perf_counter() - start, proc.returncode


def convert(project: dict, original: Path, out: Path, options: tuple[str, ...] = ()) -> Path:
    """The project converted by this checkout's transplant with ``options``: the converted folder."""
    subprocess.run(
        [sys.executable, "-m", "transplant", "-q", "-i", str(original), "-o", str(out), *options],
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return out / f"{project['name']}_msft"


def count(results: dict[str, str], kind: str) -> int:
    return sum(1 for v in results.values() if v == kind)


# the four ways of --zero-edit: column name, converted with (None: the original), under emulate, with
# torch_npu's runtime migration
WAYS = (
    ("original on the CPU", None, False, False),
    ("zero-edit path", None, True, True),
    ("runtime mode", ("--mode", "runtime"), True, True),
    ("full conversion", (), True, False),
)


def compare(project: dict, original: Path, work: Path) -> tuple[dict[str, object], bool]:
    """The suite four ways (WAYS): a Markdown row's cells, and whether runtime mode lost a test that
    the zero-edit path passed."""
    name = project["name"]
    results: dict[str, dict[str, str]] = {}
    cells: dict[str, object] = {"project": f"{name} ({project['repo']}@{project['commit'][:10]})"}
    for way, options, emulated, transfer in WAYS:
        folder, slug = original, re.sub(r"\W+", "-", way)
        if options is not None:
            folder = convert(project, original, work / slug, options)
        lines = changed_lines(original, folder) if options is not None else 0  # (before the run writes files)
        xml = work / f"{name}-{slug}.xml"
        got, seconds, status = run_suite(folder, project["tests"], xml, emulated, transfer, errors=True)
        results[way] = got
        lost = sorted(t for t, o in results[WAYS[0][0]].items() if o == "passed" and got.get(t) != "passed")
        cells[way] = (
            f"{lines} lines; {count(got, 'passed')} / {count(got, 'failed')} / {count(got, 'errored')}"
            f" ({seconds:.0f} s); lost {len(lost)}"
        )
        print(f"{name}: {way}: exit {status}, {cells[way]}", flush=True)
        for test in lost:
            print(f"  passed on the original, {got.get(test, 'missing')} here: {test}", flush=True)
    zero, runtime = results["zero-edit path"], results["runtime mode"]
    worse = sorted(t for t, o in zero.items() if o == "passed" and runtime.get(t) != "passed")
    for test in worse:
        print(
            f"  RUNTIME MODE WORSE: passed on the zero-edit path, {runtime.get(test, 'missing')} in runtime mode: {test}"
        )
    return cells, bool(worse)


def table(rows: list[dict[str, object]]) -> None:
    if not rows:
        return
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", type=Path, required=True)
    parser.add_argument("--only", action="append")
    parser.add_argument("--keep", action="store_true", help="keep the work folder and print where it is")
    parser.add_argument(
        "--zero-edit",
        action="store_true",
        help="run each suite four ways: the original, the zero-edit path, runtime mode, the full conversion",
    )
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    worse = False
    manifest = json.loads(MANIFEST.read_text())
    differences = manifest.get("differences", {})
    undocumented = 0
    work = Path(tempfile.mkdtemp(prefix="transplant-suites-"))
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        missing = [m for m in project["requires"] if importlib.util.find_spec(m) is None]
        if missing:
            print(f"{project['name']}: skipped, needs {', '.join(missing)} installed")
            continue
        original = export(args.clones, project, work / "original")
        if args.zero_edit:
            cells, lost = compare(project, original, work)
            rows.append(cells)
            worse |= lost
            continue
        before, seconds_before, status_before = run_suite(
            original, project["tests"], work / f"{project['name']}-before.xml", emulated=False
        )
        converted = convert(project, original, work / "converted")
        after, seconds_after, status_after = run_suite(
            converted, project["tests"], work / f"{project['name']}-after.xml", emulated=True
        )
        print(
            f"{project['name']} ({project['repo']}@{project['commit'][:10]}): "
            f"original {count(before, 'passed')} passed, {count(before, 'failed')} failed, "
            f"{count(before, 'skipped')} skipped in {seconds_before:.0f}s (exit {status_before}); "
            f"converted under emulate {count(after, 'passed')} passed, {count(after, 'failed')} failed, "
            f"{count(after, 'skipped')} skipped in {seconds_after:.0f}s (exit {status_after})"
        )
        for test, outcome in sorted(before.items()):
            if outcome == "passed" and after.get(test) != "passed":
                reason = differences.get(f"{project['name']}::{test}")
                undocumented += reason is None
                print(
                    f"  passed before, {after.get(test, 'missing')} after: {test}"
                    f"{f' -- {reason}' if reason else ' -- NOT DOCUMENTED'}"
                )
        # tests the original did not run (skipped for want of an accelerator, or absent from a device
        # list that gains the NPU after conversion) and the conversion ran
        new = {
            test: outcome
            for test, outcome in after.items()
            if before.get(test, "skipped") == "skipped" and outcome != "skipped"
        }
        if new:
            print(
                f"  run only after conversion (the NPU path): {count(new, 'passed')} passed, "
                f"{count(new, 'failed')} failed"
            )
            for test in sorted(test for test, outcome in new.items() if outcome == "failed"):
                print(f"  run only after, failed: {test}")
    table(rows)
    if args.keep:
        print(f"work folder: {work}")
    return 1 if undocumented or worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
