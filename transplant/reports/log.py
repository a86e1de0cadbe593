"""The run's log, msFmkTranspltlog.txt: one line per event, rotating at 1 MB, at most 10 files.

Written through the standard library's RotatingFileHandler: the newest lines are in the log itself,
older ones in ``<log>.1`` (the newest backup) up to ``<log>.9``; lines beyond that are dropped. A
line that cannot be written (a full disk) ends the run as any other write does, instead of
logging's "--- Logging error ---" on stderr.

Line format: ``2026-11-23 19:50:01,123 WARNING message``.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Iterable

MAX_BYTES = 1_000_000
BACKUPS = 9
LEVELS = ("INFO", "WARNING", "ERROR")
FORMAT = "%(asctime)s %(levelname)s %(message)s"


class _Handler(RotatingFileHandler):
    def handleError(self, record: logging.LogRecord) -> None:
        raise  # called in emit's except clause: the OSError goes to the caller


def write_log(
    path: Path, entries: Iterable[tuple[str, str]], *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS
) -> list[Path]:
    """Write ``(level, message)`` entries to ``path`` (and its backups when they exceed
    ``max_bytes``); returns the files written, newest first."""
    handler = _Handler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", errors="backslashreplace")
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.Logger("transplant.run")  # this run's alone: not in logging's registry, no parents
    logger.addHandler(handler)
    try:
        for level, message in entries:
            if level not in LEVELS:
                raise ValueError(f"unknown log level {level!r}")
            logger.log(logging.getLevelName(level), message)
    finally:
        handler.close()
    backups_written = (path.with_name(f"{path.name}.{age}") for age in range(1, backups + 1))
    return [path, *(p for p in backups_written if p.exists())]
