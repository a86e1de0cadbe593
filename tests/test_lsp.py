"""The language server (`transplant lsp`) driven by a real LSP client (pytest-lsp) over stdio.

The diagnostics must be those `transplant --check --format json` reports for the same text; the
code actions' edits, applied, must give what `transplant -` (stdin) gives. Skipped when the lsp
extra (pygls, pytest-lsp) is not installed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
pytest.importorskip("pytest_asyncio")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from transplant.lsp.textedits import Edit, LineIndex, apply_edits  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CUDA = """import torch
model = torch.nn.Linear(4, 4).cuda()
x = torch.randn(2, 4, device="cuda")  # a comment that stays
torch.cuda.synchronize()
y = torch.cuda.memory_snapshot()
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "transplant", "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(root.as_uri(), "workspace")],
        )
    )
    yield
    await lsp_client.shutdown_session()


WAIT = 120  # seconds: a notification that never comes fails the test instead of hanging the run


async def published(client: LanguageClient) -> None:
    """The next publishDiagnostics notification."""
    await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), WAIT)


async def until(condition, seconds: float = WAIT) -> None:
    """Wait until ``condition()`` holds (the client records notifications as they arrive)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not condition():
        assert loop.time() < end, "the server did not publish what was expected in time"
        await asyncio.sleep(0.02)


def cli(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transplant", *args], input=stdin.encode(), capture_output=True, cwd=REPO, timeout=120
    )


def check_json(path: Path, text: str) -> list[dict]:
    out = cli("--check", "--format", "json", "--stdin-filename", str(path), "-", stdin=text)
    return json.loads(out.stdout)


async def open_and_wait(client: LanguageClient, path: Path, text: str, language: str = "python") -> list:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(path.as_uri(), language, 1, text)))
    await published(client)
    return list(client.diagnostics[path.as_uri()])


def apply(text: str, edit: lsp.WorkspaceEdit, uri: str) -> str:
    """Apply a workspace edit's text edits (UTF-16 positions) to ``text``."""
    if edit.document_changes:
        edits = [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    else:
        edits = edit.changes[uri]
    index = LineIndex(text)

    def offset(p: lsp.Position) -> int:
        line = index.line_text(p.line)
        units, column = 0, 0
        while units < p.character:
            units += len(line[column].encode("utf-16-le")) // 2
            column += 1
        return index.offset(p.line, column)

    ordered = sorted((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits)
    return apply_edits(text, [Edit(*e) for e in ordered])


def _as_check(d: lsp.Diagnostic) -> tuple:
    return (d.range.start.line + 1, d.range.start.character + 1, d.code, d.message)


def _expected(entry: dict) -> tuple:
    message = " ".join(entry["message"].split())
    if entry["suggestion"]:
        message += f" (suggestion: {' '.join(entry['suggestion'].split())})"
    return (entry["line"], entry["column"], entry["code"], message)


@pytest.mark.asyncio
async def test_open_reports_what_check_reports(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    diagnostics = await open_and_wait(client, path, CUDA)
    expected = check_json(path, CUDA)
    assert sorted(map(_as_check, diagnostics)) == sorted(map(_expected, expected))
    levels = {d.code: d.severity for d in diagnostics}
    assert levels["TP101"] == lsp.DiagnosticSeverity.Warning  # a change to make
    assert any(d.severity == lsp.DiagnosticSeverity.Error for d in diagnostics) == any(
        e["level"] == "error" for e in expected
    )
    assert all(d.source == "transplant" for d in diagnostics)


@pytest.mark.asyncio
async def test_change_refreshes_and_close_clears(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "step.py"
    uri = path.as_uri()
    first = await open_and_wait(client, path, "import torch\nx = 1\n")
    assert first == []
    # three quick edits (debounced): only the last text counts
    for version, text in enumerate(
        ["import torch\nx = 1.", "import torch\nx = 1.c", "import torch\nx = torch.ones(1).cuda()\n"], start=2
    ):
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
    await published(client)
    assert sorted(d.code for d in client.diagnostics[uri]) == ["TP102", "TP106"]
    # an incremental change: rename .cuda() to .npu() by hand; the finding goes away
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=9, uri=uri),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(1, 18), lsp.Position(1, 22)), text="npu"
                )
            ],
        )
    )
    await published(client)
    text = "import torch\nx = torch.ones(1).npu()\n"
    assert list(client.diagnostics[uri]) == [] == check_json(path, text)  # nothing CUDA left: no import needed
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    await published(client)
    assert list(client.diagnostics[uri]) == []


async def actions(client: LanguageClient, uri: str, rng: lsp.Range, only=None) -> list[lsp.CodeAction]:
    return list(
        await client.text_document_code_action_async(
            lsp.CodeActionParams(lsp.TextDocumentIdentifier(uri), rng, lsp.CodeActionContext(diagnostics=[], only=only))
        )
        or ()
    )


