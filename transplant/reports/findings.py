"""Findings as people read them: one row per thing, counted, ordered by what stops the program first.

The records keep one finding per place (editors and SARIF need each place); the workbook and the
console read them through here. Identical findings in one file (same code, level, API, message and
suggestion) are one row with their count and lines. Rows are ordered by level (errors, then
warnings, then notes), then file, then place in the file. ``level_counts`` and ``kind_counts`` give the console's
summary. Plain data in, plain data out; no file is written here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..filetypes import FileResult
from ..codes import NOT_CONVERTED
from ..records import Record

LEVELS = ("error", "warning", "note")
_RANK = {level: i for i, level in enumerate(LEVELS)}


@dataclass
class Row:
    """Findings of one file that say the same thing: the first of them, and every line they are on."""

    path: str
    first: Record
    converted_line: int
    lines: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.lines)

    def shown_lines(self, limit: int = 20) -> str:
        """The lines, for a cell: all of them up to ``limit``, then how many more."""
        distinct = list(dict.fromkeys(self.lines))
        text = ", ".join(str(n) for n in distinct[:limit])
        return text + (f", ... ({len(distinct) - limit} more)" if len(distinct) > limit else "")


def reported(results: Iterable[FileResult]) -> Iterable[tuple[FileResult, Record]]:
    """Every finding a report lists (a file that could not be parsed is in the Summary, not here)."""
    for res in results:
        for r in res.findings:
            if r.code != NOT_CONVERTED:
                yield res, r


def rows(results: Iterable[FileResult]) -> list[Row]:
    out: list[Row] = []
    for res in results:
        by_key: dict[tuple, Row] = {}
        for r in res.findings:
            if r.code == NOT_CONVERTED:
                continue
            key = (r.code, r.level, r.api, r.cell, r.message, r.suggestion)
            row = by_key.get(key)
            if row is None:
                row = by_key[key] = Row(res.path, r, res.new_lines.get(r.line, r.line))
                out.append(row)
            row.lines.append(r.line)
    # stable: within a file, rows keep the records' order (by line; a notebook's by cell, then line)
    out.sort(key=lambda row: (_RANK.get(row.first.level, len(LEVELS)), row.path))
    return out


def level_counts(results: Iterable[FileResult]) -> dict[str, int]:
    counts = Counter(r.level for _, r in reported(results))
    return {level: counts.get(level, 0) for level in LEVELS}


def kind_counts(results: Iterable[FileResult]) -> list[tuple[str, dict[str, int]]]:
    """(code, findings of that code per level), most errors first, then most findings."""
    per: dict[str, Counter] = {}
    for _, r in reported(results):
        per.setdefault(r.code, Counter())[r.level] += 1
    ordered = sorted(per.items(), key=lambda item: tuple(-item[1].get(level, 0) for level in LEVELS) + (item[0],))
    return [(code, {level: c.get(level, 0) for level in LEVELS}) for code, c in ordered]
