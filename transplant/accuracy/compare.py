"""``transplant compare --golden BENCH_DUMP --target NPU_DUMP [-o OUT] [--format text|json]``.

Pairs the step and rank folders both dumps have, runs msprobe's comparison on each pair (in a
child process, ``worker.py``: this process never imports msprobe or torch), keeps msprobe's tables
under OUT (default ``accuracy_compare/``) and prints what a person needs first: how many items
were compared, how many pass, warn and fail, the first item in execution order that does not
pass (its API or module, the metric, the line of the user's code it came from), and the first
NaN/Inf in the target's statistics.

Exit status: 0 when every compared item passes, 1 when any does not (or msprobe failed on a
pair), 2 for usage errors (a missing folder, no step in common, msprobe not installed).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import dumps

EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2
VERDICTS = ("pass", "warning", "error")
PACKAGE = "mindstudio-probe"
WORKER = Path(__file__).resolve().with_name("worker.py")
RELATIVE_ERRORS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
TENSOR_METRICS = (
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
)
csv.field_size_limit(1 << 28)  # stack columns are long


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise SystemExit(_fail(f"{message} (see 'transplant compare --help')"))


def _fail(message: str) -> int:
    print(f"transplant compare: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="transplant compare",
        description="Compare the msprobe dumps of the original run (golden) and the converted run (target).",
    )
    p.add_argument("--golden", type=Path, required=True, help="dump folder of the original run (accuracy_dump/)")
    p.add_argument("--target", type=Path, required=True, help="dump folder of the converted run (accuracy_dump/)")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("accuracy_compare"),
        help="folder for msprobe's result tables (default: accuracy_compare)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="summary format")
    return p


@dataclass
class Item:
    step: str
    rank: str
    name: str
    result: str
    message: str
    metric: str
    source: str | None


@dataclass
class Summary:
    compared: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {v: 0 for v in (*VERDICTS, "unmatched")})
    first: Item | None = None
    nan_inf: dict | None = None
    tables: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # pairs msprobe could not compare
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.compared > 0 and self.first is None and not self.failures


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _compare(args)
    except KeyboardInterrupt:
        print("transplant compare: interrupted", file=sys.stderr)
        return 130


def _compare(args: argparse.Namespace) -> int:
    for name, path in (("golden", args.golden), ("target", args.target)):
        if not path.is_dir():
            return _fail(f"--{name} {path}: no such folder")
    golden, target = dumps.read_layout(args.golden), dumps.read_layout(args.target)
    for name, dump in (("golden", golden), ("target", target)):
        if not dump.units:
            return _fail(f"--{name} {dump.root}: no msprobe dump in it (no step*/rank*/dump.json)")
    shared, notes = dumps.pair(golden, target)
    if not shared:
        return _fail(
            f"the dumps share no step and rank (golden: {dumps.describe(golden)}; target: {dumps.describe(target)})"
        )
    if not _installed():
        return _fail(f"msprobe is not installed: pip install {PACKAGE} (or: pip install 'transplant-npu[accuracy]')")
    summary = Summary(notes=golden.notes + target.notes + notes)
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"-o {args.output}: {exc.strerror}")
    jobs = [
        (
            key,
            golden.units[key],
            target.units[key],
            args.output.joinpath(*filter(None, key)) if any(key) else args.output,
        )
        for key in shared
    ]
    tables = _run_msprobe(jobs, args.output / "msprobe_compare.log", summary)
    for (key, _g, unit, _out), table in zip(jobs, tables):
        if table is not None:
            _read_table(summary, key, unit, table)
        if summary.nan_inf is None:
            found = dumps.first_nan_inf(unit)
            if found is not None:
                item, where, stat, value = found
                summary.nan_inf = {
                    "step": key[0],
                    "rank": key[1],
                    "name": item,
                    "argument": where,
                    "statistic": stat,
                    "value": str(value),
                    "source": dumps.source_line(unit, item),
                }
    print(_json(summary) if args.format == "json" else _text(summary, len(shared)))
    return EXIT_OK if summary.passed else EXIT_DIFFERENT


def _installed() -> bool:
    from importlib import metadata

    try:
        metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return False
    return True


def _run_msprobe(jobs, log: Path, summary: Summary) -> list[Path | None]:
    """msprobe's result table of each job (None where it made none), from one child process."""
    before = [{p: p.stat().st_mtime for p in out.glob("compare_result_*.csv")} for _k, _g, _t, out in jobs]
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, results_file = Path(tmp, "jobs.json"), Path(tmp, "results.json")
        jobs_file.write_text(
            json.dumps(
                [
                    {"golden": str(g / "dump.json"), "target": str(t / "dump.json"), "out": str(out)}
                    for _k, g, t, out in jobs
                ]
            )
        )
        with open(log, "w") as out:
            status = subprocess.run(
                [sys.executable, str(WORKER), str(jobs_file), str(results_file)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            ).returncode
        try:
            results = json.loads(results_file.read_text())
        except (OSError, ValueError):
            results = [f"msprobe's compare ended with status {status}"] * len(jobs)
    tables: list[Path | None] = []
    for (key, _g, _t, out), old, error in zip(jobs, before, results):
        new = sorted(
            (p for p in out.glob("compare_result_*.csv") if old.get(p) != p.stat().st_mtime),
            key=lambda p: p.stat().st_mtime,
        )  # msprobe names tables by the second: one may be replaced
        where = "/".join(filter(None, key)) or "the dumps"
        if error or not new:
            summary.failures.append(f"{where}: {error or 'msprobe wrote no result table'} (see {log})")
            tables.append(None)
        else:
            tables.append(new[-1])
            summary.tables.append(str(new[-1]))
    return tables


def _read_table(summary: Summary, key: tuple[str, str], unit: Path, table: Path) -> None:
    with open(table, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            verdict = (row.get("Result") or "").strip().lower()
            verdict = "error" if verdict == "diff" else verdict  # md5 dumps: the checksums differ
            if not verdict and "Accuracy Reached or Not" in row:
                verdict = {"yes": "pass", "no": "error"}.get(row["Accuracy Reached or Not"].strip().lower(), "")
            summary.compared += 1
            summary.counts[verdict if verdict in VERDICTS else "unmatched"] += 1
            if verdict in ("warning", "error") and summary.first is None:
                name = row.get("NPU Name", "")
                summary.first = Item(
                    key[0],
                    key[1],
                    name,
                    verdict,
                    _message(row.get("Err_message", "")),
                    _metric(row),
                    dumps.source_line(unit, name),
                )


def _message(text: str) -> str:
    """msprobe's Err_message (a list written as text) as one line."""
    try:
        value = json.loads(text) if text.strip().startswith("[") else text
    except ValueError:
        value = text
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return " ".join(str(value).split())


def _metric(row: dict) -> str:
    """The metrics that show the difference: the relative errors of the statistics, or the tensor
    comparison's metrics."""
    names = [name for name in RELATIVE_ERRORS if row.get(name) not in (None, "", "N/A")] or [
        name for name in TENSOR_METRICS if row.get(name) not in (None, "", "N/A")
    ]
    return ", ".join(f"{name} {_short(row[name])}" for name in names)


def _short(text: str) -> str:
    """A number of msprobe's table in four significant digits (``0.004389110016198605%`` -> ``0.004389%``)."""
    text = text.strip()
    try:
        return f"{float(text.rstrip('%')):.4g}" + ("%" if text.endswith("%") else "")
    except ValueError:
        return text


def _text(s: Summary, pairs: int) -> str:
    c = s.counts
    lines = [
        f"transplant compare: {s.compared} items in {pairs} step/rank pair{'s' if pairs != 1 else ''}: "
        f"{c['pass']} pass, {c['warning']} warning, {c['error']} error"
        + (f", {c['unmatched']} unmatched (no counterpart on the other side)" if c["unmatched"] else "")
    ]
    if s.first is not None:
        f = s.first
        where = "/".join(filter(None, (f.step, f.rank)))
        lines.append(f"first item that does not pass{f' ({where})' if where else ''}: {f.name}: {f.result}")
        if f.metric:
            lines.append(f"  metric: {f.metric}")
        if f.message:
            lines.append(f"  msprobe: {f.message}")
        lines.append(f"  called from: {f.source or 'unknown (no stack.json entry)'}")
    elif s.compared and not s.failures:
        lines.append("every compared item passes")
    if s.nan_inf is not None:
        n = s.nan_inf
        lines.append(
            f"first NaN/Inf in the target: {n['name']} {n['argument']} ({n['statistic']} = {n['value']})"
            + (f", called from {n['source']}" if n["source"] else "")
        )
    lines += [f"not compared: {f}" for f in s.failures]
    lines += [f"note: {n}" for n in s.notes]
    if s.tables:
        lines.append("full tables: " + ", ".join(s.tables))
    return "\n".join(lines)


def _json(s: Summary) -> str:
    return json.dumps(
        {
            "status": "pass" if s.passed else "fail",
            "compared": s.compared,
            **s.counts,
            "first": asdict(s.first) if s.first else None,
            "nan_inf": s.nan_inf,
            "tables": s.tables,
            "not_compared": s.failures,
            "notes": s.notes,
        },
        indent=2,
    )