@pytest.mark.asyncio
async def test_fix_all_gives_the_command_line_conversion(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    text = CUDA.replace("# a comment", "# ünïcode 😀 comment")  # UTF-16 positions after astral characters
    await open_and_wait(client, path, text)
    found = await actions(
        client, path.as_uri(), lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), only=["source.fixAll"]
    )
    assert [a.kind for a in found] == ["source.fixAll.transplant"]
    converted = apply(text, found[0].edit, path.as_uri())
    assert converted == cli("-", "--stdin-filename", str(path), stdin=text).stdout.decode()
    # only changed ranges: no edit spans a whole unchanged line
    edits = found[0].edit.document_changes[0].edits
    assert all(len(e.new_text) < 20 for e in edits) and len(edits) >= 4
    # idempotent: the converted text has nothing left to convert
    again = await open_and_wait(client, tmp_path / "again.py", converted)
    assert [d.code for d in again if d.severity == lsp.DiagnosticSeverity.Warning and d.code.startswith("TP1")] == []


@pytest.mark.asyncio
async def test_quickfix_converts_one_change(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    await open_and_wait(client, path, CUDA)
    line = 2  # x = torch.randn(2, 4, device="cuda")
    found = await actions(client, path.as_uri(), lsp.Range(lsp.Position(line, 30), lsp.Position(line, 30)))
    fixes = [a for a in found if a.kind == lsp.CodeActionKind.QuickFix]
    assert [a.diagnostics[0].code for a in fixes if a.diagnostics] == ["TP104"]
    result = apply(CUDA, fixes[0].edit, path.as_uri())
    assert result == CUDA.replace('device="cuda"', 'device="npu"')
    # the import is its own quick fix, inserted after `import torch`
    found = await actions(client, path.as_uri(), lsp.Range(lsp.Position(0, 0), lsp.Position(0, 3)))
    add = [a for a in found if a.diagnostics and a.diagnostics[0].code == "TP106"]
    assert apply(CUDA, add[0].edit, path.as_uri()).startswith("import torch\nimport torch_npu\nmodel")


@pytest.mark.asyncio
async def test_bad_input_keeps_the_server_alive(client: LanguageClient, tmp_path: Path):
    broken = tmp_path / "broken.py"
    diagnostics = await open_and_wait(client, broken, "import torch\nx = torch.cuda(\n")
    assert [(d.code, d.severity) for d in diagnostics] == [("TP900", lsp.DiagnosticSeverity.Error)]
    assert await actions(client, broken.as_uri(), lsp.Range(lsp.Position(0, 0), lsp.Position(2, 0))) == []
    # a project whose [tool.transplant] names a rule file that is not valid: a message, built-in rules
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.transplant]\nrules = ["bad.json"]\n')
    (project / "bad.json").write_text("{not json")
    diagnostics = await open_and_wait(client, project / "a.py", CUDA)
    assert "TP101" in {d.code for d in diagnostics}
    assert any("bad.json" in m.message and m.type == lsp.MessageType.Error for m in client.messages)
    # still answering
    diagnostics = await open_and_wait(client, tmp_path / "ok.py", "import torch\nx.cuda()\n")
    assert {d.code for d in diagnostics} == {"TP102", "TP106"}


@pytest.mark.asyncio
async def test_settings_come_from_tool_transplant(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.transplant]\nspecify_device = true\n")
    text = "import torch\nx = torch.ones(1).to('cuda:0')\n"
    path = project / "pkg" / "m.py"
    diagnostics = await open_and_wait(client, path, text)
    plain = check_json(tmp_path / "m.py", text)
    with_s = json.loads(cli("--check", "--format", "json", "-s", "-", stdin=text).stdout)
    assert plain != with_s  # -s changes this text's conversion
    assert sorted(map(_as_check, diagnostics)) == sorted(map(_expected, with_s))


@pytest.mark.asyncio
async def test_the_release_comes_from_tool_transplant(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.transplant]\ntorch_npu = "26.2"\n')
    text = 'import os\nos.environ["TORCH_NCCL_DESYNC_DEBUG"] = "1"\n'
    diagnostics = await open_and_wait(client, project / "m.py", text)
    assert any("TORCH_HCCL_DESYNC_DEBUG" in d.message for d in diagnostics), diagnostics
    elsewhere = await open_and_wait(client, tmp_path / "m.py", text)  # no table: torch_npu 26.1
    assert any("-> HCCL_DESYNC_DEBUG" in d.message for d in elsewhere), elsewhere


