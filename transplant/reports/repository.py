"""Reports of a repository conversion: change_list.csv, unsupported_op.xlsx, the log (log.py).

All of them are views of the same records (see records.Record). The workbook's sheets for custom
operators and libraries are built by transplant.reports.sheets from the same records.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..filetypes import FileResult
from ..records import needs_hand_rewrite
from .xlsx import BOLD, BOLD_PERCENT, PERCENT, Sheet, write_workbook

CHANGE_LIST = "change_list.csv"
UNSUPPORTED = "unsupported_op.xlsx"
LOG = "msFmkTranspltlog.txt"
CSV_HEADER = ["File", "Start Line", "End Line", "Operation Type", "Message", "Rule", "Code"]
# one row per finding of a file, identical ones counted (findings.py); Line is the first of "Lines"
UNSUPPORTED_HEADER = ["File", "Line", "Converted line", "Column", "API", "Level", "Message", "Suggestion", "Count",
                      "Lines"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def report_name(name: str, taken: set[str]) -> str:
    """A report's file name that does not collide with a file of the project at the same place."""
    if name not in taken:
        return name
    candidate = f"transplant_{name}"
    i = 2
    while candidate in taken:
        candidate = f"transplant{i}_{name}"
        i += 1
    return candidate


def write_reports(folder: Path, results: Sequence[FileResult], *, taken: set[str], notes: Sequence[str] = (),
                  warnings: Sequence[str] = (), copied: int = 0) -> dict[str, str]:
    """Write the three reports into ``folder``, under names that leave the project's own files of
    the same names (``taken``) alone; returns report name -> the name it was written under."""
    from .log import write_log

    names = {n: report_name(n, taken) for n in (CHANGE_LIST, UNSUPPORTED, LOG)}
    write_change_list(folder / names[CHANGE_LIST], results)
    write_unsupported_xlsx(folder / names[UNSUPPORTED], results)
    write_log(folder / names[LOG], log_entries(results, notes, warnings, copied))
    return names


_LOG_LEVEL = {"fix": "INFO", "note": "INFO", "warning": "WARNING", "error": "ERROR"}


def log_entries(results: Sequence[FileResult], notes: Sequence[str], warnings: Sequence[str],
                copied: int) -> Iterator[tuple[str, str]]:
    converted = sum(1 for r in results if r.new is not None)
    yield "INFO", f"transplant run: {converted} files converted, {copied} copied"
    for note in notes:
        yield "INFO", note
    for warning in warnings:
        yield "WARNING", warning
    for res in results:
        if res.error:
            yield "ERROR", f"{res.path}: not converted: {res.error}"
        for r in res.records:
            yield _LOG_LEVEL[r.level], f"{res.path}:{r.line}:{r.col}: {r.code} {r.shown_message}"


def guard_cell(value: object) -> object:
    """Neutralise text a spreadsheet would run as a formula (CSV/formula injection)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def change_rows(results: Iterable[FileResult]) -> list[list[object]]:
    rows = []
    for res in results:
        for r in res.changes:
            rows.append([res.path, r.line, r.end_line, r.operation, r.shown_message, r.rule, r.code])
    return rows


def write_change_list(path: Path, results: Sequence[FileResult]) -> int:
    rows = change_rows(results)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in rows:
        writer.writerow([guard_cell(c) for c in row])
    path.write_bytes(buf.getvalue().encode("utf-8"))  # into the staging folder, renamed whole at the end
    return len(rows)


def write_unsupported_xlsx(path: Path, results: Sequence[FileResult]) -> int:
    def sheet(title: str, header: list[str], rows: list[list[object]], widths: list[int]) -> Sheet:
        return Sheet(title, header, widths, [[guard_cell(c) for c in row] for row in rows])

    from .findings import reported, rows

    grouped = rows(results)
    occurrences = [[row.path, row.first.line, row.converted_line, row.first.col, row.first.api, row.first.level,
                    row.message, row.first.suggestion, row.count, row.shown_lines() if row.count > 1 else ""]
                   for row in grouped]
    per_api: dict[tuple[str, str], list[str]] = defaultdict(list)
    for res, r in reported(results):
        per_api[(r.api, r.level)].append(res.path)

    unsupported = sheet("Unsupported", UNSUPPORTED_HEADER, occurrences, [40, 8, 14, 8, 45, 10, 70, 40, 8, 30])

    counts = sorted(([api, level, len(files), len(set(files))] for (api, level), files in per_api.items()),
                    key=lambda r: (-r[2], r[0]))
    api_counts = sheet("API counts", ["API", "Level", "Occurrences", "Files"], counts, [50, 10, 12, 8])
    from .sheets import LIBRARY_HEADER, OPERATOR_HEADER, library_rows, operator_rows

    operators = sheet("Custom operators", OPERATOR_HEADER, operator_rows(results), [40, 40, 16, 70])
    libraries = sheet("Libraries", LIBRARY_HEADER, library_rows(results), [30, 8, 60, 70])

    summary = []
    total_conv = total_uns = 0
    for res in results:
        if res.kind == "other":
            continue
        conv = len(res.changes)
        uns = sum(1 for r in res.findings if needs_hand_rewrite(r))  # notes are not to rewrite
        if not conv and not uns and not res.error:
            continue
        total_conv += conv
        total_uns += uns
        summary.append([res.path, conv, uns, _rate(conv, uns), res.error or ""])
    summary.append(["TOTAL", total_conv, total_uns, _rate(total_conv, total_uns), ""])
    totals = sheet("Summary", ["File", "Converted references", "Unsupported references", "Conversion rate", "Error"],
                   summary, [50, 20, 22, 16, 50])
    last = len(summary) + 1  # the TOTAL row, in bold; the rates as percentages
    totals.styles = {(row, 4): PERCENT for row in range(2, last)}
    totals.styles.update({(last, column): BOLD for column in range(1, 6)})
    totals.styles[(last, 4)] = BOLD_PERCENT
    write_workbook(path, [unsupported, api_counts, operators, libraries, totals])
    return len(occurrences)


def _rate(converted: int, unsupported: int) -> float:
    total = converted + unsupported
    return converted / total if total else 1.0
