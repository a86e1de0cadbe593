"""The language server's debounce (server.schedule): an edit after a pause refreshes SETTLE_SECONDS
after it, the keys of a burst once, DEBOUNCE_SECONDS after the last. Checked on the event loop's own
schedule (the time each refresh is due), not on a clock."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from transplant.lsp.server import DEBOUNCE_SECONDS, SETTLE_SECONDS, TransplantServer  # noqa: E402

URI = "file:///w/train.py"


def _server(refreshed: list[str]) -> TransplantServer:
    server = TransplantServer()
    server.refresh = lambda uri: (server.pending.pop(uri, None), refreshed.append(uri))  # type: ignore[method-assign]
    server.refresh_notebook = lambda uri: refreshed.append("notebook " + uri)  # type: ignore[method-assign]
    return server


def test_a_first_edit_and_an_edit_after_a_pause_refresh_without_the_debounce():
    async def run():
        loop = asyncio.get_running_loop()
        refreshed: list[str] = []
        server = _server(refreshed)
        server.schedule(URI)  # the first edit of the file
        assert server.pending[URI].when() <= loop.time() + SETTLE_SECONDS < loop.time() + DEBOUNCE_SECONDS / 2
        await asyncio.sleep(2 * SETTLE_SECONDS)  # (the loop's clock is past the refresh then)
        assert refreshed == [URI]
        server.edited[URI] = loop.time() - 10 * DEBOUNCE_SECONDS  # the last edit is long past
        server.schedule(URI, notebook=True)
        assert server.pending[URI].when() <= loop.time() + SETTLE_SECONDS < loop.time() + DEBOUNCE_SECONDS / 2
        await asyncio.sleep(2 * SETTLE_SECONDS)  # (the loop's clock is past the refresh then)
        assert refreshed == [URI, "notebook " + URI]

    asyncio.run(run())


def test_a_burst_refreshes_once_after_its_last_edit():
    async def run():
        loop = asyncio.get_running_loop()
        refreshed: list[str] = []
        server = _server(refreshed)
        server.edited[URI] = loop.time() + 1000  # an edit "just now" (in the loop's future: never a pause)
        server.schedule(URI)
        first = server.pending[URI]
        assert first.when() >= loop.time() + DEBOUNCE_SECONDS / 2
        server.edited[URI] = loop.time() - 10 * DEBOUNCE_SECONDS  # even after a pause: a refresh still waits
        server.schedule(URI)
        assert first.cancelled()
        assert server.pending[URI].when() >= loop.time() + DEBOUNCE_SECONDS / 2
        server.forget(URI)  # the file closed: nothing left to refresh, no edit remembered
        assert URI not in server.pending and URI not in server.edited
        await asyncio.sleep(0)
        assert refreshed == []

    asyncio.run(run())
