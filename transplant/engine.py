"""Convert one Python source: bytes in, bytes out, plus records of what changed and what remains.

The engine parses once with libcst (only the skeleton of the file: the statements no rule can
match in are folded away first, see skeleton.py), resolves names through the file's imports (so
aliases are recognised and look-alikes such as ``numba.cuda`` are not), applies every rule in one
traversal, and only then computes line numbers, for the nodes that were touched.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from .nesting import nesting_error
from .records import CODES, OPERATION, SKIP_LINE, Conversion, Record, SourceError, skips_file
from .rules import Rule, RuleSet
from .skeleton import Skeleton, skeleton

DEVICE_STR = re.compile(r"^cuda(:\d+)?$")
DEVICE_TEMPLATE = re.compile(r"^cuda:(\{\w*\}|%d|%s|%i)$")
DEVICE_PREFIX = "cuda:"
DEVICE_NAME = re.compile(r"(^|_)(device|dev|device_type|map_location)$", re.IGNORECASE)
TYPE_STRING_PREFIX = "torch.cuda."
BACKEND_NAME = re.compile(r"(^|_)backend$", re.IGNORECASE)
GENERIC_DEVICE_KEYWORDS = frozenset({"device", "device_type", "map_location", "output_device"})


# --------------------------------------------------------------------------- helpers


def code_of(node: cst.CSTNode) -> str:
    """The source code of a node on its own (outside any module)."""
    return cst.Module([]).code_for_node(node)


def dotted_parts(node: cst.BaseExpression) -> list[str] | None:
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
    out = []
    while isinstance(node, cst.Attribute):
        out.append(node)
        node = node.value
    out.append(node)
    out.reverse()
    return out


def make_dotted(name: str) -> cst.BaseExpression:
    parts = name.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def import_module_name(node: cst.BaseExpression) -> str:
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
    body = raw[prefix_len: len(raw) - len(node.quote)]
    return node.with_changes(value=raw[:prefix_len] + body.replace(old, new, 1) + raw[len(raw) - len(node.quote):])


def is_docstring_stmt(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_future_import(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and any(isinstance(s, cst.ImportFrom) and s.module is not None
                and import_module_name(s.module) == "__future__" for s in stmt.body)
    )


def _device_literal(value: str) -> bool:
    return bool(DEVICE_STR.match(value) or DEVICE_TEMPLATE.match(value))


def rewrite_device_expr(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """Turn a CUDA device expression into its NPU form; None when it is not one.

    Handles "cuda", "cuda:0", f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i, "cuda:" + str(i),
    conditional expressions and lists of those, and the values (never the keys) of
    map_location-style dicts. "cpu" and every other string are left alone.
    """
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        if value is not None and _device_literal(value):
            return replace_string(node, "cuda", "npu")
        return None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        if parts and isinstance(parts[0], cst.FormattedStringText):
            text = parts[0].value
            rest_ok = all(isinstance(p, cst.FormattedStringExpression) for p in parts[1:])
            if (text == DEVICE_PREFIX and len(parts) == 2 and rest_ok) or (len(parts) == 1 and DEVICE_STR.match(text)):
                first = parts[0].with_changes(value="npu" + text[4:])
                return node.with_changes(parts=[first, *parts[1:]])
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        inner = node.func.value
        if isinstance(inner, cst.SimpleString) and (value := string_value(inner)) is not None and _device_literal(value):
            return node.with_changes(func=node.func.with_changes(value=replace_string(inner, "cuda", "npu")))
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        left = node.left
        value = string_value(left)
        if value is not None and (value == DEVICE_PREFIX or _device_literal(value)):
            return node.with_changes(left=replace_string(left, "cuda", "npu"))
        return None
    if isinstance(node, cst.IfExp):
        body = rewrite_device_expr(node.body)
        orelse = rewrite_device_expr(node.orelse)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    if isinstance(node, cst.BooleanOperation):
        left = rewrite_device_expr(node.left)
        right = rewrite_device_expr(node.right)
        if left is None and right is None:
            return None
        return node.with_changes(left=left or node.left, right=right or node.right)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        changed = False
        elements = []
        for el in node.elements:
            new = rewrite_device_expr(el.value) if isinstance(el, cst.Element) else None
            if new is not None:
                changed = True
                el = el.with_changes(value=new)
            elements.append(el)
        return node.with_changes(elements=elements) if changed else None
    if isinstance(node, cst.Dict):
        changed = False
        elements = []
        for el in node.elements:
            new = rewrite_device_expr(el.value) if isinstance(el, cst.DictElement) else None
            if new is not None:
                changed = True
                el = el.with_changes(value=new)
            elements.append(el)
        return node.with_changes(elements=elements) if changed else None
    return None


def is_device_template(node: cst.BaseExpression) -> bool:
    """A device string computed from a template: f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i,
    "cuda:" + str(i)."""
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        return (len(parts) == 2 and isinstance(parts[0], cst.FormattedStringText) and parts[0].value == DEVICE_PREFIX
                and isinstance(parts[1], cst.FormattedStringExpression))
    if isinstance(node, cst.Call):
        func = node.func
        return (isinstance(func, cst.Attribute) and func.attr.value == "format"
                and (value := string_value(func.value)) is not None and DEVICE_TEMPLATE.match(value) is not None)
    if isinstance(node, cst.BinaryOperation):
        value = string_value(node.left)
        if isinstance(node.operator, cst.Modulo):
            return value is not None and DEVICE_TEMPLATE.match(value) is not None
        if isinstance(node.operator, cst.Add):
            return value == DEVICE_PREFIX
    return False


def rewrite_backend_expr(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """'nccl' -> 'hccl' in a backend value (also in conditional expressions, lists and tuples)."""
    if isinstance(node, cst.SimpleString):
        return replace_string(node, "nccl", "hccl") if string_value(node) == "nccl" else None
    if isinstance(node, cst.IfExp):
        body, orelse = rewrite_backend_expr(node.body), rewrite_backend_expr(node.orelse)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    if isinstance(node, (cst.List, cst.Tuple)):
        elements = [el.with_changes(value=new) if isinstance(el, cst.Element) and (new := rewrite_backend_expr(el.value))
                    else el for el in node.elements]
        return node.with_changes(elements=elements) if any(a is not b for a, b in zip(elements, node.elements)) else None
    return None


def literal_equals(node: cst.BaseExpression, literal: str, literal_node: cst.BaseExpression) -> bool:
    """Does ``node`` have the value of the rule literal (strings compare by value)?"""
    wanted = string_value(literal_node)
    if wanted is not None:
        return string_value(node) == wanted
    return code_of(node).strip() == literal.strip()


def replace_literal(node: cst.BaseExpression, literal: str, literal_node: cst.BaseExpression,
                    new: cst.BaseExpression) -> cst.BaseExpression | None:
    """Replace the literal in ``node`` or in the branches of a conditional expression."""
    if literal_equals(node, literal, literal_node):
        if isinstance(node, cst.SimpleString) and isinstance(new, cst.SimpleString):
            # keep the user's quote style
            new_value = string_value(new)
            if new_value is not None and new_value.isidentifier():
                return node.with_changes(value=node.prefix + node.quote + new_value + node.quote)
        return new
    if isinstance(node, cst.IfExp):
        body = replace_literal(node.body, literal, literal_node, new)
        orelse = replace_literal(node.orelse, literal, literal_node, new)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    return None


# --------------------------------------------------------------------------- import analysis


@dataclass
class ImportPlan:
    """What happens to one import statement."""

    new_nodes: list[cst.BaseSmallStatement]
    message: str
    names: list[str]  # local names whose binding the rewrite changes
    needs_npu: bool = True  # the rewrite comes from a built-in rule or names torch_npu


class Bindings:
    """Names bound by imports anywhere in the file: local name -> qualified name."""

    def __init__(self) -> None:
        self.original: dict[str, str] = {}
        self.rewritten: dict[str, str] = {}  # names whose import is rewritten -> new qualified
        self.plans: dict[int, ImportPlan] = {}  # id(import node) -> plan
        self.import_nodes: list[cst.CSTNode] = []
        self.star_modules: list[str] = []


def _walk_statements(body: Sequence[cst.CSTNode]) -> Iterable[cst.BaseSmallStatement]:
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, cst.BaseCompoundStatement):
            inner = getattr(stmt, "body", None)  # a match statement has only cases
            if isinstance(inner, cst.IndentedBlock):
                yield from _walk_statements(inner.body)
            elif isinstance(inner, cst.SimpleStatementSuite):
                yield from inner.body
            for extra in ("orelse", "finalbody"):
                sub = getattr(stmt, extra, None)
                if sub is not None:
                    yield from _walk_statements([sub])
            for handler in getattr(stmt, "handlers", ()):
                yield from _walk_statements([handler])
            for case in getattr(stmt, "cases", ()):
                yield from _walk_statements([case])
        elif isinstance(stmt, (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase)):
            inner = stmt.body
            if isinstance(inner, cst.IndentedBlock):
                yield from _walk_statements(inner.body)
            else:
                yield from inner.body
        elif isinstance(stmt, cst.If):  # elif chains
            yield from _walk_statements([stmt])


def analyse_imports(module: cst.Module, rules: RuleSet) -> Bindings:
    b = Bindings()
    for small in _walk_statements(module.body):
        if isinstance(small, cst.Import):
            b.import_nodes.append(small)
            _plan_import(small, rules, b)
        elif isinstance(small, cst.ImportFrom):
            b.import_nodes.append(small)
            _plan_import_from(small, rules, b)
    return b


def _plan_import(node: cst.Import, rules: RuleSet, b: Bindings) -> None:
    changed = False
    rules_used: list[Rule] = []
    new_aliases = []
    notes = []
    for alias in node.names:
        qualified = import_module_name(alias.name)
        local = import_asname(alias)
        if local is not None:
            b.original[local] = qualified
            found = rules.new_name(qualified)
            if found is not None:
                new_qualified = found[0]
                rules_used.append(found[1])
                b.rewritten[local] = new_qualified
                alias = alias.with_changes(name=make_dotted(new_qualified))
                changed = True
                notes.append(f"{qualified} -> {new_qualified}{_rule_note(found[1])}")
        else:
            root = qualified.split(".")[0]
            b.original.setdefault(root, root)
            found = rules.new_name(qualified)
            # "import a.old" binds "a": it can become "import a.new" only while the root stays
            if found is not None and found[0] != qualified and found[0].split(".")[0] == root:
                rules_used.append(found[1])
                alias = alias.with_changes(name=make_dotted(found[0]))
                changed = True
                notes.append(f"{qualified} -> {found[0]}")
        new_aliases.append(alias)
    if changed:
        b.plans[id(node)] = ImportPlan([node.with_changes(names=new_aliases)], "import " + ", ".join(notes),
                                       [n for n in b.rewritten if b.original.get(n) and n in _locals(node)],
                                       any(_targets_npu(r) for r in rules_used))


def _plan_import_from(node: cst.ImportFrom, rules: RuleSet, b: Bindings) -> None:
    if node.relative or node.module is None:
        return
    module = import_module_name(node.module)
    if isinstance(node.names, cst.ImportStar):
        b.star_modules.append(module)
        found = rules.new_name(module)
        if found is not None and found[0] != module:
            # the module itself has a counterpart: the star import takes its names from there
            b.plans[id(node)] = ImportPlan([node.with_changes(module=make_dotted(found[0]))],
                                           f"from-import {module}.* -> {found[0]}.*", [], _targets_npu(found[1]))
        return
    kept: list[cst.ImportAlias] = []
    moved: dict[str, list[cst.ImportAlias]] = {}
    notes = []
    rules_used: list[Rule] = []
    for alias in node.names:
        name = alias.name.value if isinstance(alias.name, cst.Name) else import_module_name(alias.name)
        local = import_asname(alias) or name
        qualified = f"{module}.{name}"
        b.original[local] = qualified
        found = rules.new_name(qualified)
        if found is None:
            kept.append(alias)
            continue
        new_qualified = found[0]
        new_module, _, new_name = new_qualified.rpartition(".")
        if not new_module:
            kept.append(alias)
            continue
        rules_used.append(found[1])
        b.rewritten[local] = new_qualified
        notes.append(f"{qualified} -> {new_qualified}{_rule_note(found[1])}")
        if new_name == local:
            new_alias = alias.with_changes(name=cst.Name(new_name), asname=None)
        else:
            new_alias = alias.with_changes(
                name=cst.Name(new_name),
                asname=cst.AsName(name=cst.Name(local)) if alias.asname is None else alias.asname,
            )
        moved.setdefault(new_module, []).append(new_alias)
    if not moved:
        return
    statements: list[cst.BaseSmallStatement] = []
    if kept:
        statements.append(node.with_changes(names=_fix_commas(kept)))
    for new_module, aliases in moved.items():
        if not kept and len(moved) == 1:
            statements.append(node.with_changes(module=make_dotted(new_module), names=_fix_commas(aliases, node.names)))
        else:
            statements.append(cst.ImportFrom(module=make_dotted(new_module), names=_fix_commas(aliases)))
    b.plans[id(node)] = ImportPlan(statements, "from-import " + ", ".join(notes),
                                   [n for n in _locals(node) if n in b.rewritten],
                                   any(_targets_npu(r) for r in rules_used))


def _rule_note(rule: Rule) -> str:
    return f" ({rule['message']})" if rule.get("message") else ""


def target_names(node: cst.BaseExpression) -> set[str]:
    """Names bound by an assignment or loop target: ``x``, ``(a, [b, *c])``."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List)):
        return set().union(*(target_names(e.value) for e in node.elements)) if node.elements else set()
    if isinstance(node, cst.StarredElement):
        return target_names(node.value)
    return set()


