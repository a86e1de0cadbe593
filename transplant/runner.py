"""Repository mode: check the paths, walk the input, run the project pass, convert the files
(pool.py), mirror the tree into a staging folder, write the reports and put the result in place.
The parent process alone writes; workers only compute."""

from __future__ import annotations

import errno
import os
import re
import shutil
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .config import Config
from .filekinds import PROGRAM_KINDS, small_enough
from .filetypes import FileResult, file_kind
from .pool import Job, results
from .project import gather
from .rules import RuleSet
from . import slowfiles
from .session import Session
from .walk import Entry, walk


class UsageError(Exception):
    """A problem with the command line or paths; one line, exit status 2."""


@dataclass
class RunSummary:
    """What a run did. ``results[i].new`` is emptied (b"") once written to the result folder;
    ``new is not None`` still tells a converted file."""

    result_dir: Path
    results: list[FileResult] = field(default_factory=list)
    copied: int = 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the user should know about the run (summary, log)
    report_names: dict[str, str] = field(default_factory=dict)
    nothing_to_convert: bool = False  # the input holds no Python file or notebook: warned

    @property
    def changed_files(self) -> int:
        return sum(1 for r in self.results if r.new is not None)

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.error]


# --------------------------------------------------------------------------- the run


def check_paths(config: Config) -> tuple[Path, Path]:
    src = config.input
    if not src.exists() and not src.is_symlink():
        raise UsageError(f"input {src} does not exist")
    if not os.access(src, os.R_OK):
        raise UsageError(f"input {src} is not readable")
    src = src.resolve()
    out = config.output
    if out.exists() and not out.is_dir():
        raise UsageError(f"output {out} exists and is not a folder")
    out_resolved = out.resolve()
    name = src.stem if src.is_file() else src.name
    result = out_resolved / f"{name}{config.suffix}"
    if src.is_dir() and (result == src or src in result.parents):
        raise UsageError(f"output {result} would be inside the input {src}; choose an output outside it")
    if result in src.parents:
        raise UsageError(f"input {src} is inside the result folder {result}; replacing it would delete the input")
    if src.is_file() and file_kind(src.name) not in PROGRAM_KINDS:
        raise UsageError(f"input {src} is not a Python file or a folder")
    if result.exists() and not config.force:
        raise UsageError(f"result folder {result} already exists; use --force to replace it")
    return src, result


def run(
    config: Config,
    rules: RuleSet,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] | None = None,
    post_process: Callable[[Path, Path, RunSummary], None] | None = None,
) -> RunSummary:
    """Convert ``config.input`` into ``<output>/<name>_msft``; raise UsageError for bad paths.

    The tree is built in a temporary folder beside the result and renamed into place at the end,
    so an interrupted run never leaves a half-written result folder.
    """
    src, result = check_paths(config)
    config.output.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(result.parent)
    staging = make_staging(result)
    summary = RunSummary(result)
    user_warn = warn

    def warn_and_keep(message: str) -> None:
        summary.warnings.append(message)
        if user_warn is not None:
            user_warn(message)

    try:
        if src.is_file():
            entries = [Entry(src.name, "file", True)]
            base = src.parent
        else:
            entries = list(walk(src, warn_and_keep))
            base = src
        _convert_tree(config, rules, base, entries, staging, summary, on_progress, warn_and_keep)
        if not any(e.kind == "file" and file_kind(e.rel) in ("python", "notebook") for e in entries):
            summary.nothing_to_convert = True
            warn_and_keep(f"input {src} is empty" if not entries else f"input {src} has no Python file or notebook")
        from .project.reminders import torch_npu_once

        # once per project, where the converted code imports torch_npu; Lightning's config keys where it is used
        torch_npu_once(summary.results, lambda rel: (base / rel).read_bytes())
        if post_process is not None:
            post_process(base, staging, summary)
        from .reports.repository import write_reports

        summary.report_names = write_reports(
            staging,
            summary.results,
            taken={e.rel for e in entries},
            notes=summary.notes,
            warnings=summary.warnings,
            copied=summary.copied,
        )
        if result.exists():
            old = result.with_name(f".{result.name}.old")
            _remove(old)
            result.rename(old)
            staging.rename(result)
            try:
                _remove(old)
            except OSError as exc:
                warn_and_keep(f"{old}: previous result moved aside but not deleted ({exc.strerror})")
        else:
            staging.rename(result)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        # name the place as the user knows it: the result folder, not the staging folder
        where = str(exc.filename).replace(str(staging), str(result)) if exc.filename else str(config.output)
        raise OSError(exc.errno, exc.strerror or str(exc), where) from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return summary


