"""Notebooks an editor syncs cell by cell (LSP ``notebookDocument/*``, VS Code's notebook editor).

Owns: converting the cells of such a notebook as one program, as the command line converts a
``.ipynb`` (cells share one namespace: ``import torch`` in cell 1 binds ``torch`` in cell 5), and
splitting the result back into one :class:`~transplant.lsp.analysis.Analysis` per cell document,
with the findings at their places in the cell and the cell's own converted text. The conversion
itself is the file modes' (filetypes.convert_named on a notebook); no pygls here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..session import Session
from ..reports.diagnostics import Diagnostic
from ..filetypes import convert_named
from ..records import internal_error, not_converted_record
from .analysis import Analysis, Finding, python_span


@dataclass
class Cell:
    uri: str  # the cell's own text document
    text: str
    code: bool  # a code cell (else markdown)


def _notebook(cells: list[Cell]) -> bytes:
    out: list[dict[str, Any]] = []
    for cell in cells:
        if cell.code:
            out.append(
                {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell.text}
            )
        else:
            out.append({"cell_type": "markdown", "metadata": {}, "source": cell.text})
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode("utf-8")


def analyse_cells(display: str, cells: list[Cell], session: Session) -> dict[str, Analysis]:
    """An Analysis for each code cell, keyed by the cell's URI."""
    analyses = {c.uri: Analysis(c.text, "python") for c in cells if c.code}
    if not analyses:
        return analyses
    try:
        result, _ = convert_named(session, _notebook(cells), "notebook")
        records = result.records
    except Exception as exc:  # a bug of ours must not stop the server: report it on the first cell
        result, records = None, [not_converted_record(internal_error(exc))]
    first = next(iter(analyses))
    for record in records:
        number = record.cell
        uri = cells[number - 1].uri if 0 < number <= len(cells) else first
        target = analyses.get(uri, analyses[first])
        d = Diagnostic.from_record(display, record)
        target.findings.append(Finding(d, python_span(d, target.index)))
    if result is not None and result.new is not None and not result.error:
        new_cells = json.loads(result.new.decode("utf-8"))["cells"]
        for cell, new in zip(cells, new_cells):
            source = new.get("source", "")
            text = "".join(source) if isinstance(source, list) else source
            if cell.code and text != cell.text:
                analyses[cell.uri].new_text = text
    return analyses
