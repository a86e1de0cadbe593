"""``transplant compare --task overflow --target DUMP [--golden DUMP] [-o OUT]``: the first operator
whose output overflows, with its step, rank and the line of user code that called it.

The guide's overflow step (seed 001): on a large model the dump comparison drowns in data, so find
the first operator that makes NaN/Inf out of finite inputs (fp16 past 65504), then dump that one.
msprobe does it offline in mindstudio-probe 26.x: ``msprobe overflow_check -i DUMP/stepN -o OUT``
over a statistics dump (``msprobe/overflow_check/analyzer.py``: per rank the first anomalous node
before the first communication, then across ranks through the communication operators) writes
``anomaly_analyze_<ns>.json``. Releases without that command (overflow was a dump task there) and
step folders msprobe cannot read (several single-process runs in one step) get transplant's own
scan of the same rule (dumps.first_overflow), and the report says so.

Exit status: 0 when nothing overflows, 1 when something does, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import dumps
from .runs import EXIT_DIFFERENT, EXIT_OK, run_worker
from .runs import fail as _fail
from .runs import installed as _installed

RESULT = "anomaly_analyze_*.json"


@dataclass
class Found:
    step: str
    rank: str
    name: str
    detail: str
    source: str | None
    by: str  # "msprobe overflow_check" or "transplant's scan"


@dataclass
class Side:
    first: Found | None = None
    per_rank: list[Found] = field(default_factory=list)  # the first step's other ranks
    notes: list[str] = field(default_factory=list)


def main(args: argparse.Namespace) -> int:
    sides = {"target": args.target} | ({"golden": args.golden} if args.golden is not None else {})
    layouts = {}
    for name, path in sides.items():
        if not path.is_dir():
            return _fail(f"--{name} {path}: no such folder")
        layouts[name] = dumps.read_layout(path)
        if not layouts[name].units:
            return _fail(f"--{name} {path}: no msprobe dump in it (no step*/rank*/dump.json)")
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"-o {args.output}: {exc.strerror}")
    use_msprobe = _installed()
    results = {name: check(layout, args.output / name, use_msprobe) for name, layout in layouts.items()}
    if args.format == "json":
        print(json.dumps({name: _as_json(side) for name, side in results.items()}, indent=2))
    else:
        print(_text(results))
    return EXIT_DIFFERENT if results["target"].first is not None else EXIT_OK


def check(layout: dumps.Dump, output: Path, use_msprobe: bool = True) -> Side:
    """The first overflow of one dump: by msprobe's overflow_check where it can read the step
    folder, by the same rule in transplant otherwise."""
    side = Side(notes=list(layout.notes))
    steps: dict[str, list[tuple[str, Path]]] = {}
    for (step, rank), unit in layout.units.items():
        steps.setdefault(step, []).append((rank, unit))
    order = sorted(steps, key=lambda s: dumps.order(Path(s or "_")))
    jobs = [s for s in order if use_msprobe and _readable(steps[s])]
    results: dict[str, str | None] = {}
    before = {p for s in jobs for p in (output / (s or "dump")).glob(RESULT)}  # an earlier run's results
    if jobs:
        output.mkdir(parents=True, exist_ok=True)
        argvs = [["overflow_check", "-i", str(steps[s][0][1].parent), "-o", str(output / (s or "dump"))] for s in jobs]
        results = dict(zip(jobs, run_worker(argvs, output / "msprobe_overflow_check.log")))
        if "unsupported" in results.values():
            side.notes.append("this msprobe release has no overflow_check command: transplant's own scan")
        for s, error in results.items():
            if error and error != "unsupported":
                side.notes.append(f"{s}: {error} (see {output / 'msprobe_overflow_check.log'}): transplant's own scan")
    for s in order:
        units = dict(steps[s])
        if s in results and results[s] is None:
            found = _from_msprobe(output / (s or "dump"), s, units, before)
        else:
            found = [f for f in (_scanned(s, rank, unit) for rank, unit in steps[s]) if f is not None]
        if found:
            side.per_rank = sorted(found, key=lambda f: dumps.order(Path(f.rank or "_")))
            side.first = side.per_rank[0]
            break
    return side


def _readable(units: list[tuple[str, Path]]) -> bool:
    """msprobe reads a step folder of rank folders, or of exactly one proc folder."""
    if any(rank == "" for rank, _ in units):
        return False
    folder = units[0][1].parent
    procs = [p for p in folder.iterdir() if p.name.startswith("proc")]
    return not procs or len(procs) == 1 and len(units) == 1


def _from_msprobe(folder: Path, step: str, units: dict[str, Path], before: set[Path]) -> list[Found]:
    files = sorted(set(folder.glob(RESULT)) - before, key=lambda p: p.stat().st_mtime)
    if not files:
        return []
    try:
        content = json.loads(files[-1].read_text())
    except (OSError, ValueError):
        return []
    found = []
    for rank_key, nodes in content.items() if isinstance(content, dict) else ():
        if not (isinstance(nodes, list) and nodes and isinstance(nodes[0], dict)):
            continue
        number = rank_key.removeprefix("rank_")
        rank = f"rank{number}" if f"rank{number}" in units else next(iter(units)) if len(units) == 1 else rank_key
        unit = units.get(rank)
        name = str(nodes[0].get("op_name", ""))
        detail = ""
        if unit is not None:
            mine = dumps.scan(dumps.records(unit).get(name, {}).get("output"), "output", ("Max", "Min"))
            detail = f"{mine[0]} ({mine[1]} = {mine[2]})" if mine else ""
        source = dumps.source_line(unit, name) if unit is not None else None
        found.append(Found(step, rank, name, detail, source, "msprobe overflow_check"))
    return found


def _scanned(step: str, rank: str, unit: Path) -> Found | None:
    hit = dumps.first_overflow(unit)
    if hit is None:
        return None
    name, where, stat, value = hit
    return Found(step, rank, name, f"{where} ({stat} = {value})", dumps.source_line(unit, name), "transplant's scan")


def _where(f: Found) -> str:
    return "/".join(filter(None, (f.step, f.rank))) or "the dump"


def _text(results: dict[str, Side]) -> str:
    lines = []
    for name, side in results.items():
        if side.first is None:
            lines.append(f"transplant compare: overflow: the {name} run: no operator overflows in the dumped steps")
        else:
            f = side.first
            lines.append(
                f"transplant compare: overflow: the {name} run: first operator that overflows ({_where(f)}): "
                f"{f.name}" + (f" {f.detail}" if f.detail else "")
            )
            lines.append(f"  called from: {f.source or 'unknown (no stack.json entry)'}")
            lines.append(f"  found by: {f.by}")
            lines += [f"  also {_where(o)}: {o.name}" for o in side.per_rank[1:]]
        lines += [f"note: {n}" for n in side.notes]
    target = results["target"].first
    if target is not None:
        lines.append(
            f"next: dump {target.step or 'that step'}'s tensors on both sides (accuracy --data tensors) and compare "
            "them up to that operator"
        )
    return "\n".join(lines)


def _as_json(side: Side) -> dict:
    def one(f: Found | None):
        return None if f is None else vars(f)

    return {"first": one(side.first), "ranks": [vars(f) for f in side.per_rank], "notes": side.notes}
