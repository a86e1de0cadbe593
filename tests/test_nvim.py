"""`transplant lsp` under a real editor: Neovim, headless, configured with the snippet docs/editors.md gives for
Neovim 0.7 to 0.9 (the one Debian 12's neovim 0.7.2 runs), taken from that page itself. The findings
it shows must be those of `transplant --check`, and its whole-file code action must write what
`transplant -` writes. Skipped when nvim is not installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
REPO = Path(__file__).resolve().parents[1]
NVIM = shutil.which("nvim")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(NVIM is None, reason="nvim is not installed")]

SOURCE = """import torch
from torch.cuda.amp import autocast

model = torch.nn.Linear(4, 4).cuda()
with autocast():
    y = model(torch.randn(2, 4, device="cuda:0"))
torch.cuda.synchronize()
if torch.cuda.nccl.is_available([y]):
    print("nccl")
"""

# After the configuration: wait for the findings, save them, run the whole-file action, save the
# buffer and quit. Positions are 0-based, as the protocol has them.
DRIVER = r"""
local buf = vim.api.nvim_get_current_buf()
local got = vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
local found = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local lsp = d.user_data and d.user_data.lsp or {}
  table.insert(found, { line = d.lnum, col = d.col, code = lsp.code or d.code, message = d.message })
end
local params = { textDocument = vim.lsp.util.make_text_document_params(buf),
                 range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } },
                 context = { only = { "source.fixAll.transplant" }, diagnostics = {} } }
local answers = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 60000) or {}
local applied = 0
for _, answer in pairs(answers) do
  for _, action in ipairs(answer.result or {}) do
    if action.edit then
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
      applied = applied + 1
    end
  end
end
vim.cmd("write")
local out = io.open(vim.env.TRANSPLANT_NVIM_OUT, "w")
out:write(vim.fn.json_encode({ waited = got, diagnostics = found, applied = applied }))
out:close()
vim.cmd("qa!")
"""


def readme_config() -> str:
    """The Lua block docs/editors.md gives for Neovim 0.7 to 0.9."""
    text = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    start = text.index("*Neovim* 0.7 to 0.9")
    block = re.search(r"```lua\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None
    return block.group(1)


def test_neovim_shows_the_findings_and_converts_the_file(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.transplant]\n")
    source = project / "train.py"
    source.write_text(SOURCE)
    (tmp_path / "init.lua").write_text(readme_config())
    (tmp_path / "driver.lua").write_text(DRIVER)
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "TRANSPLANT_NVIM_OUT": str(out),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    proc = subprocess.run(
        [
            NVIM,
            "--headless",
            "-n",
            "-i",
            "NONE",
            "-u",
            str(tmp_path / "init.lua"),
            str(source),
            "-c",
            f"luafile {tmp_path / 'driver.lua'}",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim did not finish: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(out.read_text())
    assert result["waited"] and result["applied"] == 1

    check = subprocess.run(
        [sys.executable, "-m", "transplant", "--check", "--format", "json", "-"],
        input=SOURCE,
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
    )
    expected = sorted((d["line"] - 1, d["column"] - 1, d["code"]) for d in json.loads(check.stdout))
    shown = sorted((d["line"], d["col"], d["code"]) for d in result["diagnostics"])
    assert shown == expected
    assert any(code == "TP201" for _, _, code in shown) and any(code == "TP101" for _, _, code in shown)

    converted = subprocess.run(
        [sys.executable, "-m", "transplant", "-"], input=SOURCE, capture_output=True, text=True, cwd=project, env=env
    ).stdout
    assert source.read_text() == converted != SOURCE