def _targets_npu(rule: Rule) -> bool:
    """Does applying this rename make the file need ``import torch_npu``?"""
    return not rule.user or "torch_npu" in f"{rule.get('parent_module', '')}.{rule.get('new_name', '')}"


def import_asname(alias: cst.ImportAlias) -> str | None:
    """The name an ``as`` clause binds, or None when the alias has none."""
    asname = alias.asname
    return asname.name.value if asname is not None and isinstance(asname.name, cst.Name) else None


def _locals(node: cst.Import | cst.ImportFrom) -> list[str]:
    out = []
    if isinstance(node.names, cst.ImportStar):
        return out
    for alias in node.names:
        local = import_asname(alias)
        if local is not None:
            out.append(local)
        elif isinstance(alias.name, cst.Name):
            out.append(alias.name.value)
        else:
            out.append(import_module_name(alias.name).split(".")[0])
    return out


def _fix_commas(aliases: list[cst.ImportAlias], original: Sequence[cst.ImportAlias] | None = None) -> list[cst.ImportAlias]:
    """Keep the original commas when the alias list keeps its length, else normalise them."""
    if original is not None and len(original) == len(aliases):
        return [a.with_changes(comma=o.comma) for a, o in zip(aliases, original)]
    out = []
    for i, alias in enumerate(aliases):
        last = i == len(aliases) - 1
        out.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
    return out


