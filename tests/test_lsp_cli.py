"""`transplant lsp` on the command line, with or without the lsp extra installed."""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_without_pygls_one_line_and_exit_2():
    # sys.modules[name] = None makes "import name" fail, as when the extra is not installed
    out = run(
        "import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
        "from transplant.cli import main; raise SystemExit(main(['lsp']))"
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and 'pip install "transplant-npu[lsp]"' in out.stderr
    assert "Traceback" not in out.stderr


def test_usage():
    out = run("from transplant.cli import main; raise SystemExit(main(['lsp', '--help']))")
    assert out.returncode == 0 and "transplant lsp" in out.stdout
    out = run("from transplant.cli import main; raise SystemExit(main(['lsp', '--port', '1']))")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--port 1" in out.stderr


def test_the_converter_does_not_load_the_server():
    out = run(
        "import sys; from transplant.cli import main; main(['--check', '-'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'openpyxl')))"
    )
    assert out.stdout.strip().endswith("[]")
