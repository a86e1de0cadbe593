"""Findings as people read them: one row per thing, counted, ordered by what stops the program first.

The records keep one finding per place (editors and SARIF need each place); the workbook and the
console read them through here. Identical findings in one file (same code, level, API, message and
suggestion) are one row with their count and lines; so are the uses of one CUDA-only library in
one file that differ only in the name used (``cutlass.cute.Tensor``, ``cutlass.Float32``, ...: one
row for the library, naming what is used), and the custom operators of one family in one file
(``torch.ops.dc.allgather_param``, ``torch.ops.dc.reduce_grad``, ...; their registrations under
several dispatch keys too: one row for ``torch.ops.dc``, naming the operators). Rows are ordered by level (errors, then
warnings, then notes), then file, then place in the file. ``level_counts`` and ``kind_counts`` give the console's
summary. Plain data in, plain data out; no file is written here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from ..filetypes import FileResult
from ..codes import NOT_CONVERTED
from ..records import CODES, Record, cell_message

LEVELS = ("error", "warning", "note")
_RANK = {level: i for i, level in enumerate(LEVELS)}


@dataclass
class Row:
    """Findings of one file that say the same thing: the first of them, and every line they are on."""

    path: str
    first: Record
    converted_line: int
    lines: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # a library row: the names used, in order
    family: str = ""  # a custom operator row: the operators' namespace or extension module
    operators: list[str] = field(default_factory=list)  # ... and the operators, in order
    wheres: list[str] = field(default_factory=list)  # ... and where they are registered, in order

    @property
    def count(self) -> int:
        return len(self.lines)

    @property
    def api(self) -> str:
        """The first finding's API; a row of several custom operators gives their family."""
        return self.family if self._grouped_operators() else self.first.api

    def _grouped_operators(self) -> bool:
        return bool(self.family) and (len(set(self.operators)) > 1 or len(set(self.wheres)) > 1)

    @property
    def message(self) -> str:
        """The first finding's message; a library row with several names used says which, and so
        does a row of several custom operators."""
        if self._grouped_operators():
            ops = list(dict.fromkeys(n for n in self.operators if n))
            text = _operator_text(self.first)[2]
            wheres = list(dict.fromkeys(w for w in self.wheres if w))
            if wheres:
                shown = ", ".join(wheres[:4]) + (f", ... ({len(wheres) - 4} more)" if len(wheres) > 4 else "")
                text = text.replace(" registered here;", f" registered here ({shown});", 1)
            listed = ", ".join(ops[:8]) + (", ..." if len(ops) > 8 else "")
            what = f"{len(ops)} operators: {listed}" if len(ops) > 1 else listed
            return cell_message(self.first.cell, f"{self.family} ({what}): {text}")
        distinct = list(dict.fromkeys(self.names))
        if len(distinct) < 2:
            return self.first.shown_message
        shown = ", ".join(distinct[:6]) + (", ..." if len(distinct) > 6 else "")
        text = f"{self.first.api} ({len(distinct)} names used: {shown}): {_library_text(self.first)[1]}"
        return cell_message(self.first.cell, text)

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


def _library_text(r: Record) -> tuple[str, str]:
    """(name used, what the rule says) of a library finding ``NAME (from LIBRARY): TEXT`` or
    ``LIBRARY: TEXT``; ("", message) for any other finding."""
    if r.code != CODES["library"] or not r.api:
        return "", r.message
    if r.message.startswith(f"{r.api}: "):
        return r.api, r.message[len(r.api) + 2 :]
    marker = f" (from {r.api}): "
    at = r.message.find(marker)
    if at > 0 and " " not in r.message[:at]:
        return r.message[:at], r.message[at + len(marker) :]
    return "", r.message


_REGISTERED = re.compile(r" registered here \(((?:[^()]|\([^()]*\))*)\);")


def _operator_text(r: Record) -> tuple[str, str, str, str]:
    """(family, operator, what the finding says without them, where it is registered) of a custom
    operator finding ``torch.ops.NS.OP: TEXT`` or ``MODULE.NAME: TEXT``; ("", "", message, "") for
    any other finding."""
    if r.code != CODES["custom_op"] or not r.api or not r.message.startswith(f"{r.api}: "):
        return "", "", r.message, ""
    parts = r.api.split(".")
    if r.api.startswith("torch.ops.") and len(parts) >= 3:
        family, name = ".".join(parts[:3]), ".".join(parts[3:])
    elif len(parts) >= 2:
        family, name = ".".join(parts[:-1]), parts[-1]
    else:
        return "", "", r.message, ""
    text = r.message[len(r.api) + 2 :]
    found = _REGISTERED.search(text)
    if found is None:
        return family, name, text, ""
    return family, name, text[: found.start()] + " registered here;" + text[found.end() :], found.group(1)


def rows(results: Iterable[FileResult]) -> list[Row]:
    out: list[Row] = []
    for res in results:
        by_key: dict[tuple, Row] = {}
        for r in res.findings:
            if r.code == NOT_CONVERTED:
                continue
            name, text = _library_text(r)
            family, operator, said, where = _operator_text(r)
            if family:
                key = (r.code, r.level, family, r.cell, said, r.suggestion)
            else:
                key = (r.code, r.level, r.api, r.cell, text if name else r.message, r.suggestion)
            row = by_key.get(key)
            if row is None:
                row = by_key[key] = Row(res.path, r, res.new_lines.get(r.line, r.line), family=family)
                out.append(row)
            row.lines.append(r.line)
            if name:
                row.names.append(name)
            if family:
                row.operators.append(operator)
                row.wheres.append(where)
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