# --------------------------------------------------------------------------- positions


class _LineTracker(CodegenState):
    """Codegen that records positions of a few target nodes only (cheaper than PositionProvider)."""

    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.positions: dict[int, tuple[int, int, int, int]] = {}
        self._open: dict[int, tuple[int, int]] = {}
        self._done = 0
        self._line = 1
        self._col = 0
        self.stop_early = True  # stop the code generation once every target is placed

    def _where(self) -> tuple[int, int]:
        if self._done < len(self.tokens):
            text = "".join(self.tokens[self._done:])
            self._done = len(self.tokens)
            newlines = text.count("\n")
            last = text.rfind("\n")
            if "\r" in text:  # "\r\n" and lone "\r" line endings
                newlines += text.count("\r") - text.count("\r\n")
                last = max(last, text.rfind("\r"))
            if newlines:
                self._line += newlines
                self._col = len(text) - last - 1
            else:
                self._col += len(text)
        return self._line, self._col

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets and id(node) not in self._open:
            self._open[id(node)] = self._where()

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self._open and key not in self.positions:
            line, col = self._open.pop(key)
            end_line, end_col = self._where()
            self.positions[key] = (line, col + 1, end_line, end_col + 1)
            if self.stop_early and len(self.positions) == len(self.targets):
                raise _AllPlaced


class _AllPlaced(Exception):
    """Every target has its position: the rest of the code generation is not needed."""


def node_positions(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int, int, int]]:
    targets = {id(n) for n in nodes}
    if not targets:
        return {}
    state = _LineTracker(module, targets)
    try:
        module._codegen(state)
    except _AllPlaced:
        pass
    return state.positions


