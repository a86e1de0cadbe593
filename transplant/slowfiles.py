"""A one-line note on stderr for a file whose conversion takes long (--check, --diff, --in-place and
repository mode): ``transplant: still converting FILE (N lines)``, once per file, so that a run busy
with one large file does not look hung.

One watcher thread per process (started with the first file, in each worker too) looks at the file
being converted now; a file costs two assignments, not a thread. A threshold of 0 notes every file
at once, in the converting thread (what the tests use: no timing involved). The modes switch it
off with -q; the language server never notes.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

SLOW_FILE_SECONDS = 10.0  # a file still converting after this long is noted (the modes read it when they start)

_now: list = [None]  # (path, data, started, pid) of the file this process converts, or None
_watcher: dict[int, threading.Thread] = {}  # pid -> its watcher (a forked worker starts its own)
_noted: set[tuple[int, str, float]] = set()


def _note(path: str, data: bytes) -> None:
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    print(
        f"transplant: still converting {path} ({lines:,} line{'s' if lines != 1 else ''})", file=sys.stderr, flush=True
    )


def _watch(seconds: float) -> None:
    while True:
        time.sleep(min(seconds, 1.0))
        current = _now[0]
        if current is None:
            continue
        path, data, started, pid = current
        key = (pid, path, started)
        if key not in _noted and time.monotonic() - started >= seconds:
            _noted.add(key)
            _note(path, data)


@contextmanager
def noted_if_slow(seconds: float | None, path: str, data: bytes) -> Iterator[None]:
    """Convert ``path`` (of bytes ``data``) within this block; note it on stderr once it has taken
    ``seconds`` (None: never; 0: at once)."""
    if seconds is None:
        yield
        return
    if seconds <= 0:
        _note(path, data)
        yield
        return
    pid = os.getpid()
    if pid not in _watcher:
        thread = threading.Thread(target=_watch, args=(seconds,), name="transplant-slow-files", daemon=True)
        _watcher[pid] = thread
        thread.start()
    _now[0] = (path, data, time.monotonic(), pid)
    try:
        yield
    finally:
        _now[0] = None
