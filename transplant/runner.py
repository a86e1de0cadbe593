"""Repository conversion: walk the input, convert files in a process pool, write the mirror tree
and the reports. The parent process alone writes; workers only compute."""

from __future__ import annotations

import gc
import errno
import glob
import os
import shutil
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from .config import Config, RuleOptions
from .filetypes import FileResult, convert_file, file_kind, may_convert, within_limits
from .project import NO_FACTS, ProjectFacts, gather
from .records import internal_error, not_converted_record
from .rules import RuleSet, load_ruleset

if TYPE_CHECKING:  # process pools, reports and their imports load only when a run needs them
    from concurrent.futures import Future, ProcessPoolExecutor

SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
# Third-party code is copied, never converted: it is not the user's to migrate.
VENDOR_MARKERS = ("pyvenv.cfg",)
VENDOR_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})
# Below this many files to convert, a run stays in one process: a worker spends most of a small
# run importing libcst, which this process must do anyway (the file modes use the same bound).
POOL_MIN_FILES = 16


class UsageError(Exception):
    """A problem with the command line or paths; one line, exit status 2."""


@dataclass
class Entry:
    rel: str  # "/"-separated path relative to the input root
    kind: str  # file | link | dir
    convert: bool = True


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

    @property
    def changed_files(self) -> int:
        return sum(1 for r in self.results if r.new is not None)

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.error]


class Job(NamedTuple):
    """One file to convert, as sent to a worker."""

    rel: str
    path: str
    options: RuleOptions
    prefilter: bool  # run the pre-filter (False: the parent has screened the file already)
    debug: bool = False  # let an internal error end the run with its traceback


# --------------------------------------------------------------------------- worker side

_RULES: RuleSet | None = None
_RULES_KEY: RuleOptions | None = None
_FACTS: ProjectFacts = NO_FACTS  # the project's facts (transplant.project), set before workers start


def set_facts(facts: ProjectFacts) -> None:
    """The project facts this process converts with (workers get them through init_worker)."""
    global _FACTS
    _FACTS = facts


def current_facts() -> ProjectFacts:
    return _FACTS


def rules_for(options: RuleOptions) -> RuleSet:
    """The process-wide RuleSet for these options, built once per process."""
    global _RULES, _RULES_KEY
    if _RULES is None or _RULES_KEY != options:
        _RULES = load_ruleset(options.user_rules, specify_device=options.specify_device,
                              similar=options.similar, pytorch_version=options.pytorch_version)
        _RULES_KEY = options
    return _RULES


def forget_rules() -> None:
    """Drop the process-wide RuleSet, so that the next rules_for reads the rule files again (the
    language server, when a rule file or pyproject.toml is saved)."""
    global _RULES, _RULES_KEY
    _RULES = _RULES_KEY = None


# Syntax trees are large, acyclic once built and short-lived: collect cycles less often.
GC_THRESHOLDS = (50_000, 20, 100)


def init_worker(options: RuleOptions, facts: ProjectFacts = NO_FACTS) -> None:
    """Set up a worker process (of repository mode or the file modes)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    rules_for(options)
    set_facts(facts)
    gc.freeze()  # never scan the long-lived objects (modules, rules) that exist before the work starts
    gc.set_threshold(*GC_THRESHOLDS)


def mp_context():
    """Worker processes are forked (they inherit the built rules) where that is safe, else spawned."""
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    return multiprocessing.get_context(method)


def _work_chunk(jobs: list[Job]) -> list[FileResult]:
    return [_work(job) for job in jobs]


def _screen(job: Job, rules: RuleSet) -> FileResult | None:
    """The result of a file the pre-filter skips, settled in the parent without a worker; None
    when the file needs a worker (or cannot be read: the worker reports that)."""
    if not job.prefilter:
        return None
    try:
        with open(job.path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    kind = file_kind(job.rel)
    if may_convert(job.rel, kind, data, rules, _FACTS):
        return None
    return FileResult(job.rel, kind, skipped=True)  # as convert_file(..., prefilter=True)


def _work(job: Job) -> FileResult:
    try:
        with open(job.path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return FileResult(job.rel, file_kind(job.rel), error=f"cannot read: {exc.strerror}")
    try:
        res = convert_file(job.rel, data, rules_for(job.options), prefilter=job.prefilter, facts=_FACTS)
        res.new_lines = converted_lines(data, res)
        return res
    except Exception as exc:  # a bug for one file must not stop the others: it is copied unchanged
        if job.debug:
            raise
        return not_converted(job.rel, internal_error(exc))


def _convertible(rel: str, source: Path) -> bool:
    kind = file_kind(rel)
    if kind == "other":
        return False
    if kind in ("python", "notebook", "shell"):
        return True
    try:
        return within_limits(kind, source.stat().st_size)
    except OSError:
        return True  # the worker reports it


def converted_lines(data: bytes, res: FileResult) -> dict[int, int]:
    """Lines of ``res``'s findings in its converted text (notebooks count lines per cell: none)."""
    if res.kind == "notebook" or res.new is None or not res.findings:
        return {}
    from .reports.linemap import new_lines

    return new_lines(data, res.new, (r.line for r in res.findings))


