"""The report's .xlsx (Office Open XML spreadsheet) files: tables of text and numbers, written
with openpyxl in write-only mode.

Owns the file format only: sheets of rows (str, int, float) with a styled, frozen, filterable
header row (repeated on every printed page), column widths, wrapped text columns, a few cell styles
(bold, percent, one fill per finding level), numbers centred so that neighbouring number and text
cells do not read as one, and a print layout one page wide (landscape). What goes into the cells is
repository.py's business. openpyxl is imported only when a workbook is written (repository mode),
never by --check, stdin or the language server. The same sheets give the same bytes: the archive's
dates and the document's are fixed.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Sequence

# cell styles
PLAIN, HEADER, PERCENT, BOLD, BOLD_PERCENT, ERROR, WARNING, NOTE = range(8)
HEADER_FILL = "00305496"
HEADER_FONT = "00FFFFFF"
# fills of the finding levels (light red, light amber, light grey: the text stays black and readable in print)
LEVEL_FILLS = {ERROR: "00F8CBAD", WARNING: "00FFE699", NOTE: "00E7E6E6"}
LEVEL_STYLES = {"error": ERROR, "warning": WARNING, "note": NOTE}
FIXED_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip archive can hold
# characters XML 1.0 cannot carry: written as the format's own escape, _xHHHH_ (openpyxl refuses them)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|_(?=x[0-9A-Fa-f]{4}_)")


@dataclass
class Sheet:
    title: str
    header: list[str]
    widths: list[float]
    rows: list[list[object]] = field(default_factory=list)
    styles: dict[tuple[int, int], int] = field(default_factory=dict)  # (row, column), 1-based -> style
    wrap: frozenset[int] = frozenset()  # 1-based columns whose text wraps within the column's width


LINE_HEIGHT = 15.0  # points, a line of 11-point text


def row_lines(row: Sequence[object], widths: Sequence[float], wrap: frozenset[int]) -> int:
    """How many lines of text the row needs: its wrapped cells' text, broken at the words that fill
    each column's width (a column of width w holds about 1.2 w characters of text, less one for the margins)."""
    most = 1
    for c in wrap:
        value = row[c - 1] if c <= len(row) else None
        if not isinstance(value, str) or not value:
            continue
        room = max(1, int(widths[c - 1] * 1.2) - 1)  # (text of 11-point Calibri is narrower than its digits)
        most = max(most, sum(_wrapped_lines(line, room) for line in value.splitlines() or [""]))
    return most


def _wrapped_lines(text: str, room: int) -> int:
    lines, used = 1, 0
    for word in text.split(" "):
        while len(word) > room:  # a word wider than the column breaks anywhere
            lines += 1 if used else 0
            word, used = word[room:], 0
            lines += 1 if word else 0
        if used and used + 1 + len(word) > room:
            lines, used = lines + 1, len(word)
        else:
            used += len(word) + (1 if used else 0)
    return lines


def column_letter(n: int) -> str:
    letters = ""
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _text(value: str) -> str:
    return _ILLEGAL.sub(lambda m: f"_x{ord(m.group()):04X}_", value)


class _FixedDates(zipfile.ZipFile):
    """A zip archive whose members all carry one fixed date, so that the same workbook gives the
    same bytes (openpyxl stamps the members with the time of writing)."""

    def writestr(self, info, data, *args, **kwargs):
        if not isinstance(info, zipfile.ZipInfo):
            info = zipfile.ZipInfo(info, date_time=FIXED_DATE)
            info.compress_type = self.compression
        super().writestr(info, data, *args, **kwargs)

    def write(self, filename, arcname=None, *args, **kwargs):
        with open(filename, "rb") as fh:  # a write-only sheet, streamed to a temporary file first
            self.writestr(str(arcname or filename), fh.read())