def make_staging(result: Path) -> Path:
    """A new, empty staging folder beside ``result``, with the mode a plain mkdir gives (the umask
    decides, as for any folder the user creates; the result folder keeps it). Its name carries this
    process's id, so that a later run can tell a folder left by a killed run (removed) from one that
    another run is still writing (kept)."""
    import secrets

    while True:
        staging = result.with_name(f".{result.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
        try:
            staging.mkdir()
            return staging
        except FileExistsError:
            continue


# .<result name>.<pid>.<8 characters>.partial, as make_staging names them (and mkdtemp did before)
_STAGING = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)\.[a-z0-9_]{8}\.partial")


def remove_stale_staging(output: Path) -> None:
    """Delete the staging folders in ``output`` that runs which were killed left behind (their
    process is gone), whatever project they were converting; those of live runs are kept."""
    for path in output.glob(".*.partial"):
        match = _STAGING.fullmatch(path.name)
        if match is None or not path.is_dir() or path.is_symlink():
            continue
        pid = int(match["pid"])
        if pid != os.getpid() and not _alive(pid):
            _remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _remove(path: Path) -> None:
    """Remove a file, link or folder tree of ours; never follows a link."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _convert_tree(
    config: Config,
    rules: RuleSet,
    base: Path,
    entries: list[Entry],
    staging: Path,
    summary: RunSummary,
    on_progress,
    warn,
) -> None:
    jobs: list[Job] = []
    rest: list[Entry] = []  # links and files to copy: done while the workers start (see pool.results)
    for entry in entries:
        if entry.kind == "dir":
            (staging / entry.rel).mkdir(exist_ok=True)
        elif entry.kind == "file" and entry.convert and small_enough(file_kind(entry.rel), base / entry.rel):
            jobs.append(Job(entry.rel, str(base / entry.rel)))
        else:
            rest.append(entry)

    def copy_rest() -> None:
        for entry in rest:
            target = staging / entry.rel
            source = base / entry.rel
            if entry.kind == "file":
                _copy(source, target, summary, warn, entry.rel)
                continue
            link = os.readlink(source)
            os.symlink(link, target)
            resolved = Path(os.path.realpath(source.parent / link))  # no RuntimeError on link loops
            if not (resolved == base or base in resolved.parents):
                warn(f"{entry.rel}: symbolic link to {link} (outside the input) copied as a link, not followed")
            summary.copied += 1

    session = Session(
        rules,
        # the project-wide first pass; the guards find the project's modules below base (project/modules.py)
        dataclasses.replace(gather((job.rel, job.path) for job in jobs), root=os.fspath(base)),
        prefilter=config.prefilter,
        debug=config.debug,
        slow_note=slowfiles.SLOW_FILE_SECONDS if config.progress else None,
    )
    total = len(jobs)
    done = 0
    if on_progress:
        on_progress(done, total)
    for res in results(session, jobs, config.jobs, copy_rest):
        source = base / res.path
        target = staging / res.path
        if res.new is None:
            # a file that could not be read is counted once, not again when its copy fails too
            _copy(source, target, summary, warn, res.path, counted=res.error is not None)
        else:
            try:
                target.write_bytes(res.new)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, str(target)) from exc
            _copy_mode(source, target)
            res.new = b""  # written: memory holds the files in flight, not every converted file
        summary.results.append(res)
        done += 1
        if on_progress:
            on_progress(done, total)
    summary.results.sort(key=lambda r: r.path)


_WRITE_FATAL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def _copy(source: Path, target: Path, summary: RunSummary, warn, rel: str, counted: bool = False) -> None:
    try:
        shutil.copy2(source, target, follow_symlinks=False)
        summary.copied += 1
    except OSError as exc:
        if exc.errno in _WRITE_FATAL:  # the output is full or read-only: the run cannot succeed
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        warn(f"{rel}: cannot copy ({exc.strerror})")
        if not counted:
            summary.results.append(FileResult(rel, file_kind(rel), error=f"cannot copy: {exc.strerror}"))


def _copy_mode(source: Path, target: Path) -> None:
    try:
        shutil.copystat(source, target)
    except OSError:
        pass