def positions_and_code(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> tuple[dict[int, tuple[int, int, int, int]], str]:
    """node_positions, and ``module.code`` from the same pass of code generation."""
    state = _LineTracker(module, {id(n) for n in nodes})
    state.stop_early = False
    module._codegen(state)
    return state.positions, "".join(state.tokens)


# --------------------------------------------------------------------------- the transformer


@dataclass
class _Pending:
    """A record whose position (and ``old`` text) is filled in from ``anchor`` at the end."""

    anchor: cst.CSTNode
    record: Record

    @property
    def level(self) -> str:
        return self.record.level


class Converter(cst.CSTTransformer):
    """Applies every rule in one traversal and collects pending records."""

    def __init__(self, module: cst.Module, rules: RuleSet, bindings: Bindings, excluded: set[int]) -> None:
        super().__init__()
        self.module = module
        self.rules = rules
        self.b = bindings
        self.excluded = excluded
        self.pending: list[_Pending] = []
        self.replacements: dict[int, cst.BaseExpression] = {}
        self.skip_names: set[int] = set()
        self.in_chain: set[int] = set()
        self.shadow: list[set[str]] = []
        self.uses: dict[str, int] = {}
        self.touched: set[str] = set()  # import-bound names with a reference rewritten away
        self.needs_npu = False
        self.needs_imports: set[str] = set()
        self.dict_keys: set[int] = set()  # dict keys: not device strings even when they look like one
        self.call_args: set[int] = set()  # argument values: their call handles device templates
        self._parsed: dict[str, cst.BaseExpression] = {}

    # ---- records

    def _code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def record(self, anchor: cst.CSTNode, kind: str, message: str, rule: Rule | None, *, api: str = "",
               new: str = "", level: str = "fix", needs_npu: bool | None = None) -> bool:
        if id(anchor) in self.excluded:
            return False
        code = CODES[kind]
        operation = OPERATION.get(kind, "")
        if level == "fix" and rule is not None and rule.get("message"):
            message = f"{message} ({rule['message']})"  # what the rule's author wants users to know
        suggestion = ""
        if rule is not None and level != "fix":
            suggestion = rule.get("suggestion", "")
        self.pending.append(_Pending(anchor, Record(0, 0, 0, 0, code, level, operation, message,
                                                    rule.origin if rule is not None else "builtin", api=api,
                                                    new=new, suggestion=suggestion)))
        if needs_npu is None:
            # Built-in rules target torch_npu; "npu" device strings exist only once torch_npu is
            # imported. A user rule about another library needs no torch_npu.
            needs_npu = kind != "env" and (rule is None or not rule.user or kind == "device" or "torch_npu" in new)
        if level == "fix" and needs_npu:
            self.needs_npu = True
        return True

    def expr(self, text: str) -> cst.BaseExpression:
        node = self._parsed.get(text)
        if node is None:
            node = self._parsed[text] = cst.parse_expression(text)
        return node

    # ---- name resolution

    def qualified(self, parts: list[str]) -> str | None:
        root = parts[0]
        if any(root in scope for scope in self.shadow):
            return None
        base = self.b.original.get(root)
        if base is None:
            return None
        return ".".join([base, *parts[1:]])

    def resolve(self, node: cst.BaseExpression) -> str | None:
        parts = dotted_parts(node)
        return self.qualified(parts) if parts else None

    # ---- scopes (parameters shadow imported names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.skip_names.add(id(node.name))
        self.shadow.append(self._params(node.params))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.shadow.pop()
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.shadow.append(self._params(node.params))

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        self.shadow.pop()
        return updated_node

    # comprehension variables shadow imported names inside the comprehension
    def _comp_enter(self, node) -> None:
        names: set[str] = set()
        comp = node.for_in
        while comp is not None:
            names |= target_names(comp.target)
            comp = comp.inner_for_in
        self.shadow.append(names)

    def _comp_leave(self, original_node, updated_node):
        self.shadow.pop()
        return updated_node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp_enter
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _comp_leave

    @staticmethod
    def _params(params: cst.Parameters) -> set[str]:
        names = set()
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
            names.add(p.name.value)
        for p in (params.star_arg, params.star_kwarg):
            if isinstance(p, cst.Param):
                names.add(p.name.value)
        return names

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip_names.add(id(node.name))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip_names.add(id(node.name))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip_names.add(id(node.keyword))
        self.call_args.add(id(node.value))

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if isinstance(node.names, cst.ImportStar) and id(node) not in self.b.plans and not node.relative \
                and node.module is not None:
            module = import_module_name(node.module)
            prefix = module + "."
            if any(name.startswith(prefix) for name in self.rules.rename_q):
                # the names a star import binds are invisible here: their uses cannot be converted
                self.pending.append(_Pending(node, Record(
                    0, 0, 0, 0, CODES["note"], "note", "", f"from {module} import *: the names it binds are not "
                    "converted; import the ones you use by name", "builtin", api=f"{module}.*")))
        return False

    # ---- references

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if id(node) in self.in_chain:
            return True
        self.skip_names.add(id(node.attr))
        parts = dotted_parts(node)
        if parts is not None:
            # the whole dotted chain is resolved here, once; its inner nodes are only rebuilt
            for inner in chain_nodes(node)[:-1]:
                self.in_chain.add(id(inner))
                if isinstance(inner, cst.Attribute):
                    self.skip_names.add(id(inner.attr))
            self._chain(node, parts)
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.skip_names or id(node) in self.in_chain:
            return
        self._chain(node, [node.value])

    def _chain(self, node: cst.BaseExpression, parts: list[str]) -> None:
        root = parts[0]
        qualified = self.qualified(parts)
        if qualified is None:
            if len(parts) > 1:
                self._attribute_rule(node, parts)
            return
        base_len = len(self.b.original[root].split("."))
        q_parts = qualified.split(".")
        nodes = chain_nodes(node)
        for k in range(len(q_parts), base_len - 1, -1):
            old = ".".join(q_parts[:k])
            found = self.rules.new_name(old)
            if found is not None:
                new, rule = found
                target = nodes[k - base_len]
                replacement = self._spell(root, new)
                if self._code(target) != replacement:
                    if self.record(target, "rename", f"{old} -> {new}", rule, api=old, new=replacement):
                        self.replacements[id(target)] = make_dotted(replacement)
                        if not replacement.startswith(root + ".") and replacement != root:
                            self.touched.add(root)
                            self._need_root(new)
                            return
                self.uses[root] = self.uses.get(root, 0) + 1
                return
            unsupported = self.rules.unsupported_q.get(old)
            if unsupported is not None:
                self._finding(nodes[k - base_len], old, unsupported)
                break
        else:
            if len(parts) > 1:  # net.is_cuda with net imported: the attribute rule still applies
                self._attribute_rule(node, parts)
        self.uses[root] = self.uses.get(root, 0) + 1

    def _spell(self, root: str, new: str) -> str:
        """Spell a new qualified name, through the root's rewritten import when possible."""
        bound = self.b.rewritten.get(root) or self.b.original.get(root)
        if bound is not None and (new == bound or new.startswith(bound + ".")):
            return root + new[len(bound):]
        return new

    def _need_root(self, new: str) -> None:
        top = new.split(".")[0]
        if top != "torch_npu" and self.b.original.get(top) != top:
            self.needs_imports.add(top)

    def _attribute_rule(self, node: cst.BaseExpression, parts: list[str]) -> None:
        if not isinstance(node, cst.Attribute):
            return
        rule = self.rules.rename_attribute.get(parts[-1])
        if rule is not None:
            new = rule["new_name"].rsplit(".", 1)[-1]
            if self.record(node.attr, "method", f".{parts[-1]} -> .{new}", rule, api=parts[-1], new=new):
                self.replacements[id(node.attr)] = cst.Name(new)
        else:
            self._unsupported_attribute(node)

    def _unsupported_attribute(self, node: cst.Attribute) -> None:
        rule = self.rules.unsupported_attribute.get(node.attr.value)
        if rule is not None:
            self._member_finding(node.attr, rule, f".{node.attr.value}")

    def _member_finding(self, anchor: cst.CSTNode, rule: Rule, spelled: str) -> None:
        """A finding for an unsupported member matched by its name alone (``spelled``, e.g.
        ``.to_dense()``), on any object: the message says so when the rule names a class member."""
        self._finding(anchor, rule["name"], rule, matched=spelled if "." in rule["name"] else "")

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        new = self.replacements.get(id(original_node))
        if new is not None:
            return new
        if dotted_parts(original_node) is None:
            # attribute of a non-name expression: x().is_cuda
            rule = self.rules.rename_attribute.get(original_node.attr.value)
            if rule is not None:
                new_attr = rule["new_name"].rsplit(".", 1)[-1]
                if self.record(original_node.attr, "method", f".{original_node.attr.value} -> .{new_attr}", rule,
                               api=original_node.attr.value, new=new_attr):
                    return updated_node.with_changes(attr=cst.Name(new_attr))
            else:
                self._unsupported_attribute(original_node)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.replacements.get(id(original_node), updated_node)

    def _finding(self, anchor: cst.CSTNode, api: str, rule: Rule, *, matched: str = "") -> None:
        level = rule.get("level", "warning")
        kind = {"error": "no_counterpart", "warning": "unsupported", "note": "note"}[level]
        message = f"{api}: {rule.get('message', 'not supported on NPU')}"
        if matched:
            message += f" (matched by the name {matched}: applies if the object is a {api.rsplit('.', 2)[-2]})"
        self.record(anchor, kind, message, rule, api=api, level=level)

    # ---- calls

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        if is_device_template(original_node):  # "cuda:{}".format(i)
            return self._template(original_node, updated_node)
        qualified = self.resolve(func)
        # x.cuda() is a method call also when x comes from an import ("from models import net"),
        # unless a name rule rewrote the callee (torch.cuda.synchronize)
        method = (func.attr.value if isinstance(func, cst.Attribute)
                  and (qualified is None or id(func) not in self.replacements) else None)
        bare = None
        parts = dotted_parts(func)
        if parts is not None:
            bare = parts[-1]
        args = list(updated_node.args)
        changed = False

        rules_for_args: list[Rule] = []
        if qualified is not None:
            rules_for_args += self.rules.args_q.get(qualified, [])
            renamed = self.rules.new_name(qualified)
            if renamed is not None and renamed[0] != qualified:
                rules_for_args += [r for r in self.rules.args_q.get(renamed[0], []) if r not in rules_for_args]
        if bare is not None:
            rules_for_args += self.rules.args_bare.get(bare, [])
        if method is not None:
            rules_for_args += self.rules.args_method.get(method, [])
        for rule in rules_for_args:
            changed |= self._apply_args_rule(rule, original_node, args)

        device_rule = None
        if qualified is not None:
            device_rule = self.rules.device_q.get(qualified)
        if device_rule is None and method is not None:
            device_rule = self.rules.device_method.get(method)
        changed |= self._device_args(original_node, args, device_rule, bare)
        if self.rules.env:
            changed |= self._env_keywords(original_node, args)

        new_func = updated_node.func
        method_rule = self.rules.rename_method.get(method) if method is not None else None
        if method_rule is not None:
            new = method_rule["new_name"].rsplit(".", 1)[-1]
            if self.record(func.attr, "method", f".{method}() -> .{new}()", method_rule, api=method, new=new):
                new_func = new_func.with_changes(attr=cst.Name(new))
                changed = True
        elif method is not None and method in self.rules.unsupported_method and (
                qualified is None or qualified == self.rules.unsupported_method[method]["name"]):
            # "torch.Tensor.to_dense" matched as x.to_dense(): say so, the receiver is not checked.
            # A call through an import (torch.unique_consecutive, statistics.mode) is a function.
            rule = self.rules.unsupported_method[method]
            self._member_finding(func.attr, rule, f".{method}()" if qualified != rule["name"] else "")
        # A bare (seed-style) name matches the last name of a call: f(...), x.f(...), mod.f(...).
        # A plain f(...) whose f an import binds is left alone: renaming the call alone would break it.
        last = func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name) else None)
        if (method_rule is None and last is not None and last in self.rules.rename_bare
                and id(func) not in self.replacements and (isinstance(func, cst.Attribute) or qualified is None)):
            rule = self.rules.rename_bare[last]
            new = rule["new_name"]
            anchor = func.attr if isinstance(func, cst.Attribute) else func
            if self.record(anchor, "rename", f"{last} -> {new}", rule, api=last, new=new):
                if isinstance(new_func, cst.Name):
                    new_func = make_dotted(new)
                    if "." in new:
                        self._need_root(new)
                else:
                    new_func = new_func.with_changes(attr=cst.Name(new.rsplit(".", 1)[-1]))
                changed = True
        if not changed:
            return updated_node
        return updated_node.with_changes(func=new_func, args=args)

    def _env_keywords(self, call: cst.Call, args: list[cst.Arg]) -> bool:
        """``dict(os.environ, CUDA_VISIBLE_DEVICES="0")``, ``os.environ.update(CUDA_...=...)``."""
        changed = False
        for i, arg in enumerate(args):
            if arg.keyword is None or arg.keyword.value not in self.rules.env:
                continue
            old = arg.keyword.value
            rule = self.rules.env[old]
            if self.record(call.args[i].keyword, "env", f"{old} -> {rule['new_name']}", rule, api=old,
                           new=rule["new_name"]):
                args[i] = arg.with_changes(keyword=cst.Name(rule["new_name"]))
                changed = True
        return changed

    def _find_arg(self, args: list[cst.Arg], idx: int | None, names: Sequence[str]) -> int | None:
        positional = 0
        for i, arg in enumerate(args):
            if arg.star:
                if arg.star == "*":
                    positional = -10_000  # positions after *args are unknown
                continue
            if arg.keyword is None:
                if idx is not None and positional == idx:
                    return i
                positional += 1
            elif arg.keyword.value in names:
                return i
        return None

    def _apply_args_rule(self, rule: Rule, call: cst.Call, args: list[cst.Arg]) -> bool:
        names = [rule["arg_name"]] if rule.get("arg_name") else []
        i = self._find_arg(args, rule.get("arg_idx"), names)
        if i is None:
            return False
        arg = args[i]
        original_value = call.args[i].value
        new_text = rule["arg_new"]
        new_expr = self.expr(new_text)
        if rule.get("arg_old") is not None:
            replaced = replace_literal(arg.value, rule["arg_old"], self.expr(rule["arg_old"]), new_expr)
            if replaced is None:
                return False
        else:
            if self._code(arg.value).strip() == new_text.strip():
                return False
            replaced = new_expr
            old_value, new_value = string_value(arg.value), string_value(new_expr)
            if old_value is not None and new_value is not None:
                if old_value == new_value:
                    return False  # already the new value, in another quote style
                if isinstance(arg.value, cst.SimpleString) and new_value.isidentifier():
                    # keep the user's prefix and quote style
                    replaced = arg.value.with_changes(value=arg.value.prefix + arg.value.quote + new_value + arg.value.quote)
        new_keyword = rule.get("new_arg_name")
        label = f"{rule['func_name']}: argument {arg.keyword.value if arg.keyword else rule.get('arg_idx')}"
        if new_keyword and arg.keyword is None and i != len(args) - 1:
            # a positional argument followed by others cannot become a keyword: say what to do
            self.record(original_value, "unsupported", f"{label} is given by position before other arguments, so it "
                        f"cannot become {new_keyword}={new_text} here; rewrite the call with keywords", rule,
                        api=rule["func_name"], level="warning")
            return False
        if not self.record(original_value, "args", f"{label} -> {new_text}", rule, api=rule["func_name"],
                           new=code_of(replaced)):
            return False
        if new_keyword and (arg.keyword is None or arg.keyword.value != new_keyword):
            arg = arg.with_changes(keyword=cst.Name(new_keyword), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
        args[i] = arg.with_changes(value=replaced)
        for module in rule.get("imports", []):
            if self.b.original.get(module.split(".")[0]) is None:
                self.needs_imports.add(module)
        return True

    def _device_args(self, call: cst.Call, args: list[cst.Arg], rule: Rule | None, bare: str | None) -> bool:
        changed = False
        idx = rule.get("arg_idx") if rule is not None else None
        names = set(rule.get("arg_names", [])) if rule is not None else set()
        names |= GENERIC_DEVICE_KEYWORDS
        positional = 0
        given = False  # the call passes the rule's device argument
        for i, arg in enumerate(args):
            target = False
            if arg.keyword is None and not arg.star:
                target = rule is not None and idx is not None and positional == idx
                positional += 1
            elif arg.keyword is not None:
                kw = arg.keyword.value
                target = kw in names or (bare == "add_argument" and kw in ("default", "choices"))
            given = given or (rule is not None and target) or bool(arg.star)
            if not target and is_device_template(call.args[i].value):
                rule_here = None  # a computed device string given to any other argument
            elif not target:
                continue
            else:
                rule_here = rule
            new = rewrite_device_expr(arg.value)
            if new is not None and self.record(call.args[i].value, "device", "device string cuda -> npu", rule_here,
                                               new=code_of(new)):
                args[i] = arg.with_changes(value=new)
                changed = True
            elif new is None and bare == "add_argument" and arg.keyword is not None:
                # parser.add_argument("--dist-backend", default="nccl"): the value reaches
                # init_process_group(backend=...) later
                new = self._backend_value(arg.value, call.args[i].value)
                if new is not None:
                    args[i] = arg.with_changes(value=new)
                    changed = True
        if rule is not None and rule.get("default_cuda") and idx == 0 and not given:
            # torch.amp.GradScaler() means GradScaler("cuda"): say "npu"
            if self.record(call.func, "device", "device defaults to cuda: pass 'npu'", rule, new='"npu"'):
                first = cst.Arg(cst.SimpleString('"npu"'))
                if args:
                    first = first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.insert(0, first)
                changed = True
        return changed

    # ---- device strings outside calls: device = "cuda", x.device.type == "cuda", defaults

    def _device_target(self, node: cst.BaseExpression) -> bool:
        parts = dotted_parts(node)
        if not parts:
            return False
        if DEVICE_NAME.search(parts[-1]):
            return True
        return len(parts) >= 2 and parts[-1] == "type" and DEVICE_NAME.search(parts[-2]) is not None

    def _device_value(self, value: cst.BaseExpression, anchor: cst.BaseExpression) -> cst.BaseExpression | None:
        new = rewrite_device_expr(value)
        if new is not None and self.record(anchor, "device", "device string cuda -> npu", None,
                                           new=code_of(new)):
            return new
        return None

    def _backend_value(self, value: cst.BaseExpression, anchor: cst.BaseExpression) -> cst.BaseExpression | None:
        new = rewrite_backend_expr(value)
        if new is not None and self.record(anchor, "args", "collective backend nccl -> hccl", None,
                                           new=code_of(new)):
            return new
        return None

    def _named_value(self, name: str | None, value: cst.BaseExpression,
                     anchor: cst.BaseExpression) -> cst.BaseExpression | None:
        """The new value given to a variable, parameter or dict key called ``name``."""
        if name is None:
            return None
        if DEVICE_NAME.search(name):
            return self._device_value(value, anchor)
        if BACKEND_NAME.search(name):
            return self._backend_value(value, anchor)
        return None

    @staticmethod
    def _target_name(node: cst.BaseExpression) -> str | None:
        parts = dotted_parts(node)
        if not parts:
            return None
        if len(parts) >= 2 and parts[-1] == "type" and DEVICE_NAME.search(parts[-2]):
            return parts[-2]  # x.device.type
        return parts[-1]

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        for target in original_node.targets:
            new = self._named_value(self._target_name(target.target), updated_node.value, original_node.value)
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        if updated_node.value is not None:
            new = self._named_value(self._target_name(original_node.target), updated_node.value, original_node.value)
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        if updated_node.default is not None:
            new = self._named_value(original_node.name.value, updated_node.default, original_node.default)
            if new is not None:
                return updated_node.with_changes(default=new)
        return updated_node

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_keys.add(id(node.key))

    def leave_DictElement(self, original_node: cst.DictElement, updated_node: cst.DictElement) -> cst.DictElement:
        new = self._named_value(string_value(original_node.key), updated_node.value, original_node.value)
        if new is not None:
            return updated_node.with_changes(value=new)
        return updated_node

    # ---- computed device strings anywhere: f"cuda:{rank}", "cuda:{}".format(i), "cuda:%d" % i,
    # "cuda:" + str(i). They can only be devices; a dict key is left alone (map_location keys name
    # where a checkpoint was saved).

    def _template(self, original_node: cst.BaseExpression, updated_node: cst.BaseExpression) -> cst.BaseExpression:
        if (id(original_node) in self.dict_keys or id(original_node) in self.call_args
                or not is_device_template(original_node)):
            return updated_node
        new = self._device_value(updated_node, original_node)
        return new if new is not None else updated_node

    def leave_FormattedString(self, original_node: cst.FormattedString, updated_node: cst.FormattedString):
        return self._template(original_node, updated_node)

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation, updated_node: cst.BinaryOperation):
        return self._template(original_node, updated_node)

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.Comparison:
        left_is_device = self._device_target(original_node.left)
        new_left = updated_node.left
        targets = []
        for i, comp in enumerate(original_node.comparisons):
            if not isinstance(comp.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
                continue
            if left_is_device:
                targets.append(i)
            elif self._device_target(comp.comparator):
                new = self._device_value(updated_node.left, original_node.left)
                if new is not None:
                    new_left = new
        comparisons = list(updated_node.comparisons)
        for i in targets:
            new = self._device_value(comparisons[i].comparator, original_node.comparisons[i].comparator)
            if new is not None:
                comparisons[i] = comparisons[i].with_changes(comparator=new)
        return updated_node.with_changes(left=new_left, comparisons=comparisons)

    # ---- environment variable names in string literals

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        value = string_value(original_node)
        if value is not None and value in self.rules.env:
            rule = self.rules.env[value]
            if self.record(original_node, "env", f"{value} -> {rule['new_name']}", rule, api=value, new=rule["new_name"]):
                return replace_string(updated_node, value, rule["new_name"])
        elif value is not None and value.startswith(TYPE_STRING_PREFIX) and value.endswith("Tensor"):
            # legacy type names as strings: x.type("torch.cuda.HalfTensor"), x.type() == "...",
            # torch.set_default_tensor_type("torch.cuda.FloatTensor"); torch_npu registers them
            # as "torch.npu.<Type>"
            rule = self.rules.rename_q.get(value)
            new_name = rule["new_name"] if rule is not None else ""
            if new_name.startswith("torch_npu.npu.") and "." not in new_name[len("torch_npu.npu."):]:
                new = "torch.npu." + new_name[len("torch_npu.npu."):]
                if self.record(original_node, "rename", f"{value} -> {new}", rule, api=value, new=new):
                    return replace_string(updated_node, value, new)
        return updated_node

    # ---- imports

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        plans = [(i, self.b.plans.get(id(s))) for i, s in enumerate(original_node.body)]
        if not any(p is not None for _, p in plans):
            return updated_node
        new_body: list[cst.BaseSmallStatement] = []
        for (i, plan), small in zip(plans, updated_node.body):
            original_small = original_node.body[i]
            if plan is not None and self.record(original_small, "import", plan.message, None,
                                                needs_npu=plan.needs_npu):
                new_body.extend(plan.new_nodes)
            else:
                new_body.append(small)
        if len(new_body) == len(updated_node.body):
            return updated_node.with_changes(body=new_body)
        if len(original_node.body) == 1:
            lines = [updated_node.with_changes(body=[new_body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])]
            lines += [cst.SimpleStatementLine(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]) for s in new_body[1:]]
            return cst.FlattenSentinel(lines)
        fixed = [s.with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
                 for s in new_body[:-1]] + [new_body[-1]]
        return updated_node.with_changes(body=fixed)


