"""``transplant compare --task params --golden BENCH_DUMP --target NPU_DUMP``: did both sides build
the same model? The number, names, shapes and dtypes of all parameters and of the trainable ones
(the debugging FAQ's first check, seed 004, before any number is compared).

The parameters come from the dumps accuracy mode already makes: at the module level (``--level
module`` or ``both``, the default) msprobe records each module call with its ``parameters``
(dtype, shape, requires_grad of each, ``msprobe/core/data_dump/data_collector.py``); an item
``Module.<path>.<Class>.forward.<n>`` gives the parameters ``<path>.<name>``. Modules that never
ran in the dumped step are not seen (on either side). The first step both dumps have is read, rank
by rank.

Exit status: 0 when both sides have the same parameters, 1 when they differ, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from . import dumps
from .runs import EXIT_DIFFERENT, EXIT_OK
from .runs import fail as _fail


@dataclass(frozen=True)
class Parameter:
    shape: tuple[int, ...]
    dtype: str
    trainable: bool

    def shown(self) -> str:
        return f"{list(self.shape)} {self.dtype.removeprefix('torch.')}" + ("" if self.trainable else " (frozen)")


def parameters(unit: Path) -> dict[str, Parameter]:
    """name -> parameter, from the module items of one rank's dump."""
    found: dict[str, Parameter] = {}
    for item, record in dumps.records(unit).items():
        parts = item.split(".")
        if parts[0] != "Module" or "forward" not in parts or not isinstance(record, dict):
            continue
        values = record.get("parameters")
        if not isinstance(values, dict):
            continue
        path = ".".join(parts[1 : parts.index("forward") - 1])  # Module.<path>.<Class>.forward.<n>
        for name, value in values.items():
            if isinstance(value, dict) and "shape" in value:
                full = f"{path}.{name}" if path else name
                found.setdefault(
                    full,
                    Parameter(
                        tuple(value.get("shape") or ()), str(value.get("dtype")), bool(value.get("requires_grad"))
                    ),
                )
    return found


def _count(params: dict[str, Parameter], trainable: bool = False) -> tuple[int, int]:
    chosen = [p for p in params.values() if p.trainable or not trainable]
    total = 0
    for p in chosen:
        size = 1
        for n in p.shape:
            size *= n
        total += size
    return len(chosen), total


def main(args: argparse.Namespace) -> int:
    if args.golden is None:
        return _fail("--task params needs --golden (the original run's dump folder)")
    layouts = {}
    for name, path in (("golden", args.golden), ("target", args.target)):
        if not path.is_dir():
            return _fail(f"--{name} {path}: no such folder")
        layouts[name] = dumps.read_layout(path)
        if not layouts[name].units:
            return _fail(f"--{name} {path}: no msprobe dump in it (no step*/rank*/dump.json)")
    shared, notes = dumps.pair(layouts["golden"], layouts["target"])
    if not shared:
        return _fail("the dumps share no step and rank")
    first_step = shared[0][0]
    reports = []
    for key in (k for k in shared if k[0] == first_step):
        golden = parameters(layouts["golden"].units[key])
        target = parameters(layouts["target"].units[key])
        if not golden and not target:
            return _fail(
                "no module parameters in the dumps: dump at the module level (accuracy --level module or both)"
            )
        reports.append(_differences(key, golden, target))
    same = all(not r["differences"] for r in reports)
    if args.format == "json":
        print(json.dumps({"status": "pass" if same else "fail", "ranks": reports}, indent=2))
    else:
        print(_text(reports))
    return EXIT_OK if same else EXIT_DIFFERENT


def _differences(key: tuple[str, str], golden: dict[str, Parameter], target: dict[str, Parameter]) -> dict:
    differences = [f"{name}: only in the golden run ({golden[name].shown()})" for name in golden if name not in target]
    differences += [f"{name}: only in the target run ({target[name].shown()})" for name in target if name not in golden]
    for name in golden.keys() & target.keys():
        g, t = golden[name], target[name]
        for what, a, b in (("shape", list(g.shape), list(t.shape)), ("dtype", g.dtype, t.dtype)):
            if a != b:
                differences.append(f"{name}: {what} {a} in the golden run, {b} in the target run")
        if g.trainable != t.trainable:
            differences.append(
                f"{name}: {'trainable' if g.trainable else 'frozen'} in the golden run, "
                f"{'trainable' if t.trainable else 'frozen'} in the target run"
            )
    order = {name: i for i, name in enumerate([*golden, *target])}
    differences.sort(key=lambda d: order.get(d.split(":")[0], 0))
    return {
        "step": key[0],
        "rank": key[1],
        "golden": {"all": _count(golden), "trainable": _count(golden, True)},
        "target": {"all": _count(target), "trainable": _count(target, True)},
        "differences": differences,
    }


def _text(reports: list[dict]) -> str:
    lines = []
    for r in reports:
        where = "/".join(filter(None, (r["step"], r["rank"]))) or "the dumps"
        lines.append(f"transplant compare: params ({where}):")
        for kind in ("all", "trainable"):
            g, t = r["golden"][kind], r["target"][kind]
            mark = "" if g == t else "  DIFFERENT"
            lines.append(
                f"  {kind + ' parameters':22} golden {g[0]} tensors, {g[1]} values; "
                f"target {t[0]} tensors, {t[1]} values{mark}"
            )
        lines += [f"  {d}" for d in r["differences"]] or ["  same names, shapes, dtypes and trainable flags"]
    return "\n".join(lines)