def not_converted(rel: str, reason: str) -> FileResult:
    """The result of a file the converter failed on: copied unchanged, and reported."""
    return FileResult(rel, file_kind(rel), error=reason, records=[not_converted_record(reason)])


# --------------------------------------------------------------------------- walking


def walk(root: Path, warn: Callable[[str], None], *, unlistable: Callable[[str, str], None] | None = None,
         vendored_too: bool = True) -> Iterator[Entry]:
    """Every entry below ``root`` in a stable order; symlinks are reported, never followed.

    A folder that cannot be listed goes to ``unlistable(rel, reason)`` when given, else is a
    warning. Third-party folders are walked with ``convert=False`` on their files, or not at
    all without ``vendored_too``.
    """

    def scan(directory: Path, rel: str, vendored: bool) -> Iterator[Entry]:
        try:
            with os.scandir(directory) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if unlistable is not None:
                unlistable(rel, exc.strerror or str(exc))
            else:
                warn(f"{rel or '.'}: cannot list folder ({exc.strerror}); skipped")
            return
        vendored = vendored or any(i.name in VENDOR_MARKERS for i in items)
        if vendored and not vendored_too:
            return
        for item in items:
            child_rel = f"{rel}/{item.name}" if rel else item.name
            if item.is_symlink():
                yield Entry(child_rel, "link", False)
            elif item.is_dir(follow_symlinks=False):
                if item.name in SKIP_DIRS or item.name in VENDOR_DIRS and not vendored_too:
                    continue
                yield Entry(child_rel, "dir", False)
                yield from scan(Path(item.path), child_rel, vendored or item.name in VENDOR_DIRS)
            elif item.is_file(follow_symlinks=False):
                yield Entry(child_rel, "file", not vendored)
            else:
                warn(f"{child_rel}: not a regular file (device, socket or pipe); skipped")

    yield from scan(root, "", False)


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
    if src.is_file() and src.suffix.lower() not in (".py", ".ipynb", ".sh", ".bash", ".pyw"):
        raise UsageError(f"input {src} is not a Python file or a folder")
    if result.exists() and not config.force:
        raise UsageError(f"result folder {result} already exists; use --force to replace it")
    return src, result


def run(config: Config, rules: RuleSet, *, on_progress: Callable[[int, int], None] | None = None,
        warn: Callable[[str], None] | None = None,
        post_process: Callable[[Path, Path, RunSummary], None] | None = None) -> RunSummary:
    """Convert ``config.input`` into ``<output>/<name>_msft``; raise UsageError for bad paths.

    The tree is built in a temporary folder beside the result and renamed into place at the end,
    so an interrupted run never leaves a half-written result folder.
    """
    import tempfile

    src, result = check_paths(config)
    config.output.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(result)
    # the staging folder's name carries this process's id, so a later run can tell a folder left by a
    # killed run (removed) from one another run is still writing (kept)
    staging = Path(tempfile.mkdtemp(prefix=f".{result.name}.{os.getpid()}.", suffix=".partial", dir=result.parent))
    summary = RunSummary(result)
    user_warn = warn

    def warn(message: str) -> None:
        summary.warnings.append(message)
        if user_warn is not None:
            user_warn(message)

    try:
        if src.is_file():
            entries = [Entry(src.name, "file", True)]
            base = src.parent
        else:
            entries = list(walk(src, warn))
            base = src
        _convert_tree(config, rules, base, entries, staging, summary, on_progress, warn)
        if post_process is not None:
            post_process(base, staging, summary)
        _write_reports(staging, summary, {e.rel for e in entries})
        if result.exists():
            old = result.with_name(f".{result.name}.old")
            _remove(old)
            result.rename(old)
            staging.rename(result)
            try:
                _remove(old)
            except OSError as exc:
                warn(f"{old}: previous result moved aside but not deleted ({exc.strerror})")
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


