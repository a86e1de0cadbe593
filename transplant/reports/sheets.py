"""The workbook's sheets for custom operators and CUDA-only libraries, as rows built from records.

*Custom operators*: one row per operator a C/C++/CUDA file registers (TP204 records of those
files), with the Python calls that reach it (TP204 records of Python files with the same ``api``),
plus CUDA files that register nothing (the file alone). *Libraries*: one row per library named by
library records (TP206, ``api`` = the library), with its uses and NPU route. Calls and uses give the
original line and, where conversion moved it, the line in the converted file (in a notebook: the
cell and the line in it).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

from ..filetypes import FileResult
from ..records import CODES, Record

OPERATOR_HEADER = ["File", "Operator", "Registration line", "Calls found"]
LIBRARY_HEADER = ["Library", "Uses", "Where", "NPU route"]


def _place(res: FileResult, r: Record) -> str:
    cell = re.match(r"cell (\d+): ", r.message) if res.kind == "notebook" else None
    if cell is not None:  # a notebook's lines count per cell
        return f"{res.path} cell {cell.group(1)}:{r.line}"
    moved = res.new_lines.get(r.line, r.line)
    return f"{res.path}:{r.line}" + (f" (converted: {moved})" if moved != r.line else "")


def operator_rows(results: Iterable[FileResult]) -> list[list[object]]:
    results = list(results)
    calls: dict[str, list[str]] = defaultdict(list)
    for res in results:
        if res.kind != "cpp":
            for r in res.findings:
                if r.code == CODES["custom_op"]:
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
    uses: dict[str, list[str]] = defaultdict(list)
    routes: dict[str, list[str]] = defaultdict(list)
    for res in results:
        for r in res.findings:
            if r.code == CODES["library"]:
                uses[r.api].append(_place(res, r))
                if r.suggestion and r.suggestion not in routes[r.api]:
                    routes[r.api].append(r.suggestion)
    return [[lib, len(uses[lib]), ", ".join(uses[lib]), "; ".join(routes[lib])] for lib in sorted(uses)]
