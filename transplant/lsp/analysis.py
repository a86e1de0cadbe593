"""What the language server knows about one document: its findings and its conversion.

Owns: running the file-mode conversion (filetypes.convert_named, the same code ``--check`` runs)
on an editor buffer, placing each diagnostic on the buffer (in code points, 0-based; notebook
findings on the JSON string that holds the cell line), and splitting the conversion into small
edits tied to the diagnostics they carry out. No protocol types here (no pygls): the server
turns these into LSP objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import unquote, urlparse

from ..reports.diagnostics import Diagnostic
from ..filekinds import LANGUAGE_KINDS, detect_kind
from ..filetypes import FileResult, convert_named
from ..records import internal_error, not_converted_record
from ..session import Session
from .notebookpos import NotebookPositions
from .textedits import Edit, LineIndex, minimal_edits


Span = tuple[int, int, int, int]  # start line, start column, end line, end column (0-based, code points)


@dataclass
class Finding:
    diagnostic: Diagnostic  # as --check reports it
    span: Span  # where it is in the buffer
    edits: list[Edit] = field(default_factory=list)  # the part of the conversion that carries it out


@dataclass
class Analysis:
    text: str
    kind: str | None  # a name of filekinds.KINDS, None: not a file transplant converts
    findings: list[Finding] = field(default_factory=list)
    new_text: str | None = None  # the converted text, None when nothing changes

    @property
    def converted(self) -> bool:
        return self.new_text is not None

    @cached_property
    def index(self) -> LineIndex:
        return LineIndex(self.text)

    @cached_property
    def edits(self) -> list[Edit]:
        """The whole conversion as small edits, each change's own on its Finding. Computed when a
        code action asks, not on every keystroke."""
        if self.new_text is None:
            return []
        edits = minimal_edits(self.text, self.new_text)
        _attach(self, edits, self.index)
        return edits


def uri_path(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else unquote(parsed.path or uri)


def document_kind(uri: str, text: str, language_id: str | None = None) -> str | None:
    """The file kind (filekinds), from the file name, then the editor's language, then a ``#!`` line.
    A notebook cell sent on its own (VS Code's ``vscode-notebook-cell:`` documents) is the language
    of the cell, not a notebook."""
    if uri.startswith("vscode-notebook-cell:"):
        return LANGUAGE_KINDS.get((language_id or "python").lower())
    path = uri_path(uri)
    kind = detect_kind(path, b"")
    if kind is None and language_id:
        kind = LANGUAGE_KINDS.get(language_id.lower())
    if kind is None:
        kind = detect_kind(path, text[:256].encode("utf-8", "replace"))
    return kind


def analyse(
    uri: str, text: str, session: Session, *, language_id: str | None = None, kind: str | None = None
) -> Analysis:
    """Convert the buffer in memory and report what ``transplant --check`` would report for it."""
    kind = kind or document_kind(uri, text, language_id)
    analysis = Analysis(text, kind)
    if kind is None:
        return analysis
    data = text.encode("utf-8", "surrogatepass")
    result: FileResult | None
    try:
        # under its own name, a file on disk: guards find the modules of its project from there
        result, _ = convert_named(session, data, kind, uri_path(uri) if uri.startswith("file:") else "")
    except RecursionError:
        result = None
        records = [not_converted_record("source is nested too deeply to convert")]
    except Exception as exc:  # a bug of ours must not stop the server: report it on the file
        result = None
        records = [not_converted_record(internal_error(exc))]
    else:
        records = result.records
    display = uri_path(uri)
    index = analysis.index
    notebook = NotebookPositions(text) if kind == "notebook" else None
    for record in records:
        d = Diagnostic.from_record(display, record)
        analysis.findings.append(Finding(d, _span(d, index, notebook)))
    if result is not None and result.new is not None and not result.error:
        analysis.new_text = result.new.decode("utf-8", "surrogatepass")
    return analysis


def _span(d: Diagnostic, index: LineIndex, notebook: NotebookPositions | None) -> Span:
    """The buffer range of a diagnostic (records are 1-based; notebooks' are in the cell)."""
    if notebook is not None:
        if d.cell:
            start = notebook.offset(d.cell, d.line, d.column)
            end = notebook.offset(d.cell, d.end_line, d.end_column)
            if start is not None:
                end = end if end is not None and end >= start else start
                return index.position(start) + index.position(end)
        return (0, 0, 0, 0)
    return python_span(d, index)


def python_span(d: Diagnostic, index: LineIndex) -> Span:
    """The buffer range of a diagnostic of a Python file or shell script (records are 1-based)."""
    line, column = max(0, d.line - 1), max(0, d.column - 1)
    end_line, end_column = max(line, d.end_line - 1), max(0, d.end_column - 1)
    if (end_line, end_column) < (line, column):
        end_line, end_column = line, column
    start = index.offset(line, column)
    end = index.offset(end_line, end_column)
    return index.position(start) + index.position(max(start, end))


def _attach(analysis: Analysis, edits: list[Edit], index: LineIndex) -> None:
    """Give each change its edits: those its range overlaps; a change with none (an import added
    at the top, a line removed) takes the unclaimed edits whose text carries its own."""
    changes = [f for f in analysis.findings if f.diagnostic.is_change]
    claimed: set[int] = set()
    for n, edit in enumerate(edits):
        start, end = index.position(edit.start), index.position(edit.end)
        for finding in changes:
            s = finding.span
            if start <= (s[2], s[3]) and (s[0], s[1]) <= end and (s[0], s[1]) != (s[2], s[3]):
                finding.edits.append(edit)
                claimed.add(n)
    for finding in changes:
        if finding.edits:
            continue
        d = finding.diagnostic
        for n, edit in enumerate(edits):
            if n in claimed:
                continue
            removed = analysis.text[edit.start : edit.end]
            if (d.new and d.new in edit.text) or (d.old and not d.new and d.old in removed):
                finding.edits.append(edit)
                claimed.add(n)