class _ImportPruner(cst.CSTTransformer):
    """Removes import aliases whose every reference was rewritten to the new namespace."""

    def __init__(self, unused: set[str], bindings: Bindings, replace_torch_cuda: bool) -> None:
        super().__init__()
        self.unused = unused
        self.plain_torch = any(
            isinstance(n, cst.Import) and any(a.asname is None and import_module_name(a.name) == "torch" for a in n.names)
            for n in bindings.import_nodes
        )
        self.replace_torch_cuda = replace_torch_cuda
        self.removed: list[str] = []

    def notes_for(self, node: cst.Import | cst.ImportFrom) -> list[str]:
        """What pruning does to one import statement (run on the original statements, in order)."""
        before = len(self.removed)
        if isinstance(node, cst.Import):
            self.leave_Import(node, node)
        else:
            self.leave_ImportFrom(node, node)
        return self.removed[before:]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement)) and not isinstance(node, (cst.Import, cst.ImportFrom)):
            return False
        return super().on_visit(node)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        keep = []
        for alias in updated_node.names:
            module = import_module_name(alias.name)
            local = import_asname(alias)
            if local is not None and local in self.unused:
                self.removed.append(f"import {module} as {local}")
                continue
            if local is None and self.replace_torch_cuda and _is_torch_cuda(module):
                if self.plain_torch:
                    self.removed.append(f"import {module}")
                    continue
                self.removed.append(f"import {module} -> import torch")
                alias = alias.with_changes(name=cst.Name("torch"))
                self.plain_torch = True
            keep.append(alias)
        if not keep:
            return cst.RemoveFromParent()
        return updated_node.with_changes(names=_fix_commas(keep, updated_node.names if len(keep) == len(updated_node.names) else None))

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        keep = []
        for alias in updated_node.names:
            local = import_asname(alias) or (
                alias.name.value if isinstance(alias.name, cst.Name) else None)
            if local is not None and local in self.unused:
                self.removed.append(f"from {import_module_name(updated_node.module)} import {local}")
                continue
            keep.append(alias)
        if not keep:
            return cst.RemoveFromParent()
        if len(keep) == len(updated_node.names):
            return updated_node
        return updated_node.with_changes(names=_fix_commas(keep))

    # A statement line whose imports were all removed becomes a placeholder here and is dropped by
    # its block, which hands the comments above it to the next statement (or to its footer).

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not updated_node.body:
            return updated_node.with_changes(body=[cst.Expr(cst.Name(_REMOVED))])
        return updated_node

    def leave_IndentedBlock(self, original_node, updated_node):
        body, footer = _drop_empty_lines(updated_node.body, updated_node.footer)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=footer)]
            footer = []
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node, updated_node):
        body, footer = _drop_empty_lines(updated_node.body, updated_node.footer)
        return updated_node.with_changes(body=body, footer=footer)


