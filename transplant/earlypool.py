"""One worker process started first thing in a repository run, warming up while the parent works.

Owns: starting (and, when the run does not need it, discarding) a single worker that imports
libcst and builds the rules as soon as the command line is parsed. Importing libcst is most of a
small run; started this way it overlaps the parent's own start (the console, the rules, the walk,
the copies), instead of beginning after them. runner._results converts with it when one worker
suits the run. It never converts anything itself, and only the parent writes.
"""

from __future__ import annotations

import gc
from concurrent.futures import ProcessPoolExecutor

from .config import Config, RuleOptions
from .runner import GC_THRESHOLDS, mp_context, rules_for


def _warm(options: RuleOptions) -> None:
    """Worker initializer: what every conversion needs, loaded before the first file arrives."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    try:
        rules_for(options)
        from . import engine  # noqa: F401  (libcst)
    except Exception:  # a bad -r file: the parent reports it (one line) and discards this worker
        pass
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def start(config: Config) -> ProcessPoolExecutor | None:
    """A one-worker pool, already forked, for a run with worker processes on a folder; else None."""
    if config.jobs <= 1 or not config.input.is_dir():
        return None
    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp_context(), initializer=_warm,
                               initargs=(config.rule_options,))
    pool.submit(int)  # the worker is forked now, before this process starts any thread
    return pool


def discard(pool: ProcessPoolExecutor | None) -> None:
    """Stop a worker the run did not use, without waiting for it to finish warming up."""
    if pool is None:
        return
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        if process.is_alive():
            process.terminate()
