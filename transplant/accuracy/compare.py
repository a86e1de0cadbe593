"""``transplant compare --golden BENCH_DUMP --target NPU_DUMP [-o OUT] [--format text|json] [--xlsx]``.

The guide's other steps are tasks of the same command (``--task``): ``params`` (parameters.py),
``loss`` (loss.py), ``overflow`` (overflow.py); ``dumps``, the default, is this module.

Pairs the step and rank folders both dumps have, runs msprobe's comparison on each pair (in a
child process, ``worker.py``: this process never imports msprobe or torch), keeps msprobe's tables
under OUT (default ``accuracy_compare/``) and prints what a person needs first: how many items
were compared, how many pass, warn and fail, the first item in execution order that does not
pass (its API or module, the metric, the line of the user's code it came from), the first item
with no counterpart on the golden side (msprobe writes ``pass`` for a row whose bench name is
``N/A``: those are counted as unmatched here), and the first operator that overflows in the
target (NaN/Inf out of finite inputs: dumps.first_overflow). msprobe writes CSV tables (26.x, the
default) or workbooks (``--xlsx``, and releases before 2026-05): both are read.

Exit status: 0 when every compared item passes, 1 when any does not (or msprobe failed on a
pair), 2 for usage errors (a missing folder, no step in common, msprobe not installed).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import dumps, runs, tables
from .runs import EXIT_DIFFERENT, EXIT_OK, EXIT_USAGE, run_worker
from .runs import fail as _fail

TASKS = ("dumps", "params", "loss", "overflow")
VERDICTS = ("pass", "warning", "error")
RELATIVE_ERRORS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
TENSOR_METRICS = (
    "Cosine",
    "EucDist",
    "MaxAbsErr",
    "MaxRelativeErr",
    "One Thousandth Err Ratio",
    "Five Thousandths Err Ratio",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise SystemExit(_fail(f"{message} (see 'transplant compare --help')"))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="transplant compare",
        description="Compare the msprobe dumps of the original run (golden) and the converted run (target).",
    )
    p.add_argument(
        "--task",
        choices=TASKS,
        default="dumps",
        help="the guide's steps: params (the two models' parameters), loss (the two runs' losses step by step), "
        "overflow (the first operator whose output overflows), dumps (msprobe's comparison; the default)",
    )
    p.add_argument(
        "--golden",
        type=Path,
        help="the original run's dump folder (accuracy_dump/), or its log with --task loss",
    )
    p.add_argument(
        "--target",
        type=Path,
        required=True,
        help="the converted run's dump folder (accuracy_dump/), or its log with --task loss",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("accuracy_compare"),
        help="folder for msprobe's result tables (default: accuracy_compare)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="summary format")
    p.add_argument("--xlsx", action="store_true", help="msprobe writes its tables as workbooks (default: CSV)")
    p.add_argument(
        "--allow-cpu",
        action="store_true",
        help="compare even when a side's record shows that it computed on the CPU (or under transplant emulate)",
    )
    from . import loss

    loss.add_arguments(p)
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
    overflow: dict | None = None
    unmatched: Item | None = None
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
        if args.task != "dumps":
            from . import loss, overflow, parameters

            return {"params": parameters.main, "loss": loss.main, "overflow": overflow.main}[args.task](args)
        if args.golden is None:
            return _fail("--golden is required (the original run's dump folder)")
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
    where_notes: list[str] = []
    for name, dump in (("golden", golden), ("target", target)):
        problem = _where(name, dump.root, args.allow_cpu, where_notes)
        if problem:
            return _fail(problem)
    shared, notes = dumps.pair(golden, target)
    if not shared:
        return _fail(
            f"the dumps share no step and rank (golden: {dumps.describe(golden)}; target: {dumps.describe(target)})"
        )
    if not runs.installed():
        return _fail(
            f"msprobe is not installed: pip install {runs.PACKAGE} (or: pip install 'transplant-npu[accuracy]')"
        )
    summary = Summary(notes=golden.notes + target.notes + notes + where_notes)
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
    tables = _run_msprobe(jobs, args.output / "msprobe_compare.log", summary, args.xlsx)
    for (key, _g, unit, _out), table in zip(jobs, tables):
        if table is not None:
            _read_table(summary, key, unit, table)
        if summary.overflow is None:
            summary.overflow = dumps.described(key, unit, dumps.first_overflow(unit))
        if summary.nan_inf is None:
            summary.nan_inf = dumps.described(key, unit, dumps.first_nan_inf(unit))
    print(_json(summary) if args.format == "json" else _text(summary, len(shared)))
    return EXIT_OK if summary.passed else EXIT_DIFFERENT


def _where(name: str, root: Path, allow_cpu: bool, notes: list[str]) -> str | None:
    """A usage error when the side's records show it computed on the CPU (unless allowed); notes
    otherwise. A dump without records (made before accuracy mode wrote them) is compared, with a note."""
    records = dumps.where_records(root)
    if not records:
        notes.append(f"no record of where the {name} run computed (no {dumps.WHERE_GLOB} beside its dump)")
        return None
    for path, record in records:
        reason = dumps.cpu_reason(record)
        if reason is not None:
            if not allow_cpu:
                return (
                    f"the {name} run computed on the CPU ({path.name}: {reason}); a comparison with it says nothing "
                    "about the NPU: run it on its device, or pass --allow-cpu"
                )
            notes.append(f"the {name} run computed on the CPU ({reason}), compared as --allow-cpu asks")
            return None
        if dumps.fallback_allowed(record):
            notes.append(
                f"the {name} run allowed CPU fallbacks (TORCH_NPU_FALLBACK_CPU_DISABLE was not 1): "
                "some operators may have run on the CPU"
            )
            return None
    return None


def _run_msprobe(jobs, log: Path, summary: Summary, xlsx: bool = False) -> list[Path | None]:
    """msprobe's result table of each job (None where it made none), from one child process."""
    before = [{p: p.stat().st_mtime for p in tables.found(out)} for _k, _g, _t, out in jobs]
    results = run_worker(
        [
            ["compare", "-tp", str(t / "dump.json"), "-gp", str(g / "dump.json"), "-o", str(out)]
            + (["--xlsx"] if xlsx else [])
            for _k, g, t, out in jobs
        ],
        log,
    )
    made: list[Path | None] = []
    for (key, _g, _t, out), old, error in zip(jobs, before, results):
        new = sorted(
            (p for p in tables.found(out) if old.get(p) != p.stat().st_mtime),
            key=lambda p: p.stat().st_mtime,
        )  # msprobe names tables by the second: one may be replaced
        where = "/".join(filter(None, key)) or "the dumps"
        if error or not new:
            summary.failures.append(f"{where}: {error or 'msprobe wrote no result table'} (see {log})")
            made.append(None)
        else:
            made.append(new[-1])
            summary.tables.append(str(new[-1]))
    return made


