"""Device tests and the code they choose: which tests guard CUDA-only code.

A device test is an expression with a CUDA marker in it: ``<any>.is_cuda``, a comparison with
``"cuda"``/``"cuda:N"``, ``<any>.startswith("cuda")``, or ``torch.cuda.is_available()`` /
``device_count()`` / ``is_initialized()``; ``not``, ``!=`` and ``not in`` turn it around. A *site* is
where such a test chooses code:

* ``if``/``elif``/``while`` tests: the CUDA branch is the body (or, turned around, the ``else`` and,
  when the body leaves the block with return/raise/continue/break, the statements after it);
* conditional expressions (``a if x.is_cuda else b``);
* ``assert x.is_cuda`` and ``if x.device.type != "cuda": raise ...``: the rest of the block (an
  assertion in a class's ``__init__``: the class's other methods too, the object it builds);
* ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)`` (and ``unittest.skipIf``/``skipUnless``)
  on a test function or class: its body; ``pytestmark = pytest.mark.skipif(...)``: the module;
* a flag, ``cuda = torch.cuda.is_available()``: the code its tests choose in the same scope;
* a predicate function (``def use_fused(x): return x.is_cuda and ...``) called in such a test: its
  own device tests go with the test that calls it.

The test itself belongs to what it chooses (``x.is_cuda and _init()``). Each site whose chosen code
reaches CUDA-only code (reach.py) is a :class:`Kept` test.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ..project.pynames import qualify, walk
from .cuda_state import cuda_only_attributes
from .reach import Reach, Reason, tool_string

CUDA_STRING = re.compile(r"^cuda(?::\d+)?$")
DEVICE_WORD = re.compile(r"(?i)dev|^type$|accelerator|backend")
CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.is_initialized"})
SKIPS = {"skipif": False, "skipIf": False, "skipUnless": True}  # decorator -> its condition says "run"
LEAVES = (ast.Return, ast.Raise, ast.Continue, ast.Break)
PREDICATE_LINES = 40  # a predicate is a short function that ends by returning its answer


@dataclass
class Kept:
    """A device test kept as CUDA, the kind of site it is, and the CUDA-only code it chooses."""

    node: ast.expr  # what stays as it is (a test, a flag's value, a predicate's test)
    kind: str  # branch | assert | raise | skip | flag | predicate | disable
    reasons: list[Reason]
    flag: str = ""
    also: list[ast.expr] = field(default_factory=list)  # predicates' tests that go with it
    region: list[ast.AST] = field(default_factory=list)  # the code it chooses


class Sites:
    def __init__(
        self, tree: ast.Module, names: dict[str, str], reach: Reach, nodes: list[ast.AST], lines: list[bytes]
    ) -> None:
        self.lines = lines  # the source's lines: a test is read only where a line of it says "cuda"
        # "cuda", and the names imports bind to torch.cuda (import torch.cuda as tc; from torch.cuda import ...)
        self.words: tuple[bytes, ...] = (
            b"cuda",
            *(
                local.encode()
                for local, qualified in names.items()
                if qualified.startswith("torch.cuda") and "cuda" not in local
            ),
        )
        self.tree = tree
        self.names = names
        self.reach = reach
        self.kept: list[Kept] = []
        self.after: dict[int, list[ast.stmt]] = {}  # an if whose body leaves its block -> the statements after it
        self.constructors: dict[int, list[ast.stmt]] = {}  # a class's __init__ body -> the class's other methods
        self.nodes = nodes
        self.tests = [n for n in nodes if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert))]
        for node in nodes:
            if not isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case, ast.Module)):
                continue
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list):
                    for i, stmt in enumerate(block):
                        if isinstance(stmt, ast.If) and isinstance(stmt.body[-1], LEAVES):
                            self.after[id(stmt)] = block[i + 1 :]
        self.predicates: dict[str, list[ast.expr]] = {}  # module-level function -> its device tests
        for stmt in tree.body:
            if not (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                and isinstance(stmt.body[-1], ast.Return)
                and (stmt.end_lineno or stmt.lineno) - stmt.lineno <= PREDICATE_LINES
                and self.may(stmt)
            ):
                continue
            # its answer: what it returns, and the tests of branches that return a constant
            # (``if x.is_cuda: return True``); a function that only branches on the device inside
            # (``if x.is_cuda: y = kernel(x)`` ... ``return y``) is no predicate, its result no flag
            tests = [
                n.test if isinstance(n, ast.If) else n.value
                for n in walk(stmt)
                if isinstance(n, ast.Return) or isinstance(n, ast.If) and _answers(n)
            ]
            found = [t for t in tests if t is not None and self.signs(t)]
            if found:
                self.predicates[stmt.name] = found
        self.words += tuple(name.encode() for name in self.predicates)

    def may(self, node: ast.expr | ast.stmt) -> bool:
        """Can ``node`` hold a device test? (its lines spell "cuda" or a predicate's name)"""
        end = getattr(node, "end_lineno", None) or node.lineno
        return any(word in line for line in self.lines[node.lineno - 1 : end] for word in self.words)

    # ---- device tests

    def marker(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == "is_cuda"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "startswith" and node.args:
                return any(_cuda_string(n) for n in walk(node.args[0]))
            return qualify(func, self.names) in CUDA_QUERIES
        return False

    def is_test(self, node: ast.AST) -> bool:
        """A CUDA marker (``x.is_cuda``, ``torch.cuda.is_available()``, ...) or a call of a predicate
        function of this module."""
        return self.marker(node) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in self.predicates
            and node.func.id not in self.names
        )

    def signs(self, node: ast.AST, sign: int = 1, flags: frozenset[str] = frozenset()) -> set[int]:
        """The directions of the CUDA markers in a test: 1 where true means CUDA, -1 where it means
        not CUDA. A name in ``flags`` is a marker too, and so is a call of a predicate function."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.signs(node.operand, -sign, flags)
        if isinstance(node, ast.BoolOp):
            return {s for v in node.values for s in self.signs(v, sign, flags)}
        if isinstance(node, ast.Compare):
            out: set[int] = set()
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                negated = isinstance(op, (ast.NotEq, ast.NotIn, ast.IsNot))
                if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) and (
                    _cuda_string(left) and _device_like(right) or _cuda_string(right) and _device_like(left)
                ):
                    out.add(-sign if negated else sign)
                elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) and _boolean(right) is not None:
                    flip = negated == _boolean(right)  # "is False", "is not True", "== False"
                    out |= self.signs(left, -sign if flip else sign, flags)
                else:
                    for side in (left, right):
                        out |= self.signs(side, sign, flags) if not _constant(side) else set()
            return out
        if self.is_test(node) or (isinstance(node, ast.Name) and node.id in flags):
            return {sign}
        if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.NamedExpr)):
            return {s for child in ast.iter_child_nodes(node) for s in self.signs(child, sign, flags)}
        return set()

    def spelling(self, test: ast.AST) -> str:
        """How ``test`` tests for CUDA, as the API column of its finding (``torch.cuda.is_available``,
        ``Tensor.is_cuda``, ``device == "cuda"``, ``str.startswith("cuda")``), or ``flag`` for a flag."""
        for node in walk(test):
            if isinstance(node, ast.Attribute) and node.attr == "is_cuda":
                return "Tensor.is_cuda"
            if isinstance(node, ast.Call):
                qualified = qualify(node.func, self.names)
                if qualified in CUDA_QUERIES:
                    return qualified
                if isinstance(node.func, ast.Attribute) and node.func.attr == "startswith" and self.marker(node):
                    return 'str.startswith("cuda")'
            if isinstance(node, ast.Compare) and any(_cuda_string(n) for n in (node.left, *node.comparators)):
                return 'device == "cuda"'
        return "device test"

    # ---- sites

    def find(self) -> list[Kept]:
        self._find()
        # state only the kept CUDA paths set (cuda_state.py): the tests that choose it are found again
        states = cuda_only_attributes(self.nodes, [k.region for k in self.kept if k.kind != "skip"])
        if states:
            self.reach.know_states(states)
            self.kept = []
            self._find()
        return self.kept

    def _find(self) -> None:
        self._block(self.tree.body, None, self.tree.body)
        spelled: dict[int, list[Reason]] = {}
        for node in self.nodes:
            if isinstance(node, ast.JoinedStr):
                spelled.update(self._spelled(node))
            elif isinstance(node, ast.IfExp):
                signs = self.signs(node.test) if self.may(node.test) else set()
                if signs:
                    self._keep(
                        node.test, "branch", [node.test, *self._chosen(node, signs)], None, spelled.get(id(node), [])
                    )

    def _spelled(self, text: ast.JoinedStr) -> dict[int, list[Reason]]:
        """``f"tensorflow{'' if torch.cuda.is_available() else '-cpu'}"``: the package a conditional
        expression spells together with the f-string around it (id of the expression -> reasons)."""
        out: dict[int, list[Reason]] = {}
        for i, part in enumerate(text.values):
            choice = part.value if isinstance(part, ast.FormattedValue) else None
            if not isinstance(choice, ast.IfExp):
                continue
            signs = self.signs(choice.test) if self.may(choice.test) else set()
            if not signs:
                continue
            head = "".join(v.value for v in text.values[:i] if isinstance(v, ast.Constant) and isinstance(v.value, str))
            tail = "".join(
                v.value for v in text.values[i + 1 :] if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            chosen = [choice.body] if 1 in signs else []
            chosen += [choice.orelse] if -1 in signs else []
            for option in chosen:
                if isinstance(option, ast.Constant) and isinstance(option.value, str):
                    found = tool_string(head + option.value + tail, f"line {text.lineno}")
                    if found is not None:
                        out.setdefault(id(choice), []).append(found)
        return out

    def _block(self, body: list[ast.stmt], klass: str | None, scope: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            rest = body[i + 1 :]
            if isinstance(stmt, (ast.If, ast.While)):
                signs = self.signs(stmt.test) if self.may(stmt.test) else set()
                if signs:
                    raises = -1 in signs and isinstance(stmt.body[-1], ast.Raise)
                    kind = ("skip" if _skips(stmt.body[-1]) else "raise") if raises else "branch"
                    self._keep(stmt.test, kind, [stmt.test, *self._chosen(stmt, signs)], klass)
                    if signs == {-1} and isinstance(stmt, ast.If) and not self.kept_last(stmt.test):
                        self._disables(stmt, klass)
            elif isinstance(stmt, ast.Assert):
                if self.may(stmt.test) and 1 in self.signs(stmt.test):
                    # in a constructor, the object it builds: the class's other methods too
                    self._keep(stmt.test, "assert", [stmt.test, *rest, *self.constructors.get(id(body), [])], klass)
            elif isinstance(stmt, ast.Assign):
                self._assignment(stmt, klass, scope)
            if isinstance(stmt, ast.ClassDef):
                for method in stmt.body:
                    if isinstance(method, ast.FunctionDef) and method.name == "__init__":
                        self.constructors[id(method.body)] = [m for m in stmt.body if m is not method]
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = stmt.name if isinstance(stmt, ast.ClassDef) else klass
                self._skips(stmt, stmt.body, inner)
                self._block(stmt.body, inner, stmt.body if not isinstance(stmt, ast.ClassDef) else scope)
                continue
            for name in ("body", "orelse", "finalbody"):
                child = getattr(stmt, name, None)
                if isinstance(child, list) and child and isinstance(child[0], ast.stmt):
                    self._block(child, klass, scope)
            for handler in getattr(stmt, "handlers", []):
                self._block(handler.body, klass, scope)
            for case in getattr(stmt, "cases", []):
                self._block(case.body, klass, scope)

    def kept_last(self, test: ast.expr) -> bool:
        return bool(self.kept) and self.kept[-1].node is test

    def _disables(self, stmt: ast.If, klass: str | None) -> None:
        """``if device != "cuda": warn(...); fp8 = False``: what the body turns off on other devices is
        CUDA-only when the code its tests choose (``if fp8:``, ``self.fp8 and ...``, anywhere in the file)
        reaches CUDA-only code; then the test stays a CUDA test, or an NPU run would turn it on."""
        flags = {name for target in _off_targets(stmt.body) if (name := flag_name(target))}
        if not flags:
            return
        region: list[ast.AST] = [stmt.test]
        for node in self.tests:
            if node is stmt:
                continue
            signs = _flag_signs(node.test, flags)
            if signs:
                region += self._chosen(node, signs)
        if len(region) > 1:
            self._keep(stmt.test, "disable", region, klass, flag=", ".join(sorted(flags)))

    def _skips(self, node: ast.AST, body: list[ast.stmt], klass: str | None) -> None:
        for decorator in getattr(node, "decorator_list", []):
            cond = _skip_condition(decorator)
            if cond is not None and self.may(cond) and self.signs(cond):
                self._keep(cond, "skip", [cond, *body], klass)

    def _assignment(self, stmt: ast.Assign, klass: str | None, scope: list[ast.stmt]) -> None:
        if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            for mark in stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]:
                cond = _skip_condition(mark)
                if cond is not None and self.may(cond) and self.signs(cond):
                    self._keep(cond, "skip", [cond, *self.tree.body], None)
            return
        if len(stmt.targets) != 1:
            return
        for target, value in _unpacked(stmt.targets[0], stmt.value):
            if not isinstance(value, ast.IfExp) and self.may(value) and self.signs(value) == {1}:
                self._flag(target.id, value, klass, scope)

    def _flag(self, flag: str, value: ast.expr, klass: str | None, scope: list[ast.stmt]) -> None:
        """``flag = x.is_cuda``: a flag whose tests in ``scope`` choose code, like the test itself."""
        flags = frozenset({flag})
        region: list[ast.AST] = [value]
        first, last = scope[0].lineno, scope[-1].end_lineno or scope[-1].lineno
        word = flag.encode()
        for node in self.tests:  # the tests of the scope that read the flag
            test = node.test
            if not (first <= node.lineno <= last) or not any(
                word in line for line in self.lines[test.lineno - 1 : test.end_lineno or test.lineno]
            ):
                continue
            if any(isinstance(n, ast.Name) and n.id == flag for n in walk(test)):
                region += [test, *self._chosen(node, self.signs(test, 1, flags))]
        self._keep(value, "flag", region, klass, flag=flag)

    def _chosen(self, node: ast.If | ast.While | ast.IfExp | ast.Assert, signs: set[int]) -> list[ast.AST]:
        """What a test of ``node`` chooses when it finds CUDA (1 in ``signs``) or not CUDA (-1): the
        body, or the else branch and, when the body leaves the block, the statements after it."""
        if isinstance(node, ast.Assert):
            return []
        if isinstance(node, ast.IfExp):
            return [*([node.body] if 1 in signs else []), *([node.orelse] if -1 in signs else [])]
        chosen: list[ast.AST] = list(node.body) if 1 in signs else []
        if -1 in signs:
            chosen += [*node.orelse, *self.after.get(id(node), [])]
        return chosen

    def _keep(
        self,
        node: ast.expr,
        kind: str,
        region: list[ast.AST],
        klass: str | None,
        extra: list[Reason] | None = None,
        flag: str = "",
    ) -> None:
        # a skip mark's region is a whole test: what its code calls in the project's other modules is
        # not followed (a test names half the project; the kernels its own file calls are enough)
        reasons = [*(extra or []), *self.reach.reasons(region, klass, cross=kind != "skip")]
        if kind in ("assert", "raise"):
            # a precondition kept only moves the failure unless what it protects cannot run on an NPU at all;
            # a capability probe after it fails by itself (probes.py reports it)
            reasons = [r for r in reasons if r.kind != "capability"]
            if kind == "assert":  # (what a failed assertion leaves unset is not what it protects)
                reasons = [r for r in reasons if r.kind != "state"]
        if not reasons:
            return
        also = [
            t
            for n in walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id not in self.names
            for t in self.predicates.get(n.func.id, [])
        ]
        self.kept.append(Kept(node, kind, reasons, flag, also, region))


def _answers(stmt: ast.If) -> bool:
    """Does a branch of ``stmt`` return a constant (True, False, None, a number or a string)?"""
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Constant) for n in (*stmt.body, *stmt.orelse))


def _skips(stmt: ast.stmt) -> bool:
    """``raise unittest.SkipTest(...)`` (or ``pytest.skip.Exception``): a test skipped, not a failure."""
    exc = stmt.exc if isinstance(stmt, ast.Raise) else None
    if isinstance(exc, ast.Call):
        exc = exc.func
    name = exc.attr if isinstance(exc, ast.Attribute) else exc.id if isinstance(exc, ast.Name) else ""
    return name == "SkipTest" or (name == "Exception" and "skip" in ast.unparse(exc or ast.Pass()))


def _off_targets(body: list[ast.stmt]) -> list[ast.expr]:
    """The names and attributes a block sets to False, None or 0 (``fp8 = False``, ``self.use_fp8 =
    None``, ``args.fp8 = False``), when that, warnings and logging are all it does."""
    out: list[ast.expr] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and not stmt.value.value:
            out += stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.Constant) and not stmt.value.value:
            out.append(stmt.target)
        elif not (
            isinstance(stmt, (ast.Expr, ast.Pass)) and (isinstance(stmt, ast.Pass) or isinstance(stmt.value, ast.Call))
        ):
            return []  # a block that does more than turn something off is a branch of its own
    return out


def flag_name(target: ast.AST) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def _flag_signs(test: ast.expr, flags: set[str], sign: int = 1) -> set[int]:
    """Where ``test`` reads one of ``flags`` as a truth value: 1 where true means the flag is on."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flag_signs(test.operand, flags, -sign)
    if isinstance(test, ast.BoolOp):
        return {s for v in test.values for s in _flag_signs(v, flags, sign)}
    if isinstance(test, (ast.Name, ast.Attribute)) and flag_name(test) in flags:
        return {sign}
    return set()


def _unpacked(target: ast.expr, value: ast.expr) -> list[tuple[ast.Name, ast.expr]]:
    """The names an assignment binds with the value each gets: ``flag = v``, and the elements of
    ``a, flag, d = *shape, x.is_cuda, x.device`` that line up (counted from the end after a starred
    value)."""
    if isinstance(target, ast.Name):
        return [(target, value)]
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))):
        return []
    names, values = target.elts, value.elts
    if any(isinstance(n, ast.Starred) for n in names):
        return []
    starred = [i for i, v in enumerate(values) if isinstance(v, ast.Starred)]
    if not starred and len(names) != len(values):
        return []
    # the values after the last starred one line up with the last names; before the first, with the first
    last = starred[-1] if starred else -1
    first = starred[0] if starred else len(values)
    pairs = list(zip(names[:first], values[:first]))
    tail = len(values) - last - 1
    if tail:
        pairs += list(zip(names[-tail:], values[last + 1 :]))
    return [(n, v) for n, v in pairs if isinstance(n, ast.Name)]


def _cuda_string(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return CUDA_STRING.match(node.value) is not None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_cuda_string(e) for e in node.elts)
    return False


def _device_like(node: ast.AST) -> bool:
    """Does an operand compared with "cuda" name a device (``device``, ``args.dev``, ``x.device.type``,
    ``str(x.device)``)? ``impl in ["ref", "cuda"]`` chooses an implementation, not a device."""
    return any(
        isinstance(n, ast.Name)
        and DEVICE_WORD.search(n.id)
        or isinstance(n, ast.Attribute)
        and DEVICE_WORD.search(n.attr)
        for n in walk(node)
    )


def _boolean(node: ast.AST) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant)


def _skip_condition(decorator: ast.expr) -> ast.expr | None:
    """The condition of ``pytest.mark.skipif(cond, ...)`` / ``unittest.skipIf(cond, ...)`` (for
    ``skipUnless`` it says when to run, which the signs read the same way)."""
    if not (isinstance(decorator, ast.Call) and decorator.args):
        return None
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return decorator.args[0] if name in SKIPS else None