_REMOVED = "__transplant_removed_import__"


def _is_removed(stmt: cst.BaseStatement) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.Name) and stmt.body[0].value.value == _REMOVED)


def _drop_empty_lines(body: Sequence[cst.BaseStatement], footer: Sequence[cst.EmptyLine]):
    if not any(_is_removed(s) for s in body):
        return list(body), list(footer)
    out: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    for stmt in body:
        if _is_removed(stmt):
            if any(line.comment is not None for line in stmt.leading_lines):
                carry += stmt.leading_lines  # keep the comments (and their spacing)
            continue
        if carry:
            stmt = stmt.with_changes(leading_lines=[*carry, *stmt.leading_lines])
            carry = []
        out.append(stmt)
    return out, [*carry, *footer]


def _insertion_index(body: Sequence[cst.BaseStatement]) -> int:
    """Where new imports go: after the docstring and ``__future__`` imports, and after the first
    top-level import of torch when there is one."""
    index = 0
    while index < len(body) and (is_docstring_stmt(body[index]) and index == 0 or is_future_import(body[index])):
        index += 1
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            (isinstance(s, cst.Import) and any(import_module_name(a.name).split(".")[0] in ("torch", "torch_npu") for a in s.names))
            or (isinstance(s, cst.ImportFrom) and s.module is not None and not s.relative
                and import_module_name(s.module).split(".")[0] in ("torch", "torch_npu"))
            for s in stmt.body
        ):
            index = max(index, i + 1)
            break
    return index


