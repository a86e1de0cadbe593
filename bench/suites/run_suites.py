"""Run public projects' own test suites on the original and, converted, under `transplant emulate -m pytest`.

    python3 bench/suites/run_suites.py --clones DIR [--only NAME] [--keep]

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
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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


def outcomes(xml: Path) -> dict[str, str]:
    """test id -> passed / failed / skipped, from pytest's JUnit XML."""
    if not xml.exists():
        return {}
    result = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        result[test] = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
    return result


def run_suite(folder: Path, tests: list[str], xml: Path, emulated: bool) -> tuple[dict[str, str], float, int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *tests]
    command = [sys.executable, *(["-m", "transplant", "emulate"] if emulated else []), *pytest]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    (xml.parent / f"{xml.stem}.log").write_text(proc.stdout + proc.stderr)
    return outcomes(xml), time.perf_counter() - start, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", type=Path, required=True)
    parser.add_argument("--only", action="append")
    parser.add_argument("--keep", action="store_true", help="keep the work folder and print where it is")
    args = parser.parse_args()
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
        before, seconds_before, status_before = run_suite(
            original, project["tests"], work / f"{project['name']}-before.xml", emulated=False
        )
        out = work / "converted"
        subprocess.run(
            [sys.executable, "-m", "transplant", "-q", "-i", str(original), "-o", str(out)],
            check=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        converted = out / f"{project['name']}_msft"
        after, seconds_after, status_after = run_suite(
            converted, project["tests"], work / f"{project['name']}-after.xml", emulated=True
        )
        count = lambda results, kind: sum(1 for v in results.values() if v == kind)  # noqa: E731
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
    if args.keep:
        print(f"work folder: {work}")
    return 1 if undocumented else 0


if __name__ == "__main__":
    raise SystemExit(main())
