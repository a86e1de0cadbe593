"""Where a line of a file is after conversion: original line -> line in the converted bytes.

Findings carry the line of the original file; the reports also give the line in the converted
file, for a user fixing the ``_msft`` tree. Computed by the worker that converted the file,
only for files that have findings and were changed, from a line diff (difflib) of the two byte
strings.
"""

from __future__ import annotations

import difflib
import os
from typing import Iterable


def new_lines(old: bytes, new: bytes, lines: Iterable[int]) -> dict[int, int]:
    """{original line: converted line} for ``lines`` (1-based). A line that was replaced maps to
    the most similar line of the block that replaced it (an import inserted just above a changed
    line falls in the same block); a deleted line maps to the line that follows the deletion."""
    wanted = sorted(set(lines))
    if not wanted:
        return {}
    old_lines, new_lines_ = old.splitlines(), new.splitlines()
    # the diff runs on what lies between the common head and tail (most of a file is either)
    head = 0
    while head < min(len(old_lines), len(new_lines_)) and old_lines[head] == new_lines_[head]:
        head += 1
    tail = 0
    while (tail < min(len(old_lines), len(new_lines_)) - head
           and old_lines[-1 - tail] == new_lines_[-1 - tail]):
        tail += 1
    matcher = difflib.SequenceMatcher(None, old_lines[head:len(old_lines) - tail],
                                      new_lines_[head:len(new_lines_) - tail], autojunk=False)
    out: dict[int, int] = {}
    blocks = [("equal", 0, head, 0, head)]
    blocks += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    blocks.append(("equal", len(old_lines) - tail, len(old_lines), len(new_lines_) - tail, len(new_lines_)))
    k = 0
    for tag, i1, i2, j1, j2 in blocks:
        while k < len(wanted) and wanted[k] - 1 < i2:
            i = wanted[k] - 1
            if tag == "equal":
                j = j1 + (i - i1)
            elif j2 > j1 and (j2 - j1) * (i2 - i1) <= 400:
                j = max(range(j1, j2), key=lambda c: (_similarity(old_lines[i], new_lines_[c]), -c))
            elif j2 > j1:
                j = min(j1 + (i - i1), j2 - 1)
            else:
                j = j1
            out[wanted[k]] = j + 1
            k += 1
    while k < len(wanted):  # past the end of the old text (a finding on the last, empty line)
        out[wanted[k]] = wanted[k] + len(new.splitlines()) - len(old.splitlines())
        k += 1
    return out


def _similarity(a: bytes, b: bytes) -> int:
    """How much two lines share at their ends (a rewrite keeps most of a line around the change)."""
    prefix = len(os.path.commonprefix([a, b]))
    return prefix + len(os.path.commonprefix([a[prefix:][::-1], b[prefix:][::-1]]))
