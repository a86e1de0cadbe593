"""Where a line of a file is after conversion: original line -> line in the converted bytes.

Findings carry the line of the original file; the reports also give the line in the converted
file, for a user fixing the ``_msft`` tree. Computed by the worker that converted the file,
only for files that have findings and were changed.

Lines are aligned in order, preferring identical lines, then lines that share their ends (a rewrite
in place keeps most of a line): exactly, by dynamic programming, where the changed region is small;
by a line diff (difflib) where it is large. The exact alignment is what keeps a repeated line from
being matched to the wrong copy of itself.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Iterable, Sequence


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
    while tail < min(len(old_lines), len(new_lines_)) - head and old_lines[-1 - tail] == new_lines_[-1 - tail]:
        tail += 1
    middle_old, middle_new = old_lines[head : len(old_lines) - tail], new_lines_[head : len(new_lines_) - tail]
    opcodes: Sequence[tuple[str, int, int, int, int]]
    if len(middle_old) * len(middle_new) <= EXACT_CELLS:
        opcodes = _aligned(middle_old, middle_new)
    else:
        opcodes = difflib.SequenceMatcher(None, middle_old, middle_new, autojunk=False).get_opcodes()
    out: dict[int, int] = {}
    blocks = [("equal", 0, head, 0, head)]
    blocks += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in opcodes]
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


EXACT_CELLS = 2_500  # changed region (old lines x new lines) aligned exactly; beyond, difflib (far cheaper)


def _aligned(old: list[bytes], new: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """Opcodes (as difflib's) of the best in-order alignment of ``old`` with ``new`` (see _weight);
    a line paired with nothing (inserted or removed) scores 0."""
    n, m = len(old), len(new)
    score = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, above, a = score[i], score[i - 1], old[i - 1]
        for j in range(1, m + 1):
            b = new[j - 1]
            pair = above[j - 1] + _weight(a, b)
            row[j] = max(pair, above[j], row[j - 1])
    pairs: list[tuple[int, int]] = []
    i, j = n, m
    while i and j:  # on a tie, a new line is taken as inserted (imports are what a conversion adds)
        a, b = old[i - 1], new[j - 1]
        if score[i][j] == score[i][j - 1]:
            j -= 1
        elif score[i][j] == score[i - 1][j - 1] + _weight(a, b):
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        else:
            i -= 1
    pairs.reverse()
    opcodes: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for pi, pj in [*pairs, (n, m)]:
        if i < pi or j < pj:  # lines between two pairs: removed, inserted or both
            opcodes.append(("replace" if i < pi and j < pj else "delete" if i < pi else "insert", i, pi, j, pj))
        if pi < n:
            opcodes.append(("equal" if old[pi] == new[pj] else "replace", pi, pi + 1, pj, pj + 1))
        i, j = pi + 1, pj + 1
    return opcodes


_ADDED_IMPORT = re.compile(rb"import [\w.]+")  # the form of the lines a conversion adds


def _weight(a: bytes, b: bytes) -> int:
    """How good a pair the old line ``a`` and the new line ``b`` are: identical 6; sharing their
    ends 2 (a line rewritten in place); any other pair 1 (rewritten beyond recognition), but 0 when
    ``b`` has the form of an added import: such a line is rather taken as inserted."""
    if a == b:
        return 6
    if _ADDED_IMPORT.fullmatch(b):
        return 0
    return 2 if _similarity(a, b) else 1


def _similarity(a: bytes, b: bytes) -> int:
    """How much two lines share at their ends (a rewrite keeps most of a line around the change)."""
    prefix = len(os.path.commonprefix([a, b]))
    return prefix + len(os.path.commonprefix([a[prefix:][::-1], b[prefix:][::-1]]))
