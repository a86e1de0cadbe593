"""A cheap lexical guard against sources nested too deeply for libcst.

libcst's native parser recurses once per level of nesting; a few thousand nested brackets, or a
sum of 100,000 terms, overflow the C stack and kill the process with SIGSEGV -- an exception
cannot be caught. :func:`nesting_error` scans the bytes once (strings and comments skipped) and
estimates the depth of the deepest expression, so such files are reported and copied unchanged
instead of ever reaching the parser.

The limits are generous: CPython itself refuses more than 200 nested brackets ("too many nested
parentheses"), and the converter's own tree walk stops with a RecursionError at a few hundred
chained operators, long before :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import re

MAX_BRACKETS = 200  # CPython's tokenizer limit (MAXLEVEL)
MAX_DEPTH = 1000  # chained operators, calls, attributes and brackets in one expression

_TOKEN = re.compile(
    rb"""
      (?P<comment>\#[^\r\n]*)
    | (?P<string>(?<![\w])[rRbBuUfFtT]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
                                          |'(?:\\.|[^\\'\r\n])*'|\"(?:\\.|[^\\\"\r\n])*\"))
    | (?P<number>\b\d[\w.]*)
    | (?P<cont>\\\r?\n)
    | (?P<open>[(\[{])
    | (?P<close>[)\]}])
    | (?P<sep>[,;])
    | (?P<newline>\r?\n|\r)
    | (?P<op>\*\*|//|<<|>>|->|[-+*/%@&|^~.]|\b(?:and|or|not|if|else|lambda|await)\b)
    """,
    re.VERBOSE | re.DOTALL,
)


def nesting_error(source: bytes) -> tuple[str, int] | None:
    """``(message, line)`` when ``source`` is nested beyond the limits, else None.

    The estimate is, at every point, the number of operators, calls and brackets that enclose it
    within its statement (a comma or a new statement starts a fresh count at its level).
    """
    if len(source) < MAX_BRACKETS:
        return None  # too short to hold that many brackets or operators
    stack: list[int] = []  # operator counts of the enclosing bracket levels
    ops = 0  # operators so far in the current comma-separated part at this level
    total = 0  # sum of ``stack`` and ``ops``: the running depth estimate
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup
        if kind in ("comment", "number", "cont"):
            continue
        if kind == "op" or kind == "string":
            ops += 1
            total += 1
        elif kind == "open":
            total += 1
            stack.append(ops + 1)
            ops = 0
            if len(stack) > MAX_BRACKETS:
                return f"more than {MAX_BRACKETS} nested brackets", _line(source, m.start())
        elif kind == "close":
            total -= ops
            ops = stack.pop() if stack else 0
            if not stack:
                total = ops
        elif kind == "sep" or (kind == "newline" and not stack):
            if kind == "sep" and m.group() == b";" or kind == "newline":
                stack.clear()
                ops = total = 0
            else:
                total -= ops
                ops = 0
        if total > MAX_DEPTH:
            return f"an expression nested more than {MAX_DEPTH} levels deep", _line(source, m.start())
    return None


def _line(source: bytes, offset: int) -> int:
    return source.count(b"\n", 0, offset) + 1
