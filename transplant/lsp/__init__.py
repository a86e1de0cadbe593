"""``transplant lsp``: the language server for editors (stdio), an optional extra.

Owns the entry point only: checks that pygls is installed (``pip install "transplant-npu[lsp]"``),
then starts :mod:`transplant.lsp.server`. The converter itself never imports this package.
"""

from __future__ import annotations

import sys

USAGE = """\
usage: transplant lsp [--stdio]

The language server for editors: speaks LSP on stdin/stdout (the editor starts it). It reports what
'transplant --check' reports, for Python files, shell scripts and notebooks, as you type, and offers
quick fixes and the whole conversion of a file (source.fixAll.transplant) as code actions. Settings
come from [tool.transplant] of the nearest pyproject.toml above each file. Needs the lsp extra:
pip install "transplant-npu[lsp]".

options:
  --stdio     accepted for editors that pass it (stdin/stdout is the only transport)
  -h, --help  show this help and exit"""


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--stdio"]  # clients often pass --stdio; stdio is the only transport
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args:
        print(
            f"transplant: error: lsp takes no arguments but {' '.join(args)} (see 'transplant lsp --help')",
            file=sys.stderr,
        )
        return 2
    try:
        from .server import build_server
    except ImportError as exc:
        print(
            f"transplant: error: the language server needs pygls ({exc.name or exc} is missing); "
            'install it with: pip install "transplant-npu[lsp]"',
            file=sys.stderr,
        )
        return 2
    from ..stopping import exit_at_once_on_signals

    exit_at_once_on_signals()  # the server keeps nothing to save: a stop signal ends it there and then
    build_server().start_io()  # returns when the client asks the server to exit
    return 0