def _is_torch_cuda(module: str) -> bool:
    return module == "torch.cuda" or module.startswith("torch.cuda.")


def _imports_torch_cuda(bindings: Bindings) -> bool:
    """Is there a plain ``import torch.cuda...`` (one the import pruner may rewrite)?"""
    return any(isinstance(n, cst.Import) and any(a.asname is None and _is_torch_cuda(import_module_name(a.name))
                                                 for a in n.names) for n in bindings.import_nodes)


def _insertion_anchor(body: Sequence[cst.BaseStatement], index: int) -> list[cst.CSTNode]:
    """The original statement new imports follow (its first small statement, so that its line is
    not that of the blank lines and comments above it), if any; ``index`` is _insertion_index."""
    if index == 0:
        return []
    anchor = body[index - 1]
    if isinstance(anchor, cst.SimpleStatementLine) and anchor.body:
        anchor = anchor.body[0]
    return [anchor]


def _insert_imports(module: cst.Module, names: Sequence[str], anchor_code: str | None) -> cst.Module:
    """Insert ``import NAME`` lines after the converted form of the original anchor statement.

    ``anchor_code`` is the source of the original statement the imports follow (None: at the top).
    It is usually unchanged by the conversion and found as it is; when it was rewritten (a
    ``from torch.cuda...`` import, say), the anchor is looked for again in the converted body.
    """
    body = list(module.body)
    index = 0
    if anchor_code is not None:
        found = next((i + 1 for i, stmt in enumerate(body) if module.code_for_node(stmt) == anchor_code), None)
        index = found if found is not None else _insertion_index(body)
    new_lines = [cst.SimpleStatementLine([cst.Import([cst.ImportAlias(make_dotted(n))])]) for n in names]
    return module.with_changes(body=body[:index] + new_lines + body[index:])


# --------------------------------------------------------------------------- entry point


