"""msprobe's dump folders read as plain JSON (no msprobe, no torch): which step and rank folders a
dump has, the source line an API or module was called from (``stack.json``), and the first NaN or
Inf in a statistics dump (``dump.json``).

msprobe lays a dump out as ``DUMP/step<N>/rank<R>/`` (``proc<pid>`` instead of ``rank<R>`` when the
run is not distributed), each with ``dump.json``, ``stack.json`` and ``construct.json``.

An overflow, as msprobe's ``overflow_check`` defines it (``msprobe/overflow_check/graph.py``,
``DataNode.is_anomaly``): an item whose output's Max or Min is NaN or Inf while none of its inputs'
is; fp16 overflows past 65504 show as Inf.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

STEP = re.compile(r"step(\d+)")
RANK = re.compile(r"rank(\d*)")
PROC = re.compile(r"proc\d+")
SINGLE = "proc"  # the rank key of a run that is not distributed
FRAME = re.compile(r"File (?P<file>.*?), line (?P<line>\d+), in (?P<function>[^,]*),\s*(?P<code>.*)", re.S)
LIBRARY_PARTS = ("site-packages", "dist-packages", "/lib/python3", "\\lib\\python3", "/transplant/emulate/")
STATISTICS = ("Max", "Min", "Mean", "Norm")


@dataclass
class Dump:
    """The (step, rank) folders of one dump, keyed like ("step0", "rank0") or ("step0", "proc")."""

    root: Path
    units: dict[tuple[str, str], Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_layout(root: Path) -> Dump:
    """The units below ``root``: a dump folder, one step's folder, or one rank's folder."""
    dump = Dump(root)
    if (root / "dump.json").is_file():
        dump.units[("", "")] = root
        return dump
    steps = [d for d in _folders(root) if STEP.fullmatch(d.name)]
    if steps:
        for step in steps:
            _ranks(dump, step, step.name)
    else:
        _ranks(dump, root, "")
    return dump


def _folders(path: Path) -> list[Path]:
    try:
        return sorted((p for p in path.iterdir() if p.is_dir()), key=order)
    except OSError:
        return []


def order(path: Path) -> tuple:
    digits = re.sub(r"\D", "", path.name)
    return (re.sub(r"\d", "", path.name), int(digits) if digits else -1)


def _ranks(dump: Dump, folder: Path, step: str) -> None:
    procs = []
    for sub in _folders(folder):
        if not (sub / "dump.json").is_file():
            continue
        if RANK.fullmatch(sub.name):
            dump.units[(step, sub.name)] = sub
        elif PROC.fullmatch(sub.name):
            procs.append(sub)
    if procs:
        newest = max(procs, key=lambda p: (p / "dump.json").stat().st_mtime)
        dump.units[(step, SINGLE)] = newest
        if len(procs) > 1:
            dump.notes.append(f"{folder}: {len(procs)} runs dumped here; the newest ({newest.name}) is compared")


def pair(golden: Dump, target: Dump) -> tuple[list[tuple[str, str]], list[str]]:
    """The units both dumps have, in step and rank order, and notes on those only one has. Two
    single units (rank folders given as such) pair with each other whatever their names."""
    if len(golden.units) == 1 and len(target.units) == 1 and ("", "") in (*golden.units, *target.units):
        key = next(iter(golden.units))
        target.units = {key: next(iter(target.units.values()))}
        return [key], []
    shared = sorted(
        set(golden.units) & set(target.units), key=lambda k: (order(Path(k[0] or "_")), order(Path(k[1] or "_")))
    )
    notes = [
        f"{name} has {'/'.join(filter(None, key))} but the {other} has not: not compared"
        for name, dump, other, rest in (("golden", golden, "target", target), ("target", target, "golden", golden))
        for key in sorted(set(dump.units) - set(rest.units))
    ]
    return shared, notes


def describe(dump: Dump) -> str:
    return ", ".join("/".join(filter(None, key)) or dump.root.name for key in sorted(dump.units)) or "no dump.json"


# ---- where each side computed (the record accuracy mode's instrumentation writes at exit)

WHERE_GLOB = "where_rank*_*.json"  # templates.WHERE_GLOB (the converter's side; not imported here)


def where_records(root: Path) -> list[tuple[Path, dict]]:
    """The records of where the run computed, in the dump folder (``root``, or the dump folder above
    a step or rank folder given as ``root``)."""
    for folder in (root, root.parent, root.parent.parent):
        found = sorted(folder.glob(WHERE_GLOB))
        if found:
            found_records = []
            for path in found:
                try:
                    value = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                if isinstance(value, dict):
                    found_records.append((path, value))
            return found_records
    return []


def cpu_reason(record: dict) -> str | None:
    """Why a record shows a run that computed on the CPU; None when it used an NPU or a GPU."""
    if record.get("emulated"):
        return f"it ran under transplant emulate (computed on the {record['emulated']})"
    used = record.get("used")
    if isinstance(used, dict) and any(used.values()):
        return None
    return "no memory was allocated on an NPU or a GPU"


def fallback_allowed(record: dict) -> bool:
    """An NPU run in which operators without an NPU kernel could fall back to the CPU."""
    used = record.get("used")
    environment = record.get("environment")
    return (
        isinstance(used, dict)
        and bool(used.get("npu"))
        and isinstance(environment, dict)
        and environment.get("TORCH_NPU_FALLBACK_CPU_DISABLE") != "1"
    )


# ---- where an item came from


def op_of(item: str) -> str:
    """The forward call an item of the compare table belongs to (stack.json lists forward calls only):
    ``Functional.linear.1.backward.output.0`` -> ``Functional.linear.1.forward``,
    ``Module.fc2.Linear.parameters_grad.0.bias`` -> ``Module.fc2.Linear.forward.0``."""
    return item.replace(".backward", ".forward").replace(".parameters_grad", ".forward")


def source_line(unit: Path, item: str) -> str | None:
    """``file:line in function: code`` of the user's code that called ``item``'s API or module."""
    try:
        stacks = json.loads((unit / "stack.json").read_text())
    except (OSError, ValueError):
        return None
    wanted = op_of(item)
    entries = stacks.values() if isinstance(stacks, dict) else stacks
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)):
            continue
        names, frames = entry
        if any(wanted == name or wanted.startswith(name + ".") for name in names if isinstance(name, str)):
            return _user_frame(frames, unit)
    return None


def _user_frame(frames: list, unit: Path) -> str | None:
    home = unit.resolve().parent.parent.parent  # DUMP/stepN/rankR -> the folder the dump sits in
    for frame in frames:
        match = FRAME.match(frame) if isinstance(frame, str) else None
        if match is None:
            continue
        file = match["file"]
        if file.startswith("<") or any(part in file.replace("\\", "/") for part in LIBRARY_PARTS):
            continue
        try:
            shown = Path(file).relative_to(home).as_posix()
        except ValueError:
            shown = file
        code = " ".join(match["code"].split())
        return f"{shown}:{match['line']} in {match['function'].strip()}: {code}"
    return None


# ---- NaN and Inf in statistics

INPUTS = ("input_args", "input_kwargs", "input")
OUTPUTS = ("output",)


def records(unit: Path) -> dict:
    try:
        data = json.loads((unit / "dump.json").read_text()).get("data", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return data if isinstance(data, dict) else {}


def first_overflow(unit: Path) -> tuple[str, str, str, object] | None:
    """(item, argument, statistic, value) of the first item in execution order whose output
    overflows from finite inputs (the empty and fill APIs left out, as msprobe does)."""
    for name, record in records(unit).items():
        if not isinstance(record, dict) or "Torch.empty" in name or "Torch.fill" in name:
            continue
        if any(scan(record.get(key), key, ("Max", "Min")) for key in INPUTS):
            continue
        found = scan(record.get("output"), "output", ("Max", "Min"))
        if found is not None:
            return (name, *found)
    return None


def described(key: tuple[str, str], unit: Path, found: tuple[str, str, str, object] | None) -> dict | None:
    """A found statistic as the summaries show it, with the line of user code it came from."""
    if found is None:
        return None
    item, where, stat, value = found
    return {
        "step": key[0],
        "rank": key[1],
        "name": item,
        "argument": where,
        "statistic": stat,
        "value": str(value),
        "source": source_line(unit, item),
    }


def shown(label: str, n: dict) -> str:
    where = "/".join(filter(None, (n["step"], n["rank"])))
    return f"{label}{f' ({where})' if where else ''}: {n['name']} {n['argument']} ({n['statistic']} = {n['value']})" + (
        f", called from {n['source']}" if n["source"] else ""
    )


def first_nan_inf(unit: Path) -> tuple[str, str, str, object] | None:
    """(item, argument, statistic, value) of the first NaN/Inf statistic in execution order."""
    for name, record in records(unit).items():
        found = scan(record, "")
        if found is not None:
            return (name, *found)
    return None


def scan(value, where: str, statistics: tuple[str, ...] = STATISTICS):
    if isinstance(value, dict):
        for stat in statistics:
            if stat in value and _bad(value[stat]):
                return where or "value", stat, value[stat]
        for key, sub in value.items():
            found = scan(sub, f"{where}.{key}" if where else str(key), statistics)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found = scan(sub, f"{where}.{i}" if where else str(i), statistics)
            if found is not None:
                return found
    return None


def _bad(value) -> bool:
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    return isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity")
