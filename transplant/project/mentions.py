"""APIs that a file names without running them: a class in ``isinstance(m, (nn.RNN, nn.LSTM))`` or
``issubclass(cls, nn.TransformerDecoder)`` tests what an object is; nothing of that class runs there.
A finding that the API is not supported on NPU (TP201, TP202) at such a place is a note that says so;
the places that build or call the class keep their own findings. So are two more kinds of naming
(DeepSpeed's flops profiler): a key of a dict literal (``{nn.RNN: _rnn_forward_hook}`` looks a
class up), and a patch, the target of an assignment and the same expression on its right where it
is not called (``F.avg_pool3d = wrapFunc(F.avg_pool3d, ...)``, ``F.avg_pool3d = saved[F.avg_pool3d.__str__]``):
the function is replaced, not run there. Works on a CPython ``ast`` tree;
changes levels and messages of records, never code.
"""

from __future__ import annotations

import ast

from ..records import CODES, Record
from .pynames import column, parse, source_lines

_TESTS = frozenset({"isinstance", "issubclass"})
_UNSUPPORTED = frozenset({CODES["no_counterpart"], CODES["unsupported"]})

Span = tuple[tuple[int, int], tuple[int, int]]  # (line, 1-based column) of the first and the last character
_CLASS_TEST = "only named in an isinstance/issubclass test here: nothing of it runs on this line"
_KEY = "only named as a key of a dict here: nothing of it runs on this line"
_PATCH = "patched here (replaced or wrapped, not called): nothing of it runs on this line"


def _span(node: ast.expr, lines: list[str]) -> Span:
    end = node.end_lineno or node.lineno
    return (node.lineno, column(lines, node.lineno, node.col_offset)), (
        end,
        column(lines, end, node.end_col_offset or 0),
    )


def namings(tree: ast.Module, lines: list[str]) -> list[tuple[Span, str]]:
    """The spans where an API is named without running, with why: class tests, dict keys, patches."""
    found = [(span, _CLASS_TEST) for span in class_tests(tree, lines)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found += [(_span(key, lines), _KEY) for key in node.keys if isinstance(key, (ast.Attribute, ast.Name))]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            target = node.targets[0]
            found.append((_span(target, lines), _PATCH))
            # the same expression on the right, wrapped or looked up (wrap(F.x, ...), saved[F.x.__name__]),
            # unless it is called there
            shape = ast.dump(target, annotate_fields=False).replace("Store()", "Load()")
            called = {id(n.func) for n in ast.walk(node.value) if isinstance(n, ast.Call)}
            for part in ast.walk(node.value):
                if (
                    isinstance(part, ast.expr)
                    and id(part) not in called
                    and ast.dump(part, annotate_fields=False) == shape
                ):
                    found.append((_span(part, lines), _PATCH))
    return found


def class_tests(tree: ast.Module, lines: list[str]) -> list[Span]:
    """The spans of the class arguments of ``isinstance``/``issubclass`` calls."""
    spans = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _TESTS
            and len(node.args) == 2
        ):
            arg = node.args[1]
            end = arg.end_lineno or arg.lineno
            spans.append(
                (
                    (arg.lineno, column(lines, arg.lineno, arg.col_offset)),
                    (end, column(lines, end, arg.end_col_offset or 0)),
                )
            )
    return spans


def demote(data: bytes, records: list[Record]) -> list[Record]:
    """``records`` with the unsupported-API findings inside class tests made notes."""
    chosen = [r for r in records if r.code in _UNSUPPORTED and r.level in ("error", "warning")]
    if not chosen:
        return records
    tree = parse(data)
    if tree is None:
        return records
    spans = namings(tree, source_lines(data))
    for r in chosen:
        why = next((why for (first, last), why in spans if first <= (r.line, r.col) < last), "")
        if why:
            r.level = "note"
            r.message += f" ({why})"
    return records