def parse(source: bytes) -> cst.Module:
    """The libcst module of ``source``; SourceError when it cannot be parsed."""
    check_nesting(source, None)
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython places syntax errors precisely (libcst often points at the next token); ask it
        try:
            compile(source, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as err:
            if err.lineno:
                raise SourceError(f"syntax error: {err.msg}", err.lineno, err.offset or 1) from None
        except (ValueError, RecursionError, MemoryError):
            pass
        raise SourceError(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(f"cannot decode source: {exc}") from None
    except RecursionError:
        raise SourceError("source is nested too deeply to parse") from None


def check_nesting(text: bytes, skel: Skeleton | None) -> None:
    """Raise SourceError when libcst's native parser would overflow the C stack (SIGSEGV) on
    ``text``: the source, or the skeleton ``skel`` of one (the error names the source line)."""
    deep = nesting_error(text)
    if deep is not None:
        line = skel.line(deep[1]) if skel is not None else deep[1]
        raise SourceError(f"source is nested too deeply to parse: {deep[0]}", line)


def skipped_lines(source: bytes) -> set[int]:
    if b"transplant:" not in source:
        return set()
    return {i + 1 for i, line in enumerate(source.splitlines()) if SKIP_LINE.search(line)}


class _Unfold(Exception):
    """The skeleton cannot settle this file: convert it whole."""


def convert(source: bytes, rules: RuleSet) -> Conversion:
    """Convert one Python source. Raises SourceError when it does not parse."""
    if skips_file(source):
        return Conversion(None, [])
    code, footer = _split_footer(source)
    result = _convert_source(code, rules)
    if result.new is not None:
        result.new += footer
    return result


def _split_footer(source: bytes) -> tuple[bytes, bytes]:
    """``source`` as (code, footer) where the footer is the comment and blank lines at its end,
    when one of them is an indented comment: libcst (1.9) keeps only the last of several
    indented comments that end a module. The footer is put back as it is. (In a skeleton this
    is common: a folded last function leaves the comments at the end of its body there.)"""
    lines = source.splitlines(keepends=True)
    start = len(lines)
    while start > 0 and lines[start - 1].strip(b" \t\f\r\n")[:1] in (b"", b"#"):
        start -= 1
    footer = lines[start:]
    if not any(line[:1] in (b" ", b"\t", b"\f") and line.lstrip(b" \t\f").startswith(b"#") for line in footer):
        return source, b""
    return b"".join(lines[:start]), b"".join(footer)


def _convert_source(source: bytes, rules: RuleSet) -> Conversion:
    skip = skipped_lines(source)
    result = None
    skel = skeleton(source, rules)  # (CPython's parser raises, never crashes, on deep nesting)
    if skel is not None:
        check_nesting(skel.text, skel)  # only the skeleton reaches libcst's parser
        try:
            result = _convert(cst.parse_module(skel.text), rules, skip, skel)
        except (_Unfold, cst.ParserSyntaxError):
            result = None  # (a parse error is reported by parsing the whole source)
    if result is None:
        result = _convert(parse(source), rules, skip, None, source)
    if result.new is not None and source.endswith(b"\r") and not result.new.endswith(b"\r"):
        # libcst drops a final lone "\r" (old Mac line endings); put it back
        result.new += b"\r"
    return result


def _convert(module: cst.Module, rules: RuleSet, skip: set[int], skel: Skeleton | None,
             source: bytes | None = None) -> Conversion:
    """Convert a parsed module: the skeleton ``skel`` of a source, or (skel None) the source
    ``source`` itself. Records on lines with a skip comment are dropped with what they change."""
    excluded: set[int] = set()
    for _attempt in range(3):
        result, hit = _convert_once(module, rules, excluded, skip, skel, skel.text if skel is not None else source)
        if not hit:
            break
        excluded |= hit
    return result


def _convert_once(module: cst.Module, rules: RuleSet, excluded: set[int], skip: set[int],
                  skel: Skeleton | None = None, source: bytes | None = None) -> tuple[Conversion, set[int]]:
    """One conversion of ``module``, whose source is ``source`` (when known)."""
    bindings = analyse_imports(module, rules)
    for node in bindings.import_nodes:
        plan = bindings.plans.get(id(node))
        if plan is not None and id(node) in excluded:
            del bindings.plans[id(node)]
            for name in plan.names:
                bindings.rewritten.pop(name, None)
    conv = Converter(module, rules, bindings, excluded)
    try:
        new_module = module.visit(conv)
    except RecursionError:
        raise SourceError("source is nested too deeply to convert") from None
    unused = {name for name in conv.touched if conv.uses.get(name, 0) == 0}
    if skel is not None and _used_in_folds(unused, skel):
        raise _Unfold
    pending = conv.pending
    if not pending:
        return Conversion(None, []), set()

    # one pass of code generation places the records, the imports that may be removed, and the
    # statement new imports follow
    index = _insertion_index(module.body)
    anchor = _insertion_anchor(module.body, index)
    if not any(p.level == "fix" for p in pending):  # findings only: nothing is rewritten
        positions, original_bytes = node_positions(module, [p.anchor for p in pending]), b""
    elif source is not None and not source.endswith(b"\r"):
        # libcst gives back the source byte for byte (but for a final lone "\r"): module.bytes
        # is the source, and code generation can stop once the last record is placed
        positions = node_positions(module, [*(p.anchor for p in pending), *bindings.import_nodes, *anchor])
        original_bytes = source
    else:
        positions, original_code = positions_and_code(module, [*(p.anchor for p in pending), *bindings.import_nodes,
                                                               *anchor])
        original_bytes = original_code.encode(module.encoding)
    if skel is not None:
        positions = {key: skel.position(pos) for key, pos in positions.items()}
    hit = {id(p.anchor) for p in pending if positions.get(id(p.anchor), (0,))[0] in skip}
    if hit:
        return Conversion(None, []), hit

    records = [
        dataclasses.replace(p.record, **dict(zip(("line", "col", "end_line", "end_col"),
                                                 positions.get(id(p.anchor), (1, 1, 1, 1)))),
                            old=_first_line(module.code_for_node(p.anchor)))
        for p in pending
    ]
    if not any(r.is_change for r in records):
        return Conversion(None, sorted(records, key=_order)), set()

    # imports are added before pruning, so an anchor statement that pruning removes is still there
    to_import = [name for name in sorted(conv.needs_imports) if not _imports_module(bindings, name)]
    if conv.needs_npu and not _imports_module(bindings, "torch_npu"):
        # torch_npu right after torch when both are added
        to_import.insert(1 if to_import[:1] == ["torch"] else 0, "torch_npu")
    if to_import:
        new_module = _insert_imports(new_module, to_import,
                                     module.code_for_node(module.body[index - 1]) if index > 0 else None)
        line = positions.get(id(anchor[0]), (1,))[0] if anchor else 1  # of the statement they follow
        for name in to_import:
            records.append(Record(line, 1, line, 1, CODES["import"], "fix", OPERATION["import"],
                                  f"add import {name}", "builtin", api=name, new=f"import {name}"))
    replace_torch_cuda = any(r.is_change and r.api.startswith("torch.cuda") for r in records)
    if unused or (replace_torch_cuda and _imports_torch_cuda(bindings)):  # else the pruner has nothing to remove
        pruner = _ImportPruner(unused, bindings, replace_torch_cuda)
        new_module = new_module.visit(pruner)
        if pruner.removed:
            # the same decisions, replayed on the original statements to place one record on each
            replay = _ImportPruner(unused, bindings, replace_torch_cuda)
            notes = [(n, replay.notes_for(n)) for n in bindings.import_nodes]
            notes = [(n, found) for n, found in notes if found]
            for node, found in notes:
                line = positions.get(id(node), (1, 1, 1, 1))
                records.append(Record(*line, code=CODES["import"], level="fix", operation=OPERATION["import"],
                                      message="remove import of the old namespace: " + "; ".join(found),
                                      rule="builtin", old=_first_line(module.code_for_node(node))))
    new_bytes = new_module.bytes
    if new_bytes == original_bytes:  # module.bytes, without generating it again
        return Conversion(None, sorted([r for r in records if not r.is_change], key=_order)), set()
    if skel is not None:
        new_bytes = skel.restore(new_bytes)
        if new_bytes is None:  # a marker line went missing or was duplicated
            raise _Unfold
    return Conversion(new_bytes, sorted(records, key=_order)), set()


def _used_in_folds(unused: set[str], skel: Skeleton) -> bool:
    """Might an import whose every use in the skeleton was rewritten away (``unused``) still be
    used in a folded statement? Only the whole source can count its uses then."""
    return any(name.encode() in words for name in unused for words in skel.words)


def _imports_module(bindings: Bindings, name: str) -> bool:
    return bindings.original.get(name.split(".")[0]) == name.split(".")[0] and (
        "." not in name or any(
            isinstance(n, cst.Import) and any(import_module_name(a.name) == name for a in n.names)
            for n in bindings.import_nodes)
    )


def _first_line(code: str) -> str:
    code = code.strip()
    return code.splitlines()[0] if code else ""


def _order(r: Record) -> tuple[int, int, str]:
    return (r.line, r.col, r.code)
