"""Converting files, in this process or in worker processes: the worker side (rules and project
facts set up once per process, one file read and converted per job) and the parent side (jobs sent
in small batches, results streamed back in job order, a dead worker costing only its file).
Repository mode (runner.py) and the file modes (filemodes.py) both use it."""

from __future__ import annotations

import gc
import sys
from collections import deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple

from .config import Config, RuleOptions
from .filetypes import FileResult, convert_file, file_kind, may_convert
from .project import NO_FACTS, ProjectFacts
from .records import internal_error, not_converted_record
from .rules import RuleSet, load_ruleset
from .stopping import end_workers, worker_signals

if TYPE_CHECKING:  # process pools load only when a run needs them
    from concurrent.futures import Future, ProcessPoolExecutor

# Below this many files to convert, a run stays in one process: a worker spends most of a small
# run importing libcst, which this process must do anyway (the file modes use the same bound).
POOL_MIN_FILES = 16


class Job(NamedTuple):
    """One file to convert, as sent to a worker."""

    rel: str
    path: str
    options: RuleOptions
    prefilter: bool  # run the pre-filter (False: the parent has screened the file already)
    debug: bool = False  # let an internal error end the run with its traceback


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
    worker_signals()  # the parent handles Ctrl-C and SIGTERM (stopping.py)
    rules_for(options)
    set_facts(facts)
    gc.freeze()  # never scan the long-lived objects (modules, rules) that exist before the work starts
    gc.set_threshold(*GC_THRESHOLDS)


def mp_context():
    """Worker processes are forked (they inherit the built rules) where that is safe, else spawned."""
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    return multiprocessing.get_context(method)


@contextmanager
def worker_pool(workers: int, ctx, initializer: Callable, initargs: tuple) -> Iterator[ProcessPoolExecutor]:
    """A process pool that, when the code using it fails or is interrupted (Ctrl-C, SIGTERM), ends
    its workers at once instead of waiting for the files they are converting."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=initializer, initargs=initargs)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # hand out nothing more
        end_workers()
        raise
    finally:
        pool.shutdown(wait=True)  # returns at once when the workers were ended


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


def converted_lines(data: bytes, res: FileResult) -> dict[int, int]:
    """Lines of ``res``'s findings in its converted text (notebooks count lines per cell: none)."""
    if res.kind == "notebook" or res.new is None or not res.findings:
        return {}
    from .reports.linemap import new_lines

    return new_lines(data, res.new, (r.line for r in res.findings))


def not_converted(rel: str, reason: str) -> FileResult:
    """The result of a file the converter failed on: copied unchanged, and reported."""
    return FileResult(rel, file_kind(rel), error=reason, records=[not_converted_record(reason)])


def results(config: Config, jobs: list[Job], rules: RuleSet, meanwhile: Callable[[], None]) -> Iterator[FileResult]:
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
        with worker_pool(config.jobs, ctx, init_worker, (config.rule_options, _FACTS)) as pool:
            try:
                for result in _ordered(pool, jobs[start:], rules, chunk, window, once):
                    yield result
                    start += 1
                return
            except BrokenProcessPool:
                pass  # a worker died (a crash in native code, or killed for memory): see below
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
    from concurrent.futures.process import BrokenProcessPool

    left = deque(items)
    while left:
        with worker_pool(1, ctx, initializer, initargs) as pool:  # a new worker after one died
            while left:
                try:
                    result = pool.submit(fn, left[0]).result()
                except BrokenProcessPool:
                    break
                left.popleft()
                yield result
        if left:
            yield died(left.popleft())


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
        from .reports import log, repository, sheets, xlsx  # noqa: F401

        xlsx.load_openpyxl()
    except Exception:  # imported again where used, which reports any problem
        pass
