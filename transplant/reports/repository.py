"""Reports of a repository conversion: change_list.csv, unsupported_op.xlsx, the log (log.py).

All of them are views of the same records (see records.Record). The workbook's sheets for custom
operators and libraries are built by transplant.reports.sheets from the same records.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

from ..filetypes import FileResult
from ..codes import NOT_CONVERTED
from ..records import Record
from .columns import Column, csv_text, position, sheet
from .rulenames import rule_label
from . import writer_child
from .xlsx import BOLD, BOLD_PERCENT, PERCENT, write_workbook

CHANGE_LIST = "change_list.csv"
UNSUPPORTED = "unsupported_op.xlsx"
LOG = "msFmkTranspltlog.txt"


class ApiCount(NamedTuple):
    api: str
    level: str
    occurrences: int
    files: int


class FileSummary(NamedTuple):
    file: str
    converted: int
    errors: int
    warnings: int
    notes: int
    rate: float | str  # "": nothing to convert or rewrite
    error: str  # why the file could not be parsed


# change_list.csv: one line per change, an item is (the file's result, the change)
CHANGE_COLUMNS = (
    Column("File", 0, lambda item: item[0].path),
    Column("Start Line", 0, lambda item: item[1].line),
    Column("End Line", 0, lambda item: item[1].end_line),
    Column("Operation Type", 0, lambda item: item[1].operation),
    Column("Message", 0, lambda item: item[1].shown_message),
    Column("Rule", 0, lambda item: rule_label(item[1].rule, item[1].api)),
    Column("Code", 0, lambda item: item[1].code),
)
# the Unsupported sheet: one row per finding of a file, identical ones counted (findings.Row);
# Line is the first of "Lines"
UNSUPPORTED_COLUMNS = (
    Column("File", 28, lambda row: row.path, wrap=True),
    Column("Line", 8, lambda row: row.first.line),
    Column("Converted line", 10, lambda row: row.converted_line),
    Column("Column", 8, lambda row: row.first.col),
    Column("API", 28, lambda row: row.api, wrap=True),
    Column("Level", 9, lambda row: row.first.level),
    Column("Message", 48, lambda row: row.message, wrap=True),
    Column("Suggestion", 48, lambda row: row.first.suggestion, wrap=True),
    Column("Count", 7, lambda row: row.count),
    Column("Lines", 16, lambda row: row.shown_lines() if row.count > 1 else "", wrap=True),
)
API_COUNT_COLUMNS = (
    Column("API", 60, lambda row: row.api, wrap=True),
    Column("Level", 9, lambda row: row.level),
    Column("Occurrences", 12, lambda row: row.occurrences),
    Column("Files", 8, lambda row: row.files),
)
SUMMARY_COLUMNS = (
    Column("File", 50, lambda row: row.file, wrap=True),
    Column("Converted references", 12, lambda row: row.converted),
    Column("Unsupported references", 12, lambda row: row.errors + row.warnings),
    Column("Conversion rate", 11, lambda row: row.rate),
    Column("Errors", 8, lambda row: row.errors),
    Column("Warnings", 10, lambda row: row.warnings),
    Column("Notes", 8, lambda row: row.notes),
    Column("Not parsed", 50, lambda row: row.error, wrap=True),
)


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


def write_reports(
    folder: Path,
    results: Sequence[FileResult],
    *,
    taken: set[str],
    notes: Sequence[str] = (),
    warnings: Sequence[str] = (),
    copied: int = 0,
) -> dict[str, str]:
    """Write the three reports into ``folder``, under names that leave the project's own files of
    the same names (``taken``) alone; returns report name -> the name it was written under."""
    from .log import write_log

    names = {n: report_name(n, taken) for n in (CHANGE_LIST, UNSUPPORTED, LOG)}
    write_change_list(folder / names[CHANGE_LIST], results)
    write_unsupported_xlsx(folder / names[UNSUPPORTED], results)
    write_log(folder / names[LOG], log_entries(results, notes, warnings, copied))
    return names


_LOG_LEVEL = {"fix": "INFO", "note": "INFO", "warning": "WARNING", "error": "ERROR"}


def log_entries(
    results: Sequence[FileResult], notes: Sequence[str], warnings: Sequence[str], copied: int
) -> Iterator[tuple[str, str]]:
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


def changes(results: Iterable[FileResult]) -> list[tuple[FileResult, Record]]:
    return [(res, r) for res in results for r in res.changes]


def write_change_list(path: Path, results: Sequence[FileResult]) -> int:
    text, count = csv_text(CHANGE_COLUMNS, changes(results))
    path.write_bytes(text.encode("utf-8"))  # into the staging folder, renamed whole at the end
    return count


def write_unsupported_xlsx(path: Path, results: Sequence[FileResult]) -> int:
    from .findings import reported, rows
    from .sheets import LIBRARY_COLUMNS, OPERATOR_COLUMNS, PATH_COLUMNS, library_rows, operator_rows, path_rows

    grouped = rows(results)
    per_api: dict[tuple[str, str], list[str]] = defaultdict(list)
    for res, r in reported(results):
        per_api[(r.api, r.level)].append(res.path)

    unsupported = sheet("Unsupported", UNSUPPORTED_COLUMNS, grouped)
    counts = sorted(
        (ApiCount(api, level, len(files), len(set(files))) for (api, level), files in per_api.items()),
        key=lambda r: (-r.occurrences, r.api),
    )
    api_counts = sheet("API counts", API_COUNT_COLUMNS, counts)
    operators = sheet("Custom operators", OPERATOR_COLUMNS, operator_rows(results))
    libraries = sheet("Libraries", LIBRARY_COLUMNS, library_rows(results))
    paths = sheet("NPU paths", PATH_COLUMNS, path_rows(results))  # what a reviewer reads first

    summary: list[FileSummary] = []
    for res in results:
        if res.kind == "other":
            continue
        conv = len(res.changes)
        levels = Counter(r.level for r in res.findings if r.code != NOT_CONVERTED)
        if not conv and not levels and not res.error:
            continue  # a file that needed no change and has nothing to say has no row
        uns = levels["error"] + levels["warning"]  # notes are not to rewrite
        # a file with notes alone has no conversion rate at all (an empty cell), not 0% or 100%
        rate = _rate(conv, uns) if conv or uns or res.error else ""
        summary.append(
            FileSummary(res.path, conv, levels["error"], levels["warning"], levels["note"], rate, res.error or "")
        )
    conv, errors, warnings, notes = (
        sum(getattr(f, name) for f in summary) for name in ("converted", "errors", "warnings", "notes")
    )
    summary.append(FileSummary("TOTAL", conv, errors, warnings, notes, _rate(conv, errors + warnings), ""))
    totals = sheet("Summary", SUMMARY_COLUMNS, summary)
    last = len(summary) + 1  # the TOTAL row, in bold; the rates as percentages
    rate = position(SUMMARY_COLUMNS, "Conversion rate")
    totals.styles = {(row, rate): PERCENT for row in range(2, last)}
    totals.styles.update({(last, column): BOLD for column in range(1, len(SUMMARY_COLUMNS) + 1)})
    totals.styles[(last, rate)] = BOLD_PERCENT
    sheets = [unsupported, paths, api_counts, operators, libraries, totals]
    if not writer_child.write(path, sheets):  # the child that imported openpyxl meanwhile (writer_child.py)
        write_workbook(path, sheets)
    return len(grouped)


def _rate(converted: int, unsupported: int) -> float:
    total = converted + unsupported
    return converted / total if total else 1.0