def load_openpyxl() -> None:
    """Import the parts of openpyxl that write a workbook, without numpy and Pillow: openpyxl
    imports numpy when it is installed (as in every PyTorch environment) only to recognise numpy
    numbers, and Pillow only to read the images a sheet holds; the reports hold neither, and those
    imports would be most of a small run's time (Pillow's: about 0.01 s of CPU)."""
    import sys

    if "openpyxl.writer.excel" in sys.modules:
        return
    hidden = [name for name in ("numpy", "PIL") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # "import numpy" fails: openpyxl goes without
    try:
        import openpyxl.writer.excel  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]


def _styles() -> dict[int, dict[str, object]]:
    from openpyxl.styles import Alignment, Font, PatternFill

    bold = Font(b=True, sz=11, name="Calibri", family=2)
    return {
        PLAIN: {},
        HEADER: {
            "font": Font(b=True, sz=11, color=HEADER_FONT, name="Calibri", family=2),
            "fill": PatternFill("solid", fgColor=HEADER_FILL),
            "alignment": Alignment(vertical="center"),
        },
        PERCENT: {"number_format": "0.0%"},
        BOLD: {"font": bold},
        BOLD_PERCENT: {"font": bold, "number_format": "0.0%"},
        **{style: {"fill": PatternFill("solid", fgColor=colour)} for style, colour in LEVEL_FILLS.items()},
    }


def _alignment(number: bool, wrap: bool, header: bool):
    """Top-aligned cells (a wrapped neighbour makes a row tall); numbers centred; text wrapped in
    the columns of long text."""
    from openpyxl.styles import Alignment

    return Alignment(
        horizontal="center" if number else None,
        vertical="center" if header else "top",
        wrap_text=True if wrap or header else None,
    )


def write_workbook(path: Path, sheets: list[Sheet]) -> None:
    """Write ``sheets`` to ``path`` as one .xlsx file."""
    load_openpyxl()
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.writer.excel import ExcelWriter

    styles = _styles()
    alignments: dict[tuple[bool, bool, bool], object] = {}  # one object each: openpyxl hashes it per cell
    workbook = Workbook(write_only=True)
    workbook.properties.created = workbook.properties.modified = datetime(*FIXED_DATE)

    def cell(sheet, value: object, style: int, wrap: bool):
        if value == "":
            value = None
        c = WriteOnlyCell(sheet, value=_text(value) if isinstance(value, str) else value)
        if isinstance(value, str):
            c.data_type = "s"  # text is never a formula, even when it starts with "="
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        key = (number, wrap, style == HEADER)
        alignment = alignments.get(key)
        if alignment is None:
            alignment = alignments[key] = _alignment(*key)
        c.alignment = alignment
        for name, setting in styles[style].items():
            if name != "alignment":
                setattr(c, name, setting)
        return c

    for sheet in sheets:
        ws = workbook.create_sheet(sheet.title)
        ws.freeze_panes = "A2"
        for i, width in enumerate(sheet.widths, start=1):
            ws.column_dimensions[column_letter(i)].width = width
        last = f"{column_letter(len(sheet.header))}{len(sheet.rows) + 1}"
        ws.auto_filter.ref = f"A1:{last}"
        _print_layout(ws, last)
        table: list[Sequence[object]] = [sheet.header, *sheet.rows]
        for r, row in enumerate(table, start=1):
            lines = row_lines(row, sheet.widths, sheet.wrap if r > 1 else frozenset(range(1, len(row) + 1)))
            if lines > 1:  # (a spreadsheet program does not grow a row that a file gives no height)
                ws.row_dimensions[r].height = LINE_HEIGHT * lines + 2
            ws.append(
                [
                    cell(ws, value, HEADER if r == 1 else sheet.styles.get((r, c), PLAIN), c in sheet.wrap)
                    for c, value in enumerate(row, start=1)
                ]
            )
    ExcelWriter(workbook, _FixedDates(path, "w", zipfile.ZIP_DEFLATED)).save()


def _print_layout(ws, last: str) -> None:
    """One page wide, as many pages tall as the rows need, landscape, the header on every page."""
    ws.print_area = f"A1:{last}"
    ws.print_title_rows = "1:1"
    from openpyxl.worksheet.properties import PageSetupProperties

    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0  # 0: no limit on the number of pages down
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = "9"  # A4
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5
