"""Rewrites that change which code an NPU run executes, said at their line (issue 31, mechanism 8).

A device test rewritten from CUDA to NPU (``if x.device.type == "cuda":`` -> ``"npu"``,
``torch.cuda.is_available()`` -> ``torch_npu.npu.is_available()``, ``x.is_cuda`` -> ``x.is_npu``)
sends an NPU run into a branch it never entered before; a collection of accepted device names
that gains "npu" (device_names.py) makes an NPU run pass a check it failed. Owns finding, after
the conversion, the change records of those rewrites (and of a converted default: a parameter's,
an option's, a field's or a lookup's "cuda" -> "npu" changes what a run that leaves it executes) and giving them their own code (TP108,
operation "NPU path") and a message naming the branch an NPU run now enters: its lines and the
calls in it. The workbook lists them on their own sheet (reports/sheets.py) and ``--check`` shows
them with their code.

Reads the original source with CPython's ``ast`` only when a change record sits on a line that
starts or holds a test (``if``, ``elif``, ``while``, a conditional expression, ``assert``): one
parse and one walk, linear in the file.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import re

from ..project.pynames import dotted
from ..records import CODES, OPERATION, Record

# change records that may be part of a device (or backend: "nccl" -> "hccl") test
TEST_CODES = frozenset({CODES["rename"], CODES["method"], CODES["device"], CODES["args"]})
PATH_CODE = CODES["path"]
# change records that may be a default (a device string, a backend name)
DEFAULT_CODES = frozenset({CODES["device"], CODES["args"]})
# a line that holds a test: cheap pre-check on the line's bytes before any parse
TEST_LINE = re.compile(rb"\b(?:if|elif|while|assert)\b|[=!]=|\bin\b")
MAX_CALLS = 4
COLLECTION_MESSAGE = "device names: 'npu' accepted beside 'cuda'"


def _negated(test: ast.expr) -> bool:
    """Does the test hold when the device is *not* the one it names (``!=``, ``not in``, ``not``)?"""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return True
    if isinstance(test, ast.Compare):
        return all(isinstance(op, (ast.NotEq, ast.NotIn, ast.IsNot)) for op in test.ops)
    return False


def _calls(nodes: list[ast.stmt] | list[ast.expr]) -> str:
    names: list[str] = []
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                name = ".".join(dotted(node.func) or ())
                if name and name not in names:
                    names.append(name)
    if not names:
        return "no calls"
    shown = ", ".join(f"{n}()" for n in names[:MAX_CALLS])
    return "calls " + shown + (f" and {len(names) - MAX_CALLS} more" if len(names) > MAX_CALLS else "")


def _span(nodes: list[ast.stmt] | list[ast.expr]) -> str:
    first = nodes[0].lineno
    last = max(getattr(n, "end_lineno", None) or n.lineno for n in nodes)
    return f"line {first}" if first == last else f"lines {first}-{last}"


class _Tests(ast.NodeVisitor):
    """(line, column) of a change -> what an NPU run enters when the test holding it holds."""

    def __init__(self, places: set[tuple[int, int]]) -> None:
        self.places = places
        self.found: dict[tuple[int, int], str] = {}

    def _inside(self, test: ast.expr) -> list[tuple[int, int]]:
        start, end = test.lineno, test.end_lineno or test.lineno
        end_col = test.end_col_offset if test.end_col_offset is not None else 1 << 30
        return [
            (line, col)
            for line, col in self.places
            if (start, test.col_offset) <= (line, col - 1) and (line, col - 1) < (end, end_col)
        ]

    def _test(self, test: ast.expr, body: list, orelse: list) -> None:
        hit = self._inside(test)
        if not hit:
            return
        entered, other = (orelse, body) if _negated(test) else (body, orelse)
        if entered:
            text = f"an NPU run now enters {_span(entered)} ({_calls(entered)})"
        else:
            text = f"an NPU run now skips {_span(other)} ({_calls(other)})" if other else ""
        for place in hit:
            self.found.setdefault(place, text)

    def visit_If(self, node: ast.If) -> None:
        self._test(node.test, node.body, node.orelse)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._test(node.test, node.body, [])
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        hit = self._inside(node.test)
        which = "after 'else'" if _negated(node.test) else "before 'if'"
        for place in hit:
            self.found.setdefault(place, f"an NPU run now takes the value {which} (line {node.lineno})")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        """A comparison kept as a value (``use_ipc = backend == "nccl"``): what it now says on NPU
        decides wherever the value is tested (a comparison in a test is said by the test, first)."""
        if any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            which = "fail" if _negated(node) else "hold"
            for place in self._inside(node):
                self.found.setdefault(place, f"an NPU run now makes this comparison (line {node.lineno}) {which}")
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        for place in self._inside(node.test):
            self.found.setdefault(place, "an NPU run now passes this assertion")
        self.generic_visit(node)


class _Defaults(ast.NodeVisitor):
    """(line, column) of a change -> what it means when the change is a default: of a parameter, of an
    option (``add_argument(default=...)``, ``field(default=...)``), of a class-level field
    (a dataclass's ``device: str = "cuda"``) or of a lookup (``getattr(args, "device", "cuda")``,
    ``cfg.get("backend", "nccl")``). A run that leaves such a default now takes the NPU value, and
    every test of it in the program the NPU path."""

    def __init__(self, places: set[tuple[int, int]]) -> None:
        self.places = places
        self.found: dict[tuple[int, int], str] = {}

    def _mark(self, value: ast.expr | None, what: str) -> None:
        if value is None:
            return
        for node in ast.walk(value):
            if isinstance(node, ast.Constant) and (node.lineno, node.col_offset + 1) in self.places:
                self.found.setdefault(
                    (node.lineno, node.col_offset + 1),
                    f"{what}: an NPU run that does not set it now takes the NPU value, and the code that "
                    "tests it the NPU path",
                )

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            self._mark(default, "the default of a parameter")
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign):
                self._mark(stmt.value, "the default of a field")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg == "default":
                self._mark(keyword.value, "the default of an option")
        name = (dotted(node.func) or ("",))[-1]
        at = _LOOKUPS.get(name)
        if at is not None and len(node.args) == at + 2 and not node.keywords:
            self._mark(node.args[at + 1], "the default of a lookup")
        self.generic_visit(node)


_LOOKUPS = {"getattr": 1, "get": 0, "getenv": 0, "setdefault": 0, "pop": 0}  # where the key is (calls.py)
DEFAULT_LINE = re.compile(rb"=|(?:get|getattr|getenv|setdefault|pop)\s*\(")


_TOP = re.compile(
    rb"^(?:def|async|class|if|elif|else|for|while|with|try|except|finally|match|@|[A-Za-z_][\w.]*\s*[=(:])"
)


CONTINUED = (b"else", b"elif", b"except", b"finally", b"case")  # parts of the statement above


def _blocks(lines: list[bytes], wanted: set[int]):
    """The parsed top-level statements that hold the lines ``wanted`` (line numbers kept), each parsed
    once; the whole source when a statement does not parse alone (a string spanning lines, say).
    Parsing only the statements that hold a test keeps the cost off large files with few tests."""
    if not wanted:
        return
    starts = [i + 1 for i, line in enumerate(lines) if line[:1] not in (b" ", b"\t", b"#", b"") and _TOP.match(line)]
    spans: list[tuple[int, int]] = []  # (first line, line after the last)
    for line in sorted(wanted):
        k = bisect.bisect_right(starts, line) - 1
        start = starts[k] if k >= 0 else 1
        while k > 0 and lines[start - 1].startswith(CONTINUED):
            k -= 1  # (an else belongs to the if above)
            start = starts[k]
        while k > 0 and lines[starts[k - 1] - 1].startswith(b"@") and starts[k - 1] < start:
            k -= 1
            start = starts[k]
        j = bisect.bisect_right(starts, line)
        while j < len(starts) and lines[starts[j] - 1].startswith(CONTINUED):
            j += 1
        end = starts[j] if j < len(starts) else len(lines) + 1
        if not spans or spans[-1][1] <= start:
            spans.append((start, end))
    for start, end in spans:
        chunk = b"\n" * (start - 1) + b"\n".join(lines[start - 1 : end - 1])
        try:
            yield ast.parse(chunk)
        except (SyntaxError, ValueError):
            try:
                yield ast.parse(b"\n".join(lines))
            except (SyntaxError, ValueError):
                pass
            return


def mark_paths(source: bytes, records: list[Record]) -> list[Record]:
    """``records`` with the rewrites that change an NPU run's path given code TP108 and the branch."""
    lines = source.splitlines()
    candidates = {
        (r.line, r.col)
        for r in records
        if r.is_change
        and r.code in TEST_CODES
        and not r.cell
        and 0 < r.line <= len(lines)
        and TEST_LINE.search(lines[r.line - 1])
    }
    defaults = {
        (r.line, r.col)
        for r in records
        if r.is_change
        and r.code in DEFAULT_CODES
        and not r.cell
        and 0 < r.line <= len(lines)
        and (r.line, r.col) not in candidates
        and DEFAULT_LINE.search(lines[r.line - 1])
    }
    found: dict[tuple[int, int], str] = {}
    for tree in _blocks(lines, {line for line, _col in candidates | defaults}):
        finder = _Tests(candidates)
        finder.visit(tree)
        found.update(finder.found)
        if defaults:
            of_defaults = _Defaults(defaults)
            of_defaults.visit(tree)
            for place, text in of_defaults.found.items():
                found.setdefault(place, text)
    out = []
    for r in records:
        text = found.get((r.line, r.col), "") if r.is_change and r.code in TEST_CODES | DEFAULT_CODES else ""
        if text:
            r = dataclasses.replace(r, code=PATH_CODE, operation=OPERATION["path"], message=f"{r.message}: {text}")
        elif r.is_change and r.message.startswith(COLLECTION_MESSAGE):
            r = dataclasses.replace(r, code=PATH_CODE, operation=OPERATION["path"])
        out.append(r)
    return out
