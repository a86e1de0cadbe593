"""Minimal text edits between a document and its converted text, and position arithmetic.

Owns: turning (old text, new text) into the few small edits that make one into the other, and
mapping character offsets to (line, column) positions in code points. It knows nothing about
the protocol (no pygls here) and nothing about rules: the caller converts, this module diffs.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from difflib import SequenceMatcher

# Words, runs of blanks, line breaks and single other characters: a rename replaces one word.
_TOKEN = re.compile(r"\w+|[ \t]+|\r\n|\n|\r|.", re.S)
# Above this many tokens on either side of a changed block, the block is one edit (trimmed).
_FINE_LIMIT = 4000


@dataclass(frozen=True)
class Edit:
    """Replace ``old[start:end]`` (character offsets in the old text) with ``text``."""

    start: int
    end: int
    text: str


class LineIndex:
    """Offsets <-> (0-based line, 0-based column in code points) of one text. Lines end after
    ``\\n``, ``\\r\\n`` or a lone ``\\r``, as the Language Server Protocol counts them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\n|\r", text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def offset(self, line: int, column: int) -> int:
        """Offset of a position; positions past the end of a line or the text are clamped."""
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[max(0, line)]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        content_end = len(self.text[start:end].rstrip("\r\n")) + start
        return min(start + max(0, column), content_end)

    def line_text(self, line: int) -> str:
        start = self.starts[line]
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _trimmed(old: str, new: str, base: int) -> Edit:
    """One edit replacing ``old`` by ``new`` at ``base``, without their common prefix and suffix."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return Edit(base + prefix, base + len(old) - suffix, new[prefix : len(new) - suffix])


def _fine(old: str, new: str, base: int) -> list[Edit]:
    """The edits of one changed block, word by word."""
    a = _TOKEN.findall(old)
    b = _TOKEN.findall(new)
    if len(a) > _FINE_LIMIT or len(b) > _FINE_LIMIT:
        return [_trimmed(old, new, base)]
    a_offsets = [0]
    for token in a:
        a_offsets.append(a_offsets[-1] + len(token))
    edits = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(Edit(base + a_offsets[i1], base + a_offsets[i2], "".join(b[j1:j2])))
    return edits


def minimal_edits(old: str, new: str) -> list[Edit]:
    """Edits, in order and not overlapping, that turn ``old`` into ``new``; unchanged lines and
    unchanged words of changed lines are not touched."""
    if old == new:
        return []
    a, b = _lines(old), _lines(new)
    offsets = [0]
    for line in a:
        offsets.append(offsets[-1] + len(line))
    edits: list[Edit] = []
    # autojunk (lines found in over 1% of a long file, like blank lines, anchor nothing) makes this
    # several times faster; the blocks it leaves coarse are refined word by word below
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b).get_opcodes():
        if tag == "equal":
            continue
        edits.extend(_fine("".join(a[i1:i2]), "".join(b[j1:j2]), offsets[i1]))
    return edits


def apply_edits(old: str, edits: list[Edit]) -> str:
    """``old`` with ``edits`` (in order, not overlapping) applied."""
    out, at = [], 0
    for edit in edits:
        out.append(old[at : edit.start])
        out.append(edit.text)
        at = edit.end
    out.append(old[at:])
    return "".join(out)
