"""Distributed mode's command-line and file-system side: check ``-m``/``-t`` before anything is
written, and after the ordinary conversion rewrite the entry file of the result, add the records
to the run's summary and write the launch script beside it.

It owns every file access of distributed mode and every UsageError; what the edits are is for
``planner.py`` and ``passes/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import libcst as cst

from ..engine import SourceError, parse
from ..filetypes import FileResult
from ..reports.repository import report_name
from ..runner import RunSummary, UsageError
from .analysis import Analysis
from .candidates import candidates
from .launch import LAUNCH_SCRIPT, launch_script
from .planner import convert_distributed


def prepare_distributed(config) -> Callable[[Path, Path, RunSummary], None]:
    """Check ``-m``/``-t`` before anything is written; return the post-processing step of the run.

    Raises UsageError (one line) for an entry file that is missing, outside the input, not a
    ``.py`` file or not parseable, and for a target variable that the entry file never assigns
    (unless the script is distributed already: then no model is wrapped).
    """
    rel, source = resolve_entry(config.input, config.distributed_main)
    target = config.distributed_target
    module = _parse_entry(source, rel)
    try:
        analysis = Analysis(module, target)
    except RecursionError:
        raise UsageError(f"distributed: entry file {rel} is nested too deeply to convert") from None
    if not analysis.target_sites and analysis.already_distributed() is None:
        found = candidates(analysis)
        listed = ", ".join(found) if found else "none found"
        raise UsageError(
            f"distributed: the model variable '{target}' is never assigned in {rel}; "
            f"candidate model variables: {listed} (choose one with -t)"
        )

    def post_process(base: Path, staging: Path, summary: RunSummary) -> None:
        apply_to_result(staging, summary, rel, target)

    return post_process


def resolve_entry(input_path: Path, main: Path | None, mode: str = "distributed") -> tuple[str, bytes]:
    """The entry file's path relative to the input root ("/"-separated) and its bytes; ``mode``
    (distributed, accuracy) starts the one-line errors."""
    if main is None:
        raise UsageError(f"{mode}: -m/--main is required")
    if not input_path.exists():
        raise UsageError(f"input {input_path} does not exist")
    root = input_path.resolve()
    candidate = main
    if not candidate.exists() and not candidate.is_absolute() and root.is_dir() and (root / main).exists():
        candidate = root / main  # -m given relative to the input folder
    if not candidate.exists() and not candidate.is_symlink():
        raise UsageError(f"{mode}: entry file {main} does not exist")
    if candidate.is_symlink():
        raise UsageError(f"{mode}: entry file {main} is a symbolic link; give the file it points to")
    if not candidate.is_file() or candidate.suffix != ".py":
        raise UsageError(f"{mode}: entry file {main} is not a Python (.py) file")
    resolved = candidate.resolve()
    if root.is_file():
        if resolved != root:
            raise UsageError(f"{mode}: entry file {main} is not the input file {input_path}")
        rel = root.name
    else:
        if root not in resolved.parents:
            raise UsageError(f"{mode}: entry file {main} is not inside the input folder {input_path}")
        rel = resolved.relative_to(root).as_posix()
    try:
        return rel, resolved.read_bytes()
    except OSError as exc:
        raise UsageError(f"{mode}: cannot read entry file {main} ({exc.strerror})") from None


def _parse_entry(source: bytes, rel: str) -> cst.Module:
    try:
        return parse(source)
    except SourceError as exc:
        raise UsageError(f"distributed: entry file {rel} cannot be converted: {exc} (line {exc.line})") from None


def apply_to_result(staging: Path, summary: RunSummary, rel: str, target: str) -> None:
    """Rewrite the converted entry file in ``staging``, record the changes, write the launch script."""
    path = staging / rel
    module = _parse_entry(path.read_bytes(), rel)
    try:
        outcome = convert_distributed(module, target)
    except RecursionError:
        raise UsageError(f"distributed: entry file {rel} is nested too deeply to convert") from None
    for message in outcome.warnings:
        summary.warnings.append(f"{rel}: {message}")
    if outcome.already_distributed is not None:
        summary.notes.append(
            f"{rel} is already distributed ({outcome.already_distributed}): no process-group "
            "set-up or DistributedDataParallel wrap added, only its CUDA-specific code converted"
        )
        if "multiprocessing" in outcome.already_distributed:
            summary.notes.append(f"{rel} starts its own processes: run it as before; no {LAUNCH_SCRIPT} written")
            return
    if outcome.records:
        new_bytes = outcome.module.bytes
        path.write_bytes(new_bytes)
        result = next((r for r in summary.results if r.path == rel), None)
        if result is None:
            result = FileResult(rel, "python")
            summary.results.append(result)
            summary.results.sort(key=lambda r: r.path)
        result.new = new_bytes
        result.skipped = False
        kept = [r for r in result.records if r.is_change or r.api not in outcome.removed_apis]  # DataParallel
        result.records = sorted([*kept, *outcome.records], key=lambda r: (r.line, r.col, r.code))
    script = launch_script(rel).encode()
    name = LAUNCH_SCRIPT
    existing = staging / name
    if (existing.exists() or existing.is_symlink()) and not (
        existing.is_file() and not existing.is_symlink() and existing.read_bytes() == script
    ):
        name = report_name(name, {p.name for p in staging.iterdir()})
        summary.warnings.append(f"the project has its own {LAUNCH_SCRIPT}; the launch script is {name}")
    out = staging / name
    out.write_bytes(script)
    out.chmod(0o755)
    summary.notes.append(
        f"launch script: {summary.result_dir / name} (bash {name} [ARGS...] in the result folder starts one "
        "process per NPU; NPUS=0,1,... picks them)"
    )
