"""Accuracy mode's file-system side: the two trees it writes.

``OUT/<name>_accuracy_bench/`` is the input copied as it is, with the entry file instrumented and
msprobe's config file beside it (and ``mindstudio-probe`` in its requirements.txt, when it has one).
``OUT/<name>_msft_accuracy/`` is the ordinary conversion *of that tree*, so the two differ by the
conversion and nothing else. Both are built beside the output and moved into place at the end; a
run that fails leaves neither half-written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from ..config import Config
from ..console import run_repository
from ..distributed.entry import resolve_entry
from ..engine import SourceError
from ..reports.repository import report_name
from ..runner import UsageError, check_paths
from ..walk import walk
from . import templates
from .instrument import instrument

BENCH_SUFFIX = "_accuracy_bench"
CONVERTED_SUFFIX = "_msft_accuracy"


@dataclass(frozen=True)
class AccuracyOptions:
    main: Path
    target: str = "model"
    steps: tuple[int, ...] | None = templates.DEFAULT_STEPS  # None: every step
    level: str = "both"  # a key of templates.LEVELS
    data: str = "statistics"  # a key of templates.DATA
    task: str = "dump"  # one of templates.TASKS
    compatible: bool = False  # TORCH_NPU_USE_COMPATIBLE_IMPL=1


def run_accuracy(config: Config, options: AccuracyOptions, *, quiet: bool = False) -> int:
    """Write both trees; the exit status (2 with one line on stderr for a usage error)."""
    try:
        staging, tree, bench, notes, warnings = _prepare(config, options)
    except UsageError as exc:
        print(f"transplant: error: {exc}", file=sys.stderr)
        return 2
    for warning in [] if quiet else warnings:
        print(f"warning: {warning}", file=sys.stderr)
    try:
        status = run_repository(replace(config, input=tree, suffix=CONVERTED_SUFFIX), quiet=quiet)
        if status == 0:
            _replace(bench)
            tree.rename(bench)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if status == 0:
        for note in notes:
            if not quiet:
                print(note)
    return status


def _prepare(config: Config, options: AccuracyOptions) -> tuple[Path, Path, Path, list[str], list[str]]:
    """Check everything, then build the instrumented copy of the input in a staging folder."""
    if options.task == "overflow" and options.data != "statistics":
        raise UsageError("accuracy: --task overflow reads statistics: leave out --data tensors")
    rel, source = resolve_entry(config.input, options.main, "accuracy")
    src, bench = check_paths(replace(config, suffix=BENCH_SUFFIX))
    _, converted = check_paths(replace(config, suffix=CONVERTED_SUFFIX))
    entry_dir = (src / rel).parent if src.is_dir() else src.parent
    config_file = report_name(templates.CONFIG_FILE, set(os.listdir(entry_dir)))
    try:
        done = instrument(source, options.target, config_file, options.compatible)
    except SourceError as exc:
        raise UsageError(f"accuracy: entry file {rel} cannot be converted: {exc} (line {exc.line})") from None
    except RecursionError:
        raise UsageError(f"accuracy: entry file {rel} is nested too deeply to convert") from None
    config.output.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(
            prefix=f".{src.stem if src.is_file() else src.name}_accuracy.", suffix=".partial", dir=bench.parent
        )
    )
    tree = staging / (src.stem if src.is_file() else src.name)
    warnings = [f"accuracy: {rel}: {warning}" for warning in done.warnings]
    notes = [f"accuracy: the original project, instrumented: {bench}"]
    try:
        _copy_input(src, tree, warnings)
        (tree / rel).write_bytes(done.source)
        if done.already:
            notes.append(f"accuracy: {rel} uses msprobe already: its own set-up is kept, nothing added")
        else:
            (tree / rel).parent.joinpath(config_file).write_text(
                templates.config_text(options.steps, options.level, options.data)
            )
            _require(tree / "requirements.txt")
            where = ", ".join(f"line {n}" for n in done.loops)
            notes.append(
                f"accuracy: {rel}: seeds fixed, dropout off, msprobe's debugger set up from {config_file}"
                + (f"; dumps the training steps of the loop at {where}" if where else "")
            )
            dump = Path(rel).parent / templates.DUMP_DIR
            if options.task == "overflow":
                notes.append(
                    f"accuracy: run the converted tree, then: transplant compare --task overflow "
                    f"--target {converted.name}/{dump} (--golden {bench.name}/{dump} to check the original too)"
                )
            else:
                notes.append(
                    f"accuracy: run both trees, then: transplant compare --golden {bench.name}/{dump} "
                    f"--target {converted.name}/{dump}"
                )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging, tree, bench, notes, warnings


def _copy_input(src: Path, tree: Path, warnings: list[str]) -> None:
    """The input as it is (files, folders, links as links), by the walk the conversion uses."""
    tree.mkdir()
    if src.is_file():
        shutil.copy2(src, tree / src.name)
        return
    for entry in walk(src, warnings.append):
        target = tree / entry.rel
        if entry.kind == "dir":
            target.mkdir()
        elif entry.kind == "link":
            os.symlink(os.readlink(src / entry.rel), target)
        else:
            shutil.copy2(src / entry.rel, target, follow_symlinks=False)


def _require(path: Path) -> None:
    """Add mindstudio-probe to the project's requirements.txt, when it has one and lacks it."""
    if not path.is_file() or path.is_symlink():
        return
    text = path.read_text(errors="surrogateescape")
    if templates.PACKAGE in text:
        return
    path.write_text(
        text + ("\n" if text and not text.endswith("\n") else "") + templates.REQUIREMENT, errors="surrogateescape"
    )


def _replace(path: Path) -> None:
    """Remove an earlier result (check_paths allowed it: --force)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