@pytest.mark.asyncio
async def test_shell_scripts_and_notebooks(client: LanguageClient, tmp_path: Path):
    script = tmp_path / "run.sh"
    diagnostics = await open_and_wait(client, script, "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\n", "shellscript")
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == [("TP105", 1, 7)]
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": ["import torch\n", 'x = torch.ones(1, device="cuda")'],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(nb, indent=1) + "\n"
    path = tmp_path / "nb.ipynb"
    diagnostics = await open_and_wait(client, path, text, "json")
    lines = text.splitlines()
    device = [d for d in diagnostics if d.code == "TP104"][0]
    assert device.message.startswith("cell 2: ")
    at = device.range
    assert lines[at.start.line][at.start.character : at.end.character] == '\\"cuda\\"'
    found = await actions(client, path.as_uri(), at)
    fixed = apply(text, [a for a in found if a.kind == "quickfix" and a.diagnostics][0].edit, path.as_uri())
    assert json.loads(fixed)["cells"][1]["source"][1] == 'x = torch.ones(1, device="npu")'
    whole = await actions(client, path.as_uri(), at, only=[FIX_ALL := "source.fixAll.transplant"])
    converted = apply(text, whole[0].edit, path.as_uri())
    assert converted == cli("-", "--stdin-filename", str(path), stdin=text).stdout.decode()
    assert FIX_ALL == whole[0].kind


@pytest.mark.asyncio
async def test_a_notebook_cell_sent_alone_is_python(client: LanguageClient, tmp_path: Path):
    """VS Code's notebook editor sends each cell as its own document (vscode-notebook-cell: URI)."""
    uri = f"vscode-notebook-cell:{tmp_path / 'nb.ipynb'}#W1sZmlsZQ%3D%3D"
    text = "import torch\nx = torch.ones(1).cuda()\n"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, text)))
    await published(client)
    expected = check_json(tmp_path / "cell.py", text)
    assert sorted(map(_as_check, client.diagnostics[uri])) == sorted(map(_expected, expected))


@pytest.mark.asyncio
async def test_saving_a_rule_file_takes_effect(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.transplant]\nrules = ["mine.json"]\n')
    rule_file = project / "mine.json"
    rule_file.write_text('{"rules": {}}')
    path = project / "m.py"
    text = "import torch\nimport mylib\nx = torch.ones(1).cuda()\ny = mylib.cuda_kernel()\n"
    before = await open_and_wait(client, path, text)
    assert "mylib.cuda_kernel" not in " ".join(d.message for d in before)
    rule_file.write_text(
        '{"rules": {"FuncNameModifyRule": [{"old_name": "mylib.cuda_kernel", "new_name": "mylib.npu_kernel"}]}}'
    )
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(rule_file.as_uri())))
    await published(client)
    after = list(client.diagnostics[path.as_uri()])
    assert any("mylib.cuda_kernel -> mylib.npu_kernel" in d.message for d in after)


@pytest.mark.asyncio
async def test_a_synced_notebook_converts_its_cells_together(client: LanguageClient, tmp_path: Path):
    """notebookDocument/* (VS Code's notebook editor): cells share one namespace, as in `--check`."""
    nb_uri = (tmp_path / "nb.ipynb").as_uri()
    texts = ["import torch\n", "# Title", 'torch.cuda.synchronize()\nx = torch.ones(1, device="cuda")']
    uris = [f"vscode-notebook-cell:{tmp_path / 'nb.ipynb'}#cell{i}" for i in range(3)]
    kinds = [lsp.NotebookCellKind.Code, lsp.NotebookCellKind.Markup, lsp.NotebookCellKind.Code]
    client.notebook_document_did_open(
        lsp.DidOpenNotebookDocumentParams(
            lsp.NotebookDocument(nb_uri, "jupyter-notebook", 1, [lsp.NotebookCell(k, u) for k, u in zip(kinds, uris)]),
            [
                lsp.TextDocumentItem(u, "python" if k == lsp.NotebookCellKind.Code else "markdown", 1, t)
                for u, k, t in zip(uris, kinds, texts)
            ],
        )
    )
    # two notifications, one per code cell: the second may arrive before a second wait would start
    await until(lambda: uris[0] in client.diagnostics and uris[2] in client.diagnostics)
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": texts[0]},
            {"cell_type": "markdown", "metadata": {}, "source": texts[1]},
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": texts[2]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    expected = check_json(tmp_path / "nb.ipynb", json.dumps(nb))
    got = {u: sorted(map(_as_check, client.diagnostics[u])) for u in (uris[0], uris[2])}
    want = {
        u: sorted(_expected(e) for e in expected if e["message"].startswith(f"cell {n}: "))
        for u, n in ((uris[0], 1), (uris[2], 3))
    }
    assert got == want and any("torch_npu.npu.synchronize" in d[3] for d in got[uris[2]])  # torch bound in cell 1
    # the whole notebook at once, from any cell
    found = await actions(
        client, uris[2], lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), only=["source.fixAll.transplant"]
    )
    edit = found[0].edit
    assert apply(texts[0], edit, uris[0]) == "import torch\nimport torch_npu\n"
    assert apply(texts[2], edit, uris[2]) == 'torch_npu.npu.synchronize()\nx = torch.ones(1, device="npu")'
    client.notebook_document_did_close(
        lsp.DidCloseNotebookDocumentParams(
            lsp.NotebookDocumentIdentifier(nb_uri), [lsp.TextDocumentIdentifier(u) for u in uris]
        )
    )
    await published(client)
