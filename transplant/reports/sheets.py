"""The workbook's sheets for custom operators, CUDA-only libraries and NPU paths, as rows built from records.

*Custom operators*: one row per operator a C/C++/CUDA file registers (TP204 records of those
files), with the Python calls that reach it (TP204 records of Python files with the same ``api``),
plus CUDA files that register nothing (the file alone). *Libraries*: one row per library named by
library records (TP206, ``api`` = the library), with its uses (per file, counted) and NPU route. Calls and uses give the
original line and, where conversion moved it, the line in the converted file (in a notebook: the
cell and the line in it). *NPU paths*: one row per rewrite that changes which code an NPU run
executes (TP108 changes, engine/npu_paths.py), with the branch it now enters.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, NamedTuple

from ..filetypes import FileResult
from ..records import CODES, Record
from .columns import Column


class OperatorRow(NamedTuple):
    file: str  # the C/C++/CUDA file that registers it ("" when its source is not in the input)
    operator: str
    line: object  # the registration line ("" for a file that registers nothing, or calls alone)
    calls: str


class LibraryRow(NamedTuple):
    library: str
    uses: int
    where: str
    route: str


OPERATOR_COLUMNS = (
    Column("File", 40, lambda row: row.file, wrap=True),
    Column("Operator", 40, lambda row: row.operator, wrap=True),
    Column("Registration line", 13, lambda row: row.line),
    Column("Calls found", 70, lambda row: row.calls, wrap=True),
)


class PathRow(NamedTuple):
    file: str
    line: int
    converted: object  # the line in the converted file ("" when it did not move)
    change: str
    now: str  # what an NPU run does now


PATH_COLUMNS = (
    Column("File", 40, lambda row: row.file),
    Column("Line", 8, lambda row: row.line),
    Column("Converted line", 14, lambda row: row.converted),
    Column("Change", 50, lambda row: row.change),
    Column("What an NPU run does now", 90, lambda row: row.now),
)
LIBRARY_COLUMNS = (
    Column("Library", 30, lambda row: row.library, wrap=True),
    Column("Uses", 8, lambda row: row.uses),
    Column("Where", 60, lambda row: row.where, wrap=True),
    Column("NPU route", 70, lambda row: row.route, wrap=True),
)


def _place(res: FileResult, r: Record) -> str:
    if r.cell:  # a notebook's lines count per cell
        return f"{res.path} cell {r.cell}:{r.line}"
    moved = res.new_lines.get(r.line, r.line)
    return f"{res.path}:{r.line}" + (f" (converted: {moved})" if moved != r.line else "")


def operator_rows(results: Iterable[FileResult]) -> list[OperatorRow]:
    results = list(results)
    calls: dict[str, list[str]] = defaultdict(list)
    for res in results:
        if res.kind != "cpp":
            for r in res.findings:
                if r.code == CODES["custom_op"] and r.operation != "extension import":  # imports: not calls
                    calls[r.api].append(_place(res, r))
    rows: list[OperatorRow] = []
    registered: set[str] = set()
    for res in results:
        if res.kind != "cpp":
            continue
        for r in res.findings:
            if r.code == CODES["custom_op"]:
                registered.add(r.api)
                rows.append(
                    OperatorRow(
                        res.path,
                        r.api or "(CUDA kernels, no operator registered)",
                        r.line if r.api else "",
                        ", ".join(calls.get(r.api, [])) if r.api else "",
                    )
                )
    for api in sorted(set(calls) - registered):  # calls to operators whose source is not in the input
        rows.append(OperatorRow("", api, "", ", ".join(calls[api])))
    return rows


def library_rows(results: Iterable[FileResult]) -> list[LibraryRow]:
    """One row per library: its uses in all, where (a file with one use: the place; with more: the
    file and its count) and its routes."""
    uses: dict[str, dict[str, list[str]]] = defaultdict(dict)
    routes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # library -> level -> routes
    for res in results:
        for r in res.findings:
            if r.code == CODES["library"]:
                uses[r.api].setdefault(res.path, []).append(_place(res, r))
                if r.suggestion and r.suggestion not in routes[r.api][r.level]:
                    routes[r.api][r.level].append(r.suggestion)
    return [
        LibraryRow(
            lib,
            sum(map(len, uses[lib].values())),
            ", ".join(_where(path, places) for path, places in uses[lib].items()),
            "; ".join(_routes(routes[lib])),
        )
        for lib in sorted(uses)
    ]


def _routes(by_level: dict[str, list[str]]) -> list[str]:
    """The routes of a library's errors and warnings (those of its notes only when it has nothing else)."""
    acted = by_level.get("error", []) + [r for r in by_level.get("warning", []) if r not in by_level.get("error", [])]
    return acted or by_level.get("note", [])


def _where(path: str, places: list[str]) -> str:
    return places[0] if len(places) == 1 else f"{path} ({len(places)})"


def path_rows(results: Iterable[FileResult]) -> list[PathRow]:
    """One row per TP108 change, in file and line order."""
    rows = []
    for res in results:
        for r in res.changes:
            if r.code != CODES["path"]:
                continue
            change, _, now = r.message.partition(": an NPU run ")
            now = f"an NPU run {now}" if now else "an NPU run accepts 'npu' where the collection accepted 'cuda'"
            moved = res.new_lines.get(r.line, r.line)
            rows.append(
                PathRow(
                    res.path, r.line, moved if moved != r.line else "", r.shown_message[: -len(r.message)] + change, now
                )
            )
    return rows
