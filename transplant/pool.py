"""Converting files, in this process or in worker processes: one driver (``run_jobs``) for
repository mode (runner.py) and the file modes (filemodes.py). The parent hands every job the run's
Session; a worker gets it once, when it starts (``init_worker``). Jobs go out in small batches,
results stream back in job order, and a worker that dies costs only the file it was converting."""

from __future__ import annotations

import gc
import sys
from collections import deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, TypeVar

from .filetypes import FileResult, convert_in, file_kind, may_convert
from .records import CODES, internal_error, not_converted_record
from .slowfiles import noted_if_slow
from .session import Session
from .stopping import end_workers, worker_signals

if TYPE_CHECKING:  # process pools load only when a run needs them
    from concurrent.futures import Future, ProcessPoolExecutor

Item = TypeVar("Item")
Result = TypeVar("Result")

# Below this many files to convert, a run stays in one process: a worker spends most of a small
# run importing libcst, which this process must do anyway.
POOL_MIN_FILES = 16


def in_process(workers: int, files: int) -> bool:
    """Whether a run of ``files`` files is converted in this process rather than by workers."""
    return workers <= 1 or files < POOL_MIN_FILES


class Job(NamedTuple):
    """One file of repository mode to convert, as sent to a worker."""

    rel: str
    path: str
    screened: bool = False  # the parent ran the pre-filter on it already: the worker need not


_SESSION: Session | None = None  # a worker's session, set once by init_worker


# Syntax trees are large, acyclic once built and short-lived: collect cycles less often.
GC_THRESHOLDS = (50_000, 20, 100)


def init_worker(session: Session) -> None:
    """Set up a worker process (of repository mode or the file modes)."""
    global _SESSION
    from .reports import writer_child

    worker_signals()  # the parent handles Ctrl-C and SIGTERM (stopping.py)
    writer_child.in_worker()  # the workbook child's pipe is the run's alone
    _SESSION = session
    gc.freeze()  # never scan the long-lived objects (modules, rules) that exist before the work starts
    gc.set_threshold(*GC_THRESHOLDS)


def mp_context():
    """Worker processes are forked (they inherit the built rules) where that is safe, else spawned."""
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" else "spawn"
    return multiprocessing.get_context(method)


