"""The language server (pygls): open documents, their diagnostics and their code actions.

Owns: the protocol side only — document events, debouncing, settings per project, turning an
:class:`~transplant.lsp.analysis.Analysis` into LSP diagnostics and workspace edits. What a
finding is and how text converts is decided by the file-mode machinery (via analysis.py), so the
editor shows exactly what ``transplant --check`` prints. Rules and libcst stay loaded for the
life of the process. Nothing here may end the server: errors become messages or diagnostics.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from typing import Sequence

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..config import RuleOptions
from ..project import NO_FACTS
from ..roots import with_project_fact
from ..rules import RuleError, RuleSet
from ..session import Session, load_rules
from ..settings import find_pyproject, options_for, read_table
from .analysis import Analysis, Finding, analyse, uri_path
from .cells import Cell, analyse_cells
from .textedits import Edit, LineIndex

# a burst of keystrokes refreshes once, this long after the last one; an edit that comes after a
# pause at least this long (a lone change, the first key of a burst) refreshes SETTLE_SECONDS
# after it: changes a client sends together (an editor's multi-cursor edit, a paste) are taken together
DEBOUNCE_SECONDS = 0.15
SETTLE_SECONDS = 0.05
FIX_ALL = "source.fixAll.transplant"
SEVERITY = {
    "fix": lsp.DiagnosticSeverity.Warning,
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "note": lsp.DiagnosticSeverity.Information,
}
log = logging.getLogger(__name__)


class TransplantServer(LanguageServer):
    def __init__(self) -> None:
        cells = [lsp.NotebookCellLanguage(language="python")]
        sync = lsp.NotebookDocumentSyncOptions(
            notebook_selector=[lsp.NotebookDocumentFilterWithCells(cells=cells, notebook="*")]
        )
        super().__init__("transplant", __version__, notebook_document_sync=sync)
        self.shapes: dict[str, tuple[str, ...]] = {}  # notebook uri -> its cells' uris, as last published
        self.analyses: dict[str, tuple[int | None, Analysis]] = {}  # uri -> (version, analysis)
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.edited: dict[str, float] = {}  # uri -> the event loop's time of its last edit (schedule)
        self.settings: dict[str, tuple[float, RuleOptions]] = {}  # pyproject path -> (mtime, options)
        self.reported: set[str] = set()  # settings errors already shown (each once)
        self.rulesets: dict[RuleOptions, RuleSet] = {}  # read once, again after a rule file is saved

    # ------------------------------------------------------------------ settings

    def options_for(self, uri: str) -> RuleOptions:
        """The [tool.transplant] options of the document's project; built-in rules (and one
        message) when the table or a rule file is bad."""
        path = uri_path(uri)
        start = os.path.dirname(path) if uri.startswith("file:") else (self.workspace.root_path or os.getcwd())
        pyproject = find_pyproject(start) if start and os.path.isdir(start) else None
        if pyproject is None:
            return self._checked(RuleOptions(), "")
        key = str(pyproject)
        try:
            mtime = pyproject.stat().st_mtime
        except OSError:
            mtime = -1.0
        cached = self.settings.get(key)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            options = options_for(read_table(pyproject))
        except RuleError as exc:
            self._tell(str(exc))
            options = RuleOptions()
        options = self._checked(options, key)
        self.settings[key] = (mtime, options)
        return options

    def _checked(self, options: RuleOptions, where: str) -> RuleOptions:
        try:
            self.rules(options)  # loads (once) and validates user rule files
            return options
        except RuleError as exc:
            self._tell(f"{where + ': ' if where else ''}{exc}; using the built-in rules")
            self.rules(RuleOptions())
            return RuleOptions()

    def rules(self, options: RuleOptions) -> RuleSet:
        rules = self.rulesets.get(options)
        if rules is None:
            rules = self.rulesets[options] = load_rules(options)
        return rules

    def session_for(self, uri: str) -> Session:
        """What the document is converted with: its project's rules, and the project-wide fact that
        its project already runs on NPU (roots.py: found once per project root)."""
        facts = with_project_fact(NO_FACTS, uri_path(uri)) if uri.startswith("file:") else NO_FACTS
        return Session(self.rules(self.options_for(uri)), facts)

    def _tell(self, message: str) -> None:
        if message in self.reported:
            return
        self.reported.add(message)
        self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, f"transplant: {message}"))

    # ------------------------------------------------------------------ analysis

    def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the document (or notebook cell) as it is now, recomputed when it changed."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            return self.cell_analyses(notebook).get(uri)
        try:
            document = self.workspace.get_text_document(uri)
        except Exception:
            return None
        cached = self.analyses.get(uri)
        if cached is not None and cached[0] == document.version and cached[1].text == document.source:
            return cached[1]
        result = analyse(uri, document.source, self.session_for(uri), language_id=document.language_id)
        self.analyses[uri] = (document.version, result)
        return result

    def cell_analyses(self, notebook: lsp.NotebookDocument) -> dict[str, Analysis]:
        """The analyses of a synced notebook's code cells, converted together (see cells.py)."""
        cells = []
        for cell in notebook.cells:
            document = self.workspace.get_text_document(cell.document)
            code = cell.kind == lsp.NotebookCellKind.Code and (document.language_id or "python") == "python"
            cells.append(Cell(cell.document, document.source, code))
        shape = tuple(c.uri for c in cells)
        cached = [self.analyses.get(c.uri) for c in cells if c.code]
        if self.shapes.get(notebook.uri) == shape and all(
            hit is not None and hit[1].text == c.text for hit, c in zip(cached, [c for c in cells if c.code])
        ):
            return {c.uri: self.analyses[c.uri][1] for c in cells if c.code}
        results = analyse_cells(uri_path(notebook.uri), cells, self.session_for(notebook.uri))
        for cell_uri, result in results.items():
            self.analyses[cell_uri] = (self.workspace.get_text_document(cell_uri).version, result)
        return results

    def refresh_notebook(self, notebook_uri: str) -> None:
        self.pending.pop(notebook_uri, None)
        notebook = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return
        results = self._safely(notebook_uri, lambda: self.cell_analyses(notebook))
        if results is None:
            return
        before = self.shapes.get(notebook_uri, ())
        self.shapes[notebook_uri] = tuple(c.document for c in notebook.cells)
        for uri in before:
            if uri not in results:  # a cell deleted, or no longer code
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))
        for uri, result in results.items():
            diagnostics = [self.diagnostic(result, f) for f in result.findings]
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, diagnostics))

    def _safely(self, uri: str, compute):
        """compute(), or None and a message when it fails: a bug of ours never ends the server."""
        try:
            return compute()
        except Exception as exc:
            log.exception("transplant: analysis failed")
            self._tell(f"{uri_path(uri)}: internal error: {type(exc).__name__}: {exc}")
            return None

    def refresh(self, uri: str) -> None:
        self.pending.pop(uri, None)
        result = self._safely(uri, lambda: self.analysis(uri))
        if result is None:
            return
        version = self.analyses[uri][0]
        diagnostics = [self.diagnostic(result, f) for f in result.findings]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, diagnostics, version))

    def schedule(self, uri: str, notebook: bool = False) -> None:
        """Refresh ``uri`` after an edit: SETTLE_SECONDS after it when the edit before it is
        DEBOUNCE_SECONDS old or more (a longer wait would only delay the answer), else
        DEBOUNCE_SECONDS after this one, and once for a burst (an edit while a refresh waits puts it
        off again)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        last = self.edited.get(uri)
        self.edited[uri] = now
        burst = handle is not None or (last is not None and now - last < DEBOUNCE_SECONDS)
        action = self.refresh_notebook if notebook else self.refresh
        self.pending[uri] = loop.call_later(DEBOUNCE_SECONDS if burst else SETTLE_SECONDS, action, uri)

    def forget(self, uri: str) -> None:
        self.edited.pop(uri, None)
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self.analyses.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))

    # ------------------------------------------------------------------ conversions to LSP

    def units(self, text: str) -> int:
        """Length of ``text`` in the position units agreed with the client (UTF-16 by default)."""
        try:
            encoding = self.workspace.position_encoding
        except RuntimeError:  # not initialised (benchmarks drive the server in-process)
            encoding = lsp.PositionEncodingKind.Utf16
        if encoding == lsp.PositionEncodingKind.Utf8:
            return len(text.encode("utf-8", "surrogatepass"))
        if encoding == lsp.PositionEncodingKind.Utf32:
            return len(text)
        return len(text.encode("utf-16-le", "surrogatepass")) // 2

    def position(self, index: LineIndex, line: int, column: int) -> lsp.Position:
        if line >= len(index.starts):
            return lsp.Position(len(index.starts) - 1, self.units(index.line_text(len(index.starts) - 1)))
        return lsp.Position(line, self.units(index.line_text(line)[:column]))

    def range(self, index: LineIndex, span: tuple[int, int, int, int]) -> lsp.Range:
        return lsp.Range(self.position(index, span[0], span[1]), self.position(index, span[2], span[3]))

    def diagnostic(self, result: Analysis, finding: Finding) -> lsp.Diagnostic:
        d = finding.diagnostic
        return lsp.Diagnostic(
            range=self.range(result.index, finding.span),
            message=d.text_message(),
            severity=SEVERITY[d.level],
            code=d.code,
            source="transplant",
            data={"level": d.level, "rule": d.rule, "old": d.old, "new": d.new, "suggestion": d.suggestion},
        )

    def text_edits(self, result: Analysis, edits: list[Edit]) -> list[lsp.TextEdit]:
        index = result.index
        return [
            lsp.TextEdit(self.range(index, index.position(e.start) + index.position(e.end)), e.text)
            for e in sorted(set(edits), key=lambda e: (e.start, e.end))
        ]

    def workspace_edit(self, uri: str, result: Analysis, edits: list[Edit]) -> lsp.WorkspaceEdit:
        return self.multi_edit([(uri, result, edits)])

    def multi_edit(self, parts: list[tuple[str, Analysis, list[Edit]]]) -> lsp.WorkspaceEdit:
        """One workspace edit of several documents (the cells of a notebook), each versioned when
        the client accepts versioned edits."""
        parts = [(uri, result, edits) for uri, result, edits in parts if edits]
        caps = self.client_capabilities.workspace
        if caps and caps.workspace_edit and caps.workspace_edit.document_changes:
            return lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        lsp.OptionalVersionedTextDocumentIdentifier(uri, self.analyses[uri][0]),
                        self.text_edits(result, edits),
                    )
                    for uri, result, edits in parts
                ]
            )
        return lsp.WorkspaceEdit(changes={uri: self.text_edits(result, edits) for uri, result, edits in parts})


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


def code_actions(server: TransplantServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    result = server.analysis(uri)
    in_notebook = server.workspace.get_notebook_document(cell_uri=uri) is not None
    if result is None or not (result.converted or in_notebook):  # a cell: the others may convert
        return []
    only = params.context.only
    whole = result.edits  # computed now (and tied to the findings), not on every keystroke
    actions: list[lsp.CodeAction] = []
    index = result.index
    start, end = params.range.start, params.range.end
    changes = [f for f in result.findings if f.diagnostic.is_change and f.edits]
    if _wanted(lsp.CodeActionKind.QuickFix, only):
        by_code: dict[str, list[Finding]] = {}
        for finding in changes:
            by_code.setdefault(finding.diagnostic.code, []).append(finding)
            where = server.range(index, finding.span)
            if (where.start.line, where.start.character) > (end.line, end.character) or (
                where.end.line,
                where.end.character,
            ) < (start.line, start.character):
                continue
            actions.append(
                lsp.CodeAction(
                    title=f"transplant: {' '.join(finding.diagnostic.message.split())}",
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[server.diagnostic(result, finding)],
                    is_preferred=True,
                    edit=server.workspace_edit(uri, result, finding.edits),
                )
            )
        touched = {a.diagnostics[0].code for a in actions if a.diagnostics}
        for code, findings in sorted(by_code.items()):
            if code in touched and len(findings) > 1:
                edits = [e for f in findings for e in f.edits]
                actions.append(
                    lsp.CodeAction(
                        title=f"transplant: convert every {code} in this file ({len(findings)})",
                        kind=lsp.CodeActionKind.QuickFix,
                        edit=server.workspace_edit(uri, result, edits),
                    )
                )
    if _wanted(FIX_ALL, only):
        notebook = server.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:  # every cell of the notebook
            parts = [(u, a, a.edits) for u, a in server.cell_analyses(notebook).items()]
            count = sum(1 for _u, a, _e in parts for f in a.findings if f.diagnostic.is_change)
            title, edit = f"transplant: convert the whole notebook for NPU ({count} changes)", server.multi_edit(parts)
            any_edit = any(edits for _u, _a, edits in parts)
        else:
            title = f"transplant: convert the whole file for NPU ({len(changes)} changes)"
            edit = server.workspace_edit(uri, result, whole)
            any_edit = bool(whole)
        if any_edit:
            actions.append(lsp.CodeAction(title=title, kind=FIX_ALL, edit=edit))
    return actions


def build_server() -> TransplantServer:
    server = TransplantServer()

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: TransplantServer, params: lsp.InitializedParams) -> None:
        # load the rules and libcst now, once, rather than on the first keystroke in a file
        root = ls.workspace.root_uri
        probe = root.rstrip("/") + "/_" if root else ""  # a file in the root: its pyproject.toml
        ls._safely(probe, lambda: ls.options_for(probe))
        ls._safely(probe, lambda: importlib.import_module("transplant.engine"))

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TransplantServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TransplantServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TransplantServer, params: lsp.DidSaveTextDocumentParams) -> None:
        path = uri_path(params.text_document.uri)
        if path.endswith((".json", "pyproject.toml")):  # a rule file or the settings: read them again
            ls.rulesets.clear()
            ls.settings.clear()
            ls.reported.clear()
            for uri in list(ls.analyses):
                ls.analyses.pop(uri, None)
                ls.refresh(uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TransplantServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        ls.refresh_notebook(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TransplantServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, notebook=True)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TransplantServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        ls.shapes.pop(params.notebook_document.uri, None)
        for cell in params.cell_text_documents:
            ls.forget(cell.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TransplantServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL])
    )
    def code_action(ls: TransplantServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        try:
            return code_actions(ls, params)
        except Exception as exc:  # never a dead server
            log.exception("transplant: code actions failed")
            ls._tell(f"code actions failed: {type(exc).__name__}: {exc}")
            return []

    return server
