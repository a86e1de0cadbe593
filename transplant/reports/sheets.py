"""The workbook's sheets for custom operators and CUDA-only libraries, as rows built from records.

*Custom operators*: one row per operator a C/C++/CUDA file registers (TP204 records of those
files), with the Python calls that reach it (TP204 records of Python files with the same ``api``),
plus CUDA files that register nothing (the file alone). *Libraries*: one row per library named by
library records (TP206, ``api`` = the library), with its uses (per file, counted) and NPU route. Calls and uses give the
original line and, where conversion moved it, the line in the converted file (in a notebook: the
cell and the line in it).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..filetypes import FileResult
from ..records import CODES, Record

OPERATOR_HEADER = ["File", "Operator", "Registration line", "Calls found"]
LIBRARY_HEADER = ["Library", "Uses", "Where", "NPU route"]


def _place(res: FileResult, r: Record) -> str:
    if r.cell:  # a notebook's lines count per cell
        return f"{res.path} cell {r.cell}:{r.line}"
    moved = res.new_lines.get(r.line, r.line)
    return f"{res.path}:{r.line}" + (f" (converted: {moved})" if moved != r.line else "")


def operator_rows(results: Iterable[FileResult]) -> list[list[object]]:
    results = list(results)
    calls: dict[str, list[str]] = defaultdict(list)
    for res in results:
        if res.kind != "cpp":
            for r in res.findings:
                if r.code == CODES["custom_op"] and r.operation != "extension import":  # imports: not calls
                    calls[r.api].append(_place(res, r))
    rows: list[list[object]] = []
    registered: set[str] = set()
    for res in results:
        if res.kind != "cpp":
            continue
        for r in res.findings:
            if r.code == CODES["custom_op"]:
                registered.add(r.api)
                rows.append([res.path, r.api or "(CUDA kernels, no operator registered)",
                             r.line if r.api else "", ", ".join(calls.get(r.api, [])) if r.api else ""])
    for api in sorted(set(calls) - registered):  # calls to operators whose source is not in the input
        rows.append(["", api, "", ", ".join(calls[api])])
    return rows


def library_rows(results: Iterable[FileResult]) -> list[list[object]]:
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
    return [[lib, sum(map(len, uses[lib].values())), ", ".join(_where(path, places) for path, places in uses[lib].items()),
             "; ".join(_routes(routes[lib]))] for lib in sorted(uses)]


def _routes(by_level: dict[str, list[str]]) -> list[str]:
    """The routes of a library's errors and warnings (those of its notes only when it has nothing else)."""
    acted = by_level.get("error", []) + [r for r in by_level.get("warning", []) if r not in by_level.get("error", [])]
    return acted or by_level.get("note", [])


def _where(path: str, places: list[str]) -> str:
    return places[0] if len(places) == 1 else f"{path} ({len(places)})"
