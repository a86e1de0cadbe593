"""``transplant compare --task loss --golden BENCH_LOG --target NPU_LOG [--pattern RE] [--tolerance T]
[--plot PNG]``: the two runs' losses side by side, step by step (the acceptance test of a migration:
same model, data and configuration, the NPU run's loss curve on the GPU baseline's).

The losses come from each program's own log (what it prints), not from msprobe's dumps: the loss a
team accepts is the one its program reports. ``--pattern`` is a regular expression whose group
``loss`` (or first group) is the number; a group ``step`` numbers the steps, else the n-th match is
step n. A step passes when ``|target - golden| <= tolerance * |golden|``; NaN or Inf on either side
fails. A PNG of both curves is written when matplotlib is installed (the ``plot`` extra), else a note
says so. Exit status: 0 when every common step passes, 1 when any does not or no step is common,
2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .runs import EXIT_DIFFERENT, EXIT_OK
from .runs import fail as _fail

DEFAULT_PATTERN = r"\bloss\b\s*[:=]?\s*(?P<loss>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)"
DEFAULT_TOLERANCE = 0.01
PLOT = "loss.png"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pattern",
        default=DEFAULT_PATTERN,
        help="--task loss: regular expression of a loss in the logs; group 'loss' (or the first) is the number, "
        "an optional group 'step' the step (default: 'loss' then a number, case-insensitive)",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help=f"--task loss: largest relative difference |target-golden|/|golden| (default: {DEFAULT_TOLERANCE})",
    )
    p.add_argument("--plot", type=Path, help=f"--task loss: the PNG of both curves (default: OUTPUT/{PLOT})")


@dataclass
class Step:
    step: int
    golden: float
    target: float

    @property
    def difference(self) -> float:
        return abs(self.target - self.golden)

    @property
    def relative(self) -> float:
        if self.golden == self.target:
            return 0.0
        return self.difference / abs(self.golden) if self.golden else math.inf

    def passes(self, tolerance: float) -> bool:
        if not (math.isfinite(self.golden) and math.isfinite(self.target)):
            return False
        return self.relative <= tolerance


def read_losses(text: str, pattern: re.Pattern) -> dict[int, float]:
    """step -> loss, in the order the log has them (a step logged twice keeps its last value)."""
    found: dict[int, float] = {}
    for n, match in enumerate(pattern.finditer(text)):
        groups = match.groupdict()
        value = groups.get("loss") if "loss" in pattern.groupindex else match.group(1 if pattern.groups else 0)
        step = int(groups["step"]) if groups.get("step") is not None else n
        try:
            found[step] = float(value or "")
        except ValueError:
            continue
    return found


def main(args: argparse.Namespace) -> int:
    if args.golden is None:
        return _fail("--task loss needs --golden (the original run's log)")
    if not args.tolerance >= 0:
        return _fail(f"--tolerance {args.tolerance}: give a number >= 0")
    try:
        pattern = re.compile(args.pattern, re.I)
    except re.error as exc:
        return _fail(f"--pattern {args.pattern!r}: {exc}")
    logs = {}
    for name, path in (("golden", args.golden), ("target", args.target)):
        try:
            logs[name] = read_losses(path.read_text(errors="replace"), pattern)
        except IsADirectoryError:
            return _fail(f"--{name} {path}: a folder; --task loss reads the run's log file")
        except OSError as exc:
            return _fail(f"--{name} {path}: {exc.strerror}")
        except ValueError:
            return _fail(f"--pattern: its 'step' group matched something that is not a step number in {path}")
        if not logs[name]:
            return _fail(f"--{name} {path}: no loss matches the pattern {args.pattern!r}")
    golden, target = logs["golden"], logs["target"]
    steps = [Step(s, golden[s], target[s]) for s in sorted(golden.keys() & target.keys())]
    failing = [s for s in steps if not s.passes(args.tolerance)]
    notes = [
        f"the {name} log has {len(only)} step{'s' if len(only) != 1 else ''} the other has not (from step {min(only)})"
        for name, only in (("golden", golden.keys() - target.keys()), ("target", target.keys() - golden.keys()))
        if only
    ]
    plot = _plot(steps, args.plot or args.output / PLOT, notes) if steps else None
    status = EXIT_OK if steps and not failing else EXIT_DIFFERENT
    if args.format == "json":
        print(
            json.dumps(
                {
                    "status": "pass" if status == EXIT_OK else "fail",
                    "tolerance": args.tolerance,
                    "steps": [{**vars(s), "relative": s.relative, "pass": s.passes(args.tolerance)} for s in steps],
                    "first_failing": failing[0].step if failing else None,
                    "plot": str(plot) if plot else None,
                    "notes": notes,
                },
                indent=2,
            )
        )
    else:
        print(_text(steps, failing, args.tolerance, plot, notes))
    return status


def _text(steps: list[Step], failing: list[Step], tolerance: float, plot: Path | None, notes: list[str]) -> str:
    lines = [
        f"transplant compare: loss: {len(steps)} common step{'s' if len(steps) != 1 else ''}, "
        f"{len(steps) - len(failing)} within the tolerance ({tolerance:g} relative), {len(failing)} past it"
    ]
    rows = [("step", "golden", "target", "difference", "relative", "")] + [
        (
            str(s.step),
            f"{s.golden:.6g}",
            f"{s.target:.6g}",
            f"{s.difference:.3g}",
            f"{s.relative:.3g}",
            "ok" if s.passes(tolerance) else "PAST TOLERANCE",
        )
        for s in steps
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r[:5], widths)) + ("  " + r[5] if r[5] else "") for r in rows]
    if failing:
        lines.append(f"first step past the tolerance: {failing[0].step}")
    elif steps:
        lines.append("the loss curves agree")
    lines += [f"note: {n}" for n in notes]
    if plot is not None:
        lines.append(f"plot: {plot}")
    return "\n".join(lines)


def _plot(steps: list[Step], path: Path, notes: list[str]) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        notes.append("no plot: matplotlib is not installed (pip install matplotlib, or the 'plot' extra)")
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure, axes = plt.subplots(figsize=(8, 4.5))
        x = [s.step for s in steps]
        axes.plot(x, [s.golden for s in steps], label="golden (original run)", linewidth=1.5)
        axes.plot(x, [s.target for s in steps], label="target (converted run)", linewidth=1.0, linestyle="--")
        axes.set_xlabel("step")
        axes.set_ylabel("loss")
        axes.legend()
        axes.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
        plt.close(figure)
    except (OSError, ValueError) as exc:
        notes.append(f"no plot: {path}: {exc}")
        return None
    return path
