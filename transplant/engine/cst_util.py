"""Small helpers over libcst nodes: the code of a node, dotted names, strings, commas.

Owns nothing but pure functions of nodes; no rule knowledge, no state. Everything else in the engine
(and distributed mode) builds on these.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst


def code_of(node: cst.CSTNode) -> str:
    """The source code of a node on its own (outside any module)."""
    return cst.Module([]).code_for_node(node)


def dotted_parts(node: cst.BaseExpression | None) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        parts.reverse()
        return parts
    return None


def chain_nodes(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The nodes of a dotted chain from the root: ``a.b.c`` -> [a, a.b, a.b.c]."""
    out: list[cst.BaseExpression] = []
    while isinstance(node, cst.Attribute):
        out.append(node)
        node = node.value
    out.append(node)
    out.reverse()
    return out


def make_dotted(name: str) -> cst.Attribute | cst.Name:
    parts = name.split(".")
    expr: cst.Attribute | cst.Name = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def import_module_name(node: cst.BaseExpression | None) -> str:
    parts = dotted_parts(node)
    return ".".join(parts) if parts else ""


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes: leave it alone
            return None
        return value if isinstance(value, str) else None
    return None


def replace_string(node: cst.SimpleString, old: str, new: str) -> cst.SimpleString:
    """Replace the first ``old`` in the literal's body, keeping prefix and quotes."""
    raw = node.value
    prefix_len = len(node.prefix) + len(node.quote)
    body = raw[prefix_len : len(raw) - len(node.quote)]
    return node.with_changes(value=raw[:prefix_len] + body.replace(old, new, 1) + raw[len(raw) - len(node.quote) :])


def is_docstring_stmt(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_future_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom) and s.module is not None and import_module_name(s.module) == "__future__"
        for s in stmt.body
    )


def target_names(node: cst.BaseExpression) -> set[str]:
    """Names bound by an assignment or loop target: ``x``, ``(a, [b, *c])``."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List)):
        return set().union(*(target_names(e.value) for e in node.elements)) if node.elements else set()
    if isinstance(node, cst.StarredElement):
        return target_names(node.value)
    return set()


def import_asname(alias: cst.ImportAlias) -> str | None:
    """The name an ``as`` clause binds, or None when the alias has none."""
    asname = alias.asname
    return asname.name.value if asname is not None and isinstance(asname.name, cst.Name) else None


def fix_commas(
    aliases: list[cst.ImportAlias], original: Sequence[cst.ImportAlias] | None = None
) -> list[cst.ImportAlias]:
    """Keep the original commas when the alias list keeps its length, else normalise them."""
    if original is not None and len(original) == len(aliases):
        return [a.with_changes(comma=o.comma) for a, o in zip(aliases, original)]
    out = []
    for i, alias in enumerate(aliases):
        last = i == len(aliases) - 1
        out.append(
            alias.with_changes(
                comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        )
    return out


def first_line(code: str) -> str:
    code = code.strip()
    return code.splitlines()[0] if code else ""


def is_constant(node: cst.BaseExpression) -> bool:
    """A literal (string, number, True/False/None), possibly negated or in a conditional expression
    of literals: its value is known where the call is."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return is_constant(node.expression)
    if isinstance(node, cst.IfExp):
        return is_constant(node.body) and is_constant(node.orelse)
    return False