def _read_table(summary: Summary, key: tuple[str, str], unit: Path, table: Path) -> None:
    for row in tables.rows(table):
        verdict = (row.get("Result") or "").strip().lower()
        verdict = "error" if verdict == "diff" else verdict  # md5 dumps: the checksums differ
        if not verdict and "Accuracy Reached or Not" in row:
            verdict = {"yes": "pass", "no": "error"}.get(row["Accuracy Reached or Not"].strip().lower(), "")
        if "Bench Name" in row and (row["Bench Name"] or "").strip() in ("", "N/A"):
            verdict = "unmatched"  # msprobe 26.2 writes pass for a row with no bench counterpart
            if summary.unmatched is None:
                name = row.get("NPU Name", "")
                summary.unmatched = Item(key[0], key[1], name, verdict, "", "", dumps.source_line(unit, name))
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
    if s.unmatched is not None:
        u = s.unmatched
        where = "/".join(filter(None, (u.step, u.rank)))
        lines.append(
            f"first item with no counterpart in the golden run{f' ({where})' if where else ''}: {u.name}"
            + (f", called from {u.source}" if u.source else "")
        )
    for label, n in (("first overflow in the target", s.overflow), ("first NaN/Inf in the target", s.nan_inf)):
        if n is not None and (label.startswith("first overflow") or s.overflow is None or n != s.overflow):
            lines.append(dumps.shown(label, n))
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
            "unmatched_first": asdict(s.unmatched) if s.unmatched else None,
            "overflow": s.overflow,
            "nan_inf": s.nan_inf,
            "tables": s.tables,
            "not_compared": s.failures,
            "notes": s.notes,
        },
        indent=2,
    )
