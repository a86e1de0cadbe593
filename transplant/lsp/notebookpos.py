"""Where a notebook cell's source text sits in the notebook's JSON text.

Owns: mapping (cell number, line, column in the cell's source) to an offset in the ``.ipynb``
text an editor shows, so that a finding in cell 3, line 2 is underlined on the JSON string that
holds that line. Reads JSON with positions (the json module gives none); never converts and
never imports pygls.
"""

from __future__ import annotations

import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # (CPython has it; typeshed omits it)

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = ("true", "false", "null")


class _Scanner:
    """A JSON reader that keeps, for the ``source`` of each cell, the literals' (start, end)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sources: dict[int, list[tuple[int, int, str]]] = {}  # cell number -> [(start, end, value)]

    def skip(self, at: int) -> int:
        blank = _WS.match(self.text, at)  # (it matches everywhere, the empty string too)
        return blank.end() if blank is not None else at

    def value(self, at: int, path: tuple) -> int:
        at = self.skip(at)
        char = self.text[at : at + 1]
        if char == "{":
            return self.obj(at + 1, path)
        if char == "[":
            return self.array(at + 1, path)
        if char == '"':
            value, end = scanstring(self.text, at + 1)
            self.literal(path, at, end, value)
            return end
        for word in _LITERALS:
            if self.text.startswith(word, at):
                return at + len(word)
        match = _NUMBER.match(self.text, at)
        if not match:
            raise ValueError(f"not JSON at offset {at}")
        return match.end()

    def literal(self, path: tuple, start: int, end: int, value: str) -> None:
        # ("cells", i, "source") for a one-string source, ("cells", i, "source", k) for a list of lines
        if len(path) in (3, 4) and path[0] == "cells" and path[2] == "source":
            self.sources.setdefault(path[1] + 1, []).append((start, end, value))

    def obj(self, at: int, path: tuple) -> int:
        at = self.skip(at)
        if self.text.startswith("}", at):
            return at + 1
        while True:
            at = self.skip(at)
            key, at = scanstring(self.text, at + 1)
            at = self.skip(at) + 1  # the colon
            at = self.value(at, path + (key,) if len(path) < 3 else path + ("",))
            at = self.skip(at)
            if self.text.startswith("}", at):
                return at + 1
            at += 1  # the comma

    def array(self, at: int, path: tuple) -> int:
        at = self.skip(at)
        if self.text.startswith("]", at):
            return at + 1
        index = 0
        while True:
            at = self.value(at, path + (index,) if len(path) < 4 else path + ("",))
            index += 1
            at = self.skip(at)
            if self.text.startswith("]", at):
                return at + 1
            at += 1


def _raw_offset(text: str, start: int, index: int) -> int:
    """Offset in ``text`` of character ``index`` of the JSON string literal starting at ``start``."""
    at = start + 1
    for _ in range(index):
        if text[at] != "\\":
            at += 1
        elif text[at + 1] != "u":
            at += 2
        elif 0xD800 <= int(text[at + 2 : at + 6], 16) < 0xDC00 and text[at + 6 : at + 8] == "\\u":
            at += 12  # a surrogate pair: one character outside the Basic Multilingual Plane
        else:
            at += 6
    return at


class NotebookPositions:
    """Cell positions -> offsets in the notebook's JSON text (None when it is not readable)."""

    def __init__(self, text: str) -> None:
        scanner = _Scanner(text)
        try:
            scanner.value(0, ())
        except (ValueError, IndexError):
            scanner.sources = {}
        self.text = text
        self.sources = scanner.sources

    def offset(self, cell: int, line: int, column: int) -> int | None:
        """Offset of (1-based line, 1-based column) of cell ``cell``'s source, or None."""
        pieces = self.sources.get(cell)
        if not pieces:
            return None
        source = "".join(value for _s, _e, value in pieces)
        lines = source.splitlines(keepends=True) or [""]
        line = min(max(1, line), len(lines))
        index = sum(len(x) for x in lines[: line - 1]) + min(max(0, column - 1), len(lines[line - 1]))
        for start, _end, value in pieces:
            if index <= len(value) and (index < len(value) or (start, _end, value) == pieces[-1]):
                return _raw_offset(self.text, start, index)
            index -= len(value)
        start, _end, value = pieces[-1]
        return _raw_offset(self.text, start, len(value))