@contextmanager
def worker_pool(workers: int, ctx, session: Session) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers convert with ``session``, and that, when the code using it fails
    or is interrupted (Ctrl-C, SIGTERM), ends its workers at once instead of waiting for the files
    they are converting."""
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init_worker, initargs=(session,))
    try:
        yield pool
    except BaseException:
        end_workers()  # at once, whatever file they are converting
        # then the pool's own thread: with the workers gone it ends at once, and joining it here
        # leaves none to race the interpreter's exit (in Python 3.11 its exit hook can write to the
        # thread's wake-up pipe as the thread closes it: "Exception ignored ... Bad file descriptor")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)  # returns at once when the workers were ended


def _in_worker(work: Callable[[Session, Item], Result], items: list[Item]) -> list[Result]:
    assert _SESSION is not None, "init_worker sets up every worker"
    return [work(_SESSION, item) for item in items]


WORKER_DIED = "the converter's worker process died on this file (out of memory, or a crash in the parser)"


def run_jobs(
    session: Session,
    work: Callable[[Session, Item], Result],
    items: list[Item],
    workers: int,
    *,
    died: Callable[[Item], Result],
    screen: Callable[[Session, Item], tuple] | None = None,
    meanwhile: Callable[[], None] = lambda: None,
    started: Callable[[], None] = lambda: None,
) -> Iterator[Result]:
    """``work(session, item)`` for each item, the results in order: in this process for a small run
    (``in_process``), else in ``workers`` worker processes. ``screen(session, item)``, when given,
    runs in this process first and returns (None, result) for an item it settles, or (item to send,
    None) for one that needs ``work``; ``died(item)``
    stands for the result of an item whose worker died. ``meanwhile()`` runs once, before the first
    result: with workers, right after the first item is sent, so that it overlaps the workers' start
    (each imports libcst first); ``started()`` runs once the workers exist (safe to start threads)."""
    if in_process(workers, len(items)):
        meanwhile()
        thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            for item in items:
                yield work(session, item)
        finally:
            gc.set_threshold(*thresholds)
        return
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp_context()
    workers = min(workers, len(items))
    # Results come back in order (deterministic warnings and progress), streamed: at most `window`
    # chunks are in flight, so memory holds a few files at a time, not the repository.
    chunk = max(1, min(4, len(items) // (workers * 16)))
    window = workers * 4
    start = 0
    pending_copy = [meanwhile]

    def once() -> None:
        while pending_copy:
            pending_copy.pop()()

    while start < len(items):
        with worker_pool(workers, ctx, session) as pool:
            try:
                for result in _ordered(pool, session, work, items[start:], chunk, window, screen, once, started):
                    yield result
                    start += 1
                return
            except BrokenProcessPool:
                pass  # a worker died (a crash in native code, or killed for memory): see below
        # The items that were in flight go one at a time, so the one a worker dies on is known
        # and reported; then the pool starts again after them.
        once()
        for result in _one_by_one(session, work, items[start : start + chunk * window], ctx, died):
            yield result
            start += 1


def _one_by_one(session: Session, work: Callable, items: list, ctx, died: Callable) -> Iterator:
    """``work`` for each item in turn, in a worker process that is replaced whenever one dies."""
    from concurrent.futures.process import BrokenProcessPool

    left = deque(items)
    while left:
        with worker_pool(1, ctx, session) as pool:  # a new worker after one died
            while left:
                try:
                    result = pool.submit(_in_worker, work, [left[0]]).result()[0]
                except BrokenProcessPool:
                    break
                left.popleft()
                yield result
        if left:
            yield died(left.popleft())


def _ordered(
    pool: ProcessPoolExecutor,
    session: Session,
    work: Callable,
    items: list,
    chunk: int,
    window: int,
    screen: Callable | None = None,
    meanwhile: Callable[[], None] = lambda: None,
    started: Callable[[], None] = lambda: None,
) -> Iterator:
    pending: deque[Future | list] = deque()
    in_flight = 0
    batch: list = []
    submitted = False

    def submit() -> None:
        nonlocal in_flight, batch, submitted
        pending.append(pool.submit(_in_worker, work, batch))
        in_flight += 1
        batch = []
        if not submitted:  # the workers are forked at the first submit; only then is a thread safe to start
            submitted = True
            started()

    def ready(block: bool) -> Iterator:
        nonlocal in_flight
        if pending:
            meanwhile()  # before the first result, as in-process; the first item is on its way already
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

    for item in items:
        send, settled = screen(session, item) if screen is not None else (item, None)
        if send is not None:
            batch.append(send)
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


# --------------------------------------------------------------------------- repository mode's jobs


def results(session: Session, jobs: list[Job], workers: int, meanwhile: Callable[[], None]) -> Iterator[FileResult]:
    """The results of repository mode's ``jobs`` in order (run_jobs); files the pre-filter skips are
    settled in this process, without a round trip to a worker."""
    return run_jobs(
        session,
        _work,
        jobs,
        workers,
        died=lambda job: not_converted(job.rel, WORKER_DIED),
        screen=_screen if session.prefilter else None,
        meanwhile=meanwhile,
        started=_start_preloading,
    )


def _screen(session: Session, job: Job) -> tuple[Job | None, FileResult | None]:
    """(None, the result) of a file the pre-filter skips; (the job, None) when the file needs a worker
    (or cannot be read: the worker reports that)."""
    try:
        with open(job.path, "rb") as fh:
            data = fh.read()
    except OSError:
        return job, None
    kind = file_kind(job.rel)
    if may_convert(job.rel, kind, data, session.rules, session.facts):
        return job._replace(screened=True), None  # the worker need not scan it again
    return None, FileResult(job.rel, kind, skipped=True)  # as convert_in with the pre-filter


def _work(session: Session, job: Job) -> FileResult:
    try:
        with open(job.path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return FileResult(job.rel, file_kind(job.rel), error=f"cannot read: {exc.strerror}")
    try:
        with noted_if_slow(session.slow_note, job.rel, data):
            res = convert_in(session.unfiltered() if job.screened else session, job.rel, data)
        res.new_lines = converted_lines(data, res)
        return res
    except Exception as exc:  # a bug for one file must not stop the others: it is copied unchanged
        if session.debug:
            raise
        return not_converted(job.rel, internal_error(exc))


def converted_lines(data: bytes, res: FileResult) -> dict[int, int]:
    """Lines of ``res``'s findings and NPU-path changes (TP108) in its converted text (notebooks count
    lines per cell: none)."""
    path = CODES["path"]
    lines = [r.line for r in res.records if not r.is_change or r.code == path]
    if res.kind == "notebook" or res.new is None or not lines:
        return {}
    from .reports.linemap import new_lines

    return new_lines(data, res.new, lines)


def not_converted(rel: str, reason: str) -> FileResult:
    """The result of a file the converter failed on: copied unchanged, and reported."""
    return FileResult(rel, file_kind(rel), error=reason, records=[not_converted_record(reason)])


def _start_preloading() -> None:
    import threading

    threading.Thread(target=_preload_report_modules, daemon=True).start()


def _preload_report_modules() -> None:
    """Import the report writers while the workers convert, instead of after the last file."""
    try:
        from .reports import log, repository, sheets, writer_child, xlsx  # noqa: F401

        if not writer_child.running():  # else a child imports openpyxl and writes the workbook
            xlsx.load_openpyxl()
    except Exception:  # imported again where used, which reports any problem
        pass
