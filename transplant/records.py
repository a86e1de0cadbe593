"""What a conversion reports: records, their codes, and the skip comments. Plain data, imported by
every output path without loading the parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from .codes import NOT_CONVERTED, TABLE

# The engine's name of each stable code (codes.py has the table) and the change list's operation
# of the codes that change code.
CODES = {c.key: c.code for c in TABLE}
OPERATION = {c.key: c.operation for c in TABLE if c.operation}

SKIP_LINE = re.compile(rb"#\s*transplant:\s*skip\b(?!-)")
SKIP_FILE = re.compile(rb"#\s*transplant:\s*skip-file\b")


def skips_file(data: bytes) -> bool:
    """Is there a ``# transplant: skip-file`` comment in the first 30 lines of ``data``?"""
    return b"transplant:" in data and any(SKIP_FILE.search(line) for line in data.splitlines()[:30])


@dataclass
class Record:
    """A change made (level ``fix``) or a finding left for the user (error/warning/note)."""

    line: int
    col: int  # 1-based
    end_line: int
    end_col: int
    code: str
    level: str
    operation: str
    message: str
    rule: str
    api: str = ""
    old: str = ""
    new: str = ""
    suggestion: str = ""
    cell: int = 0  # a notebook's code cell (1-based, as Jupyter numbers cells), 0 elsewhere; lines count in it

    @property
    def is_change(self) -> bool:
        return self.level == "fix"

    @property
    def shown_message(self) -> str:
        """The message as outputs show it: a notebook's finding says its cell first."""
        return cell_message(self.cell, self.message)


def cell_message(cell: int, message: str) -> str:
    """``cell N: message`` in a notebook's cell N, else the message."""
    return f"cell {cell}: {message}" if cell else message


class Recorded:
    """The changes and the findings among an object's ``records``."""

    records: list[Record]

    @property
    def changes(self) -> list[Record]:
        return [r for r in self.records if r.is_change]

    @property
    def findings(self) -> list[Record]:
        return [r for r in self.records if not r.is_change]


@dataclass
class Conversion(Recorded):
    """Result of converting one source text."""

    new: bytes | None  # None when nothing changed
    records: list[Record] = field(default_factory=list)
    # (first line, last line, why) of code that a device test kept as a CUDA test chooses: an NPU run
    # never enters it (transplant.guards.unreached; project/cuda_tests.py makes its findings notes)
    unreached: list[tuple[int, int, str]] = field(default_factory=list)


class SourceError(Exception):
    """The source could not be parsed; message is one line with the position."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def not_converted_record(reason: str, line: int = 1, col: int = 1, level: str = "error") -> Record:
    """The record (TP900) of a file, or a notebook cell, left as it is because it could not be
    converted."""
    return Record(line, col, line, col, NOT_CONVERTED, level, "parse", f"not converted: {reason}", "builtin")


def internal_error(exc: BaseException) -> str:
    """How a bug of transplant's own is reported (one line; ``--debug`` shows the traceback)."""
    return f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"


class Finding(Protocol):
    """What needs_hand_rewrite reads: a Record, or a Diagnostic made from one."""

    @property
    def level(self) -> str: ...
    @property
    def code(self) -> str: ...


def needs_hand_rewrite(finding: Finding) -> bool:
    """Is this finding (a Record, or a Diagnostic made from one) a use of an API the user must
    rewrite by hand? Errors and warnings are; notes and "could not be parsed" are not."""
    return finding.level in ("error", "warning") and finding.code != NOT_CONVERTED


__all__ = [
    "CODES",
    "OPERATION",
    "SKIP_FILE",
    "SKIP_LINE",
    "Conversion",
    "Record",
    "Recorded",
    "SourceError",
    "cell_message",
    "internal_error",
    "needs_hand_rewrite",
    "not_converted_record",
    "skips_file",
]
