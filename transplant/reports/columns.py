"""A report's table as one list of columns, each (name, width, value): the header, the column
widths and every row come from the same list, so a column is added, moved or dropped in one place.

In the workbook a column is as wide as its longest cell (or header word), up to its ``width``;
text longer than that wraps (``wrap``) in the columns of long text. A column named "Level" gets the
level's fill.

``value`` takes one item of the table (a record, a grouped finding, a row of a sheet) and gives
the cell. Cells that a spreadsheet would run as a formula are neutralised here, for the CSV file and
the workbook alike.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from .xlsx import LEVEL_STYLES, Sheet

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class Column(NamedTuple):
    name: str  # the header cell
    width: int  # the widest it gets, in characters, in the workbook (a CSV file has no widths)
    value: Callable[[Any], object]  # item -> cell
    wrap: bool = False  # long text wraps within the width (else it is cut off at the next cell)


def guard_cell(value: object) -> object:
    """Neutralise text a spreadsheet would run as a formula (CSV/formula injection)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def header(columns: Sequence[Column]) -> list[str]:
    return [c.name for c in columns]


def table_rows(columns: Sequence[Column], items: Iterable[Any]) -> list[list[object]]:
    """The cells of each item, guarded."""
    return [[guard_cell(c.value(item)) for c in columns] for item in items]


MIN_WIDTH = 6  # a filter button and a short number fit


def _shown(value: object) -> int:
    """How many characters a cell shows on its longest line (a percentage as "100.0%")."""
    if isinstance(value, float):
        return 6
    return max((len(line) for line in str(value).splitlines()), default=0) if value is not None else 0


def widths(columns: Sequence[Column], rows: Sequence[Sequence[object]]) -> list[float]:
    """Each column as wide as its longest cell, at least its header's longest word (headers wrap),
    at most its ``width``; two characters for the filter button and the margins."""
    out: list[float] = []
    for i, c in enumerate(columns):
        longest = max(max((len(word) for word in c.name.split()), default=0), *(_shown(row[i]) for row in rows), 0)
        out.append(float(min(c.width, max(MIN_WIDTH, longest + 2))))
    return out


def sheet(title: str, columns: Sequence[Column], items: Iterable[Any]) -> Sheet:
    rows = table_rows(columns, items)
    styles: dict[tuple[int, int], int] = {}
    if "Level" in header(columns):
        level = position(columns, "Level")
        styles = {
            (r, level): LEVEL_STYLES[value]
            for r, row in enumerate(rows, start=2)
            if isinstance(value := row[level - 1], str) and value in LEVEL_STYLES
        }
    wrap = frozenset(i for i, c in enumerate(columns, start=1) if c.wrap)
    return Sheet(title, header(columns), widths(columns, rows), rows, styles, wrap)


def position(columns: Sequence[Column], name: str) -> int:
    """The 1-based column number of the column ``name`` (for cell styles)."""
    return header(columns).index(name) + 1


def csv_text(columns: Sequence[Column], items: Iterable[Any]) -> tuple[str, int]:
    """The CSV text (header, then a line per item) and the number of items."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header(columns))
    rows = table_rows(columns, items)
    writer.writerows(rows)
    return buf.getvalue(), len(rows)
