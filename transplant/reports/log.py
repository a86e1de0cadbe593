"""The run's log, msFmkTranspltlog.txt: one line per event, rotating at 1 MB, at most 10 files.

A run knows every line of its log when it writes it (the log goes into a new result folder at the
end of the run), so the rotation is decided up front: the lines are cut into files of at most
``MAX_BYTES`` (a longer single line gets a file of its own), the newest lines go into the log
itself and older ones into ``<log>.1`` (the newest backup) up to ``<log>.9``; lines beyond that are
dropped, as a rotating log drops them. The file layout is that of the standard library's
RotatingFileHandler, whose import (sockets, pickle, threads) would cost a small run a twentieth of
its time.

Line format: ``2026-11-23 19:50:01,123 WARNING message``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable

MAX_BYTES = 1_000_000
BACKUPS = 9
LEVELS = ("INFO", "WARNING", "ERROR")


def stamp(now: float | None = None) -> str:
    """Local time with milliseconds, as logging's default asctime writes it."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"


def write_log(path: Path, entries: Iterable[tuple[str, str]], *, max_bytes: int = MAX_BYTES,
              backups: int = BACKUPS) -> list[Path]:
    """Write ``(level, message)`` entries to ``path`` (and its backups when they exceed
    ``max_bytes``); returns the files written, newest first."""
    when = stamp()
    chunks: list[list[bytes]] = [[]]
    size = 0
    for level, message in entries:
        if level not in LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        line = f"{when} {level} {message}\n".encode("utf-8", "backslashreplace")
        if chunks[-1] and size + len(line) > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(line)
        size += len(line)
    kept = chunks[-(backups + 1):]
    written = []
    for age, chunk in enumerate(reversed(kept)):
        target = path if age == 0 else path.with_name(f"{path.name}.{age}")
        target.write_bytes(b"".join(chunk))
        written.append(target)
    return written