def remove_stale_staging(result: Path) -> None:
    """Delete staging folders of ``result`` left by runs that were killed (their process is gone)."""
    for path in result.parent.glob(f".{glob.escape(result.name)}.*.partial"):
        pid = path.name[len(result.name) + 2:].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
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


def _convert_tree(config: Config, rules: RuleSet, base: Path, entries: list[Entry], staging: Path,
                  summary: RunSummary, on_progress, warn) -> None:
    jobs: list[Job] = []
    rest: list[Entry] = []  # links and files to copy: done while the workers start (see _results)
    for entry in entries:
        if entry.kind == "dir":
            (staging / entry.rel).mkdir(exist_ok=True)
        elif entry.kind == "file" and entry.convert and _convertible(entry.rel, base / entry.rel):
            jobs.append(Job(entry.rel, str(base / entry.rel), config.rule_options, config.prefilter, config.debug))
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

    set_facts(gather((job.rel, job.path) for job in jobs))  # the project-wide first pass
    total = len(jobs)
    done = 0
    if on_progress:
        on_progress(done, total)
    for res in _results(config, jobs, rules, copy_rest):
        source = base / res.path
        target = staging / res.path
        if res.new is None:
            _copy(source, target, summary, warn, res.path)
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


def _results(config: Config, jobs: list[Job], rules: RuleSet, meanwhile: Callable[[], None]) -> Iterator[FileResult]:
    """The results of ``jobs`` in order. ``meanwhile()`` (copying the other files) runs once, before
    the first result: with worker processes, right after the first file is sent, so the copying
    overlaps the workers' start (each imports libcst first). A few files are converted in this
    process: starting workers would cost more than it saves."""
    global _RULES, _RULES_KEY
    _RULES, _RULES_KEY = rules, config.rule_options  # forked workers inherit the built rules
    if config.jobs <= 1 or len(jobs) < POOL_MIN_FILES:
        meanwhile()
        thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            for job in jobs:
                yield _work(job)
        finally:
            gc.set_threshold(*thresholds)
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp_context()
    # Results come back in job order (deterministic warnings and progress), streamed: at most
    # `window` chunks are in flight, so memory holds a few files at a time, not the repository.
    # Files the pre-filter skips are settled here, in order, without a round trip to a worker.
    chunk = max(1, min(4, len(jobs) // (config.jobs * 16)))
    window = config.jobs * 4
    start = 0
    pending_copy = [meanwhile]

    def once() -> None:
        while pending_copy:
            pending_copy.pop()()

    while start < len(jobs):
        with ProcessPoolExecutor(max_workers=config.jobs, mp_context=ctx, initializer=init_worker,
                                 initargs=(config.rule_options, _FACTS)) as pool:
            try:
                for result in _ordered(pool, jobs[start:], rules, chunk, window, once):
                    yield result
                    start += 1
                return
            except BrokenProcessPool:
                pass  # a worker died (a crash in native code, or killed for memory): see below
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        # The files that were in flight go one at a time, so the one a worker dies on is known
        # and reported; then the pool starts again after them.
        once()
        for result in one_by_one(_work, jobs[start:start + chunk * window], ctx, init_worker,
                                 (config.rule_options, _FACTS), lambda job: not_converted(job.rel, WORKER_DIED)):
            yield result
            start += 1


WORKER_DIED = "the converter's worker process died on this file (out of memory, or a crash in the parser)"


def one_by_one(fn: Callable, items: list, ctx, initializer: Callable, initargs: tuple,
               died: Callable) -> Iterator:
    """``fn(item)`` for each item in turn, in a worker process that is replaced whenever one dies;
    ``died(item)`` stands for the result of an item its worker died on."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool: ProcessPoolExecutor | None = None
    try:
        for item in items:
            if pool is None:
                pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=initializer, initargs=initargs)
            try:
                result = pool.submit(fn, item).result()
            except BrokenProcessPool:
                pool.shutdown(wait=True)
                pool = None
                result = died(item)
            yield result
    finally:
        if pool is not None:
            pool.shutdown(wait=True)


def _ordered(pool: ProcessPoolExecutor, jobs: list[Job], rules: RuleSet, chunk: int, window: int,
             meanwhile: Callable[[], None] = lambda: None) -> Iterator[FileResult]:
    pending: deque[Future | list[FileResult]] = deque()
    in_flight = 0
    batch: list = []
    started = False

    def submit() -> None:
        nonlocal in_flight, batch, started
        pending.append(pool.submit(_work_chunk, batch))
        in_flight += 1
        batch = []
        if not started:
            # the workers are forked at the first submit; only then is a thread safe to start
            started = True
            import threading

            threading.Thread(target=_preload_report_modules, daemon=True).start()

    def ready(block: bool) -> Iterator[FileResult]:
        nonlocal in_flight
        if pending:
            meanwhile()  # before the first result, as in-process; the first file is on its way already
        while pending:
            head = pending[0]
            if isinstance(head, list):
                pending.popleft()
                yield from head
                continue
            if not block and not head.done():
                return
            pending.popleft()
            in_flight -= 1
            yield from head.result()
            block = False

    for job in jobs:
        settled = _screen(job, rules)
        if settled is None:
            batch.append(job._replace(prefilter=False))  # screened here already: the worker need not scan again
            if len(batch) >= chunk:
                submit()
        else:
            if batch:
                submit()
            pending.append([settled])
        yield from ready(block=in_flight >= window)
    if batch:
        submit()
    while pending:
        yield from ready(block=True)


def _preload_report_modules() -> None:
    """Import the report writers while the workers convert, instead of after the last file."""
    try:
        from .reports import log, repository, sheets  # noqa: F401
    except Exception:  # imported again where used, which reports any problem
        pass


_WRITE_FATAL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def _copy(source: Path, target: Path, summary: RunSummary, warn, rel: str) -> None:
    try:
        shutil.copy2(source, target, follow_symlinks=False)
        summary.copied += 1
    except OSError as exc:
        if exc.errno in _WRITE_FATAL:  # the output is full or read-only: the run cannot succeed
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        warn(f"{rel}: cannot copy ({exc.strerror})")
        summary.results.append(FileResult(rel, file_kind(rel), error=f"cannot copy: {exc.strerror}"))


def _copy_mode(source: Path, target: Path) -> None:
    try:
        shutil.copystat(source, target)
    except OSError:
        pass


def report_name(name: str, taken: set[str]) -> str:
    """A report's file name that does not collide with a file of the project at the same place."""
    if name not in taken:
        return name
    candidate = f"transplant_{name}"
    i = 2
    while candidate in taken:
        candidate = f"transplant{i}_{name}"
        i += 1
    return candidate


def _write_reports(staging: Path, summary: RunSummary, taken: set[str]) -> None:
    from .reports import repository as reports
    from .reports.log import write_log

    names = {n: report_name(n, taken) for n in (reports.CHANGE_LIST, reports.UNSUPPORTED, reports.LOG)}
    summary.report_names = names
    reports.write_change_list(staging / names[reports.CHANGE_LIST], summary.results)
    reports.write_unsupported_xlsx(staging / names[reports.UNSUPPORTED], summary.results)
    write_log(staging / names[reports.LOG], _log_entries(summary))


def _log_entries(summary: RunSummary) -> Iterator[tuple[str, str]]:
    yield "INFO", f"transplant run: {summary.changed_files} files converted, {summary.copied} copied"
    for note in summary.notes:
        yield "INFO", note
    for warning in summary.warnings:
        yield "WARNING", warning
    for res in summary.results:
        if res.error:
            yield "ERROR", f"{res.path}: not converted: {res.error}"
        for r in res.records:
            level = {"fix": "INFO", "note": "INFO", "warning": "WARNING", "error": "ERROR"}[r.level]
            yield level, f"{res.path}:{r.line}:{r.col}: {r.code} {r.message}"
