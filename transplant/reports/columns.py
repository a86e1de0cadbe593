"""A report's table as one list of columns, each (name, width, value): the header, the column
widths and every row come from the same list, so a column is added, moved or dropped in one place.

``value`` takes one item of the table (a record, a grouped finding, a row of a sheet) and gives
the cell. Cells that a spreadsheet would run as a formula are neutralised here, for the CSV file and
the workbook alike.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from .xlsx import Sheet

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class Column(NamedTuple):
    name: str  # the header cell
    width: int  # in characters, in the workbook (a CSV file has no widths)
    value: Callable[[Any], object]  # item -> cell


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


def sheet(title: str, columns: Sequence[Column], items: Iterable[Any]) -> Sheet:
    return Sheet(title, header(columns), [c.width for c in columns], table_rows(columns, items))


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
