"""Stopping on Ctrl-C (SIGINT) and SIGTERM within a second, whatever is in flight.

The parent process turns either signal into an exception in its main thread (KeyboardInterrupt, or
its subclass Terminated for SIGTERM), so the code that is running unwinds as usual: the pool ends
its workers (terminate, then kill after a short grace) instead of waiting for the files they are
converting, the staging folder is removed and the command line prints its one line and exits 130
(143 for SIGTERM). Workers take no part: they ignore SIGINT (the parent decides), die on SIGTERM
(what the parent sends them) and, on Linux, are killed by the kernel if the parent dies first.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

GRACE_SECONDS = 0.3  # a terminated worker that is still alive this long after is killed
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []  # the stop signal this process received, if any


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises KeyboardInterrupt (and handled with it)."""


def exit_status(exc: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM: 128 plus the signal's number, as shells report it."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within this block, SIGINT and SIGTERM raise in the main thread, once: a second signal while
    the first is being handled is ignored, so the clean-up it started finishes. A process forked
    from this one before it set its own handlers (a worker starting) dies on SIGTERM and ignores
    SIGINT, without a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    parent = os.getpid()
    _received.clear()

    def handle(signum: int, frame) -> None:
        if os.getpid() != parent:  # a forked worker whose initializer has not run yet
            if signum == signal.SIGTERM:
                os._exit(128 + signum)
            return
        if _received:
            return
        _received.append(signum)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def exit_at_once_on_signals() -> None:
    """For a process that holds nothing to clean up or save (the language server, whose only output
    is what it has already sent): SIGINT and SIGTERM end it at once, with the status 128 plus the
    signal's number and no traceback, whatever its threads and its event loop are doing. Unwinding
    them instead (pygls' thread pools, asyncio's shutdown of tasks and executors) can wait on a thread
    blocked in a read of stdin or on a lock the interrupted code held."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(signum: int, frame) -> None:
        end_workers()
        os._exit(128 + signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, handle)


def worker_signals() -> None:
    """Set up a worker process's signals: Ctrl-C is the parent's to handle, SIGTERM ends the
    worker at once, and the death of the parent (even by SIGKILL) kills it (Linux)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes
        import multiprocessing

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        parent = multiprocessing.parent_process()
        if parent is not None and os.getppid() != parent.pid:  # the parent died before the line above
            os._exit(1)


def end_workers(grace: float = GRACE_SECONDS) -> None:
    """End every worker process this process started (the pools' workers): SIGTERM, then SIGKILL
    for any still alive after ``grace`` seconds; each is reaped, so none outlives this process."""
    import time

    if "multiprocessing" not in sys.modules:  # no pool was ever started
        return
    import multiprocessing

    children = multiprocessing.active_children()
    for child in children:
        try:
            child.terminate()
        except OSError:
            pass
    deadline = time.monotonic() + grace
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.exitcode is None:
            try:
                child.kill()
            except OSError:
                pass
            child.join(1.0)
