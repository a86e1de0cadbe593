"""msprobe's compare tables, CSV or workbook, read as rows of {column: text}.

mindstudio-probe writes ``compare_result_<time>.csv`` by default since its 2026-05 releases
(``msprobe compare --xlsx`` writes the workbook, ``msprobe/core/compare/utils.py``); earlier
releases write ``compare_result_<time>.xlsx``. The columns are the same.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

PATTERNS = ("compare_result_*.csv", "compare_result_*.xlsx")
csv.field_size_limit(1 << 28)  # stack columns are long


def found(folder: Path) -> list[Path]:
    """The result tables in ``folder``, both kinds."""
    return [path for pattern in PATTERNS for path in folder.glob(pattern)]


def rows(table: Path) -> Iterator[dict[str, str]]:
    if table.suffix == ".xlsx":
        yield from _workbook_rows(table)
        return
    with open(table, newline="", encoding="utf-8-sig") as f:
        yield from csv.DictReader(f)


def _workbook_rows(table: Path) -> Iterator[dict[str, str]]:
    from openpyxl import load_workbook

    book = load_workbook(table, read_only=True, data_only=True)
    try:
        sheet = book.worksheets[0]
        header: list[str] | None = None
        for values in sheet.iter_rows(values_only=True):
            cells = ["" if v is None else str(v) for v in values]
            if header is None:
                header = cells
                continue
            if any(cells):
                yield dict(zip(header, cells))
    finally:
        book.close()
