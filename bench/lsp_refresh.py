"""How long the language server takes to refresh the diagnostics of a 1,000-line CUDA file.

Two figures:
  in-process  the work of one refresh (convert the buffer, place the diagnostics, build the LSP
              objects), timed in this process after a warm-up, in wall and CPU time (the CPU time
              is less disturbed by a busy machine); "+ edits" is what the first code action
              request on that text adds (diff the conversion into small edits);
  over stdio  a real client types one character into an open document, after a pause as long as
              the server's debounce (DEBOUNCE_SECONDS), and waits for the publishDiagnostics that
              follows: everything the user waits for, the debounce included (the server refreshes
              at once after such a pause, and DEBOUNCE_SECONDS after the last key of a burst).

Usage: python bench/lsp_refresh.py [--lines 1000] [--repeat 20]
Needs the lsp extra (pygls, lsprotocol).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import python_file  # noqa: E402

from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from transplant.config import RuleOptions  # noqa: E402
from transplant.lsp.analysis import analyse  # noqa: E402
from transplant.lsp.server import DEBOUNCE_SECONDS, TransplantServer  # noqa: E402
from transplant.session import Session, load_rules  # noqa: E402


def in_process(text: str, repeat: int) -> tuple[list[float], list[float], list[float], int]:
    server = TransplantServer()
    uri = "file:///bench/train.py"
    session = Session(load_rules(RuleOptions()))  # the rules, loaded once as in the server
    analyse(uri, text, session)  # warm-up: libcst loaded once, as in the server
    times, actions, cpu = [], [], []
    for i in range(repeat):
        edited = text + f"# edit {i}\n"
        start, start_cpu = time.perf_counter(), time.process_time()
        result = analyse(uri, edited, session)
        diagnostics = [server.diagnostic(result, f) for f in result.findings]
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        start = time.perf_counter()
        server.text_edits(result, result.edits)  # what the first code action request adds
        actions.append(time.perf_counter() - start)
    return times, actions, cpu, len(diagnostics)


async def over_stdio(text: str, repeat: int) -> list[float]:
    client = LanguageClient("bench", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        published.put_nowait((time.perf_counter(), params))

    await client.start_io(sys.executable, "-m", "transplant", "lsp")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.py"
        path.write_text(text)
        uri = path.as_uri()
        await client.initialize_async(
            lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=Path(tmp).as_uri())
        )
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, text)))
        await published.get()
        times = []
        lines = text.count("\n")
        for version in range(2, repeat + 2):
            change = lsp.TextDocumentContentChangePartial(
                range=lsp.Range(lsp.Position(lines, 0), lsp.Position(lines, 0)), text="#"
            )
            await asyncio.sleep(DEBOUNCE_SECONDS)  # the pause before a change
            start = time.perf_counter()
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(lsp.VersionedTextDocumentIdentifier(version=version, uri=uri), [change])
            )
            arrived, params = await published.get()
            while params.version != version:  # a late publication of an earlier version: not this change's
                arrived, params = await published.get()
            times.append(arrived - start)
        await client.shutdown_async(None)
        client.exit(None)
    await client.stop()
    return times


def report(name: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    print(
        f"{name:12s} median {statistics.median(ms):6.1f} ms   min {ms[0]:6.1f} ms   max {ms[-1]:6.1f} ms"
        f"   ({len(ms)} refreshes)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    text = python_file(random.Random(0), "cuda", lines=args.lines)
    print(f"file: {text.count(chr(10))} lines, {len(text)} characters (bench/synth.py, cuda flavour)")
    times, actions, cpu, findings = in_process(text, args.repeat)
    print(f"diagnostics per refresh: {findings}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    report("in-process", times)
    report("  its CPU", cpu)
    report("+ edits", actions)
    report("over stdio", asyncio.run(over_stdio(text, args.repeat)))


if __name__ == "__main__":
    main()
