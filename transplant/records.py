"""What a conversion reports: records, their codes, and the skip comments. Plain data, imported by
every output path without loading the parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Stable codes, listed in README.
CODES = {
    "rename": "TP101",
    "method": "TP102",
    "args": "TP103",
    "device": "TP104",
    "env": "TP105",
    "import": "TP106",
    "no_counterpart": "TP201",
    "unsupported": "TP202",
    "note": "TP203",
    "syntax": "TP900",
}
OPERATION = {
    "rename": "API rename",
    "method": "method rename",
    "args": "argument change",
    "device": "device string",
    "env": "environment variable",
    "import": "import",
}

SKIP_LINE = re.compile(rb"#\s*transplant:\s*skip\b(?!-)")
SKIP_FILE = re.compile(rb"#\s*transplant:\s*skip-file\b")


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

    @property
    def is_change(self) -> bool:
        return self.level == "fix"


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


class SourceError(Exception):
    """The source could not be parsed; message is one line with the position."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


__all__ = ["CODES", "OPERATION", "SKIP_FILE", "SKIP_LINE", "Conversion", "Record", "Recorded", "SourceError"]
