"""What the entry file contains, read once before any edit is planned: the tree with parents and
spans, the names its imports bind (the engine's own binding table), scopes and local names, the
target model's assignments, the functions a call
reaches, epoch loops and the entry point.

It plans nothing and changes nothing; the passes (``passes/``) ask it questions.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..engine import analyse_imports, code_of, dotted_parts, import_module_name, target_names
from ..rules import RuleSet
from .templates import HELPER_NAMES

MOVES = frozenset({"npu", "cuda", "to"})
INIT_PG = "torch.distributed.init_process_group"
SPAWN = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})
LAUNCH_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK_ID", "RANK_SIZE"})
LAUNCH_ARGUMENTS = frozenset({"--local_rank", "--local-rank"})  # torch.distributed.launch
NO_RULES = RuleSet()  # the binding table alone: distributed mode plans no import rewrites


def short(node: cst.CSTNode, limit: int = 60) -> str:
    """The node's code on one line, cut at ``limit`` characters, for messages."""
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dotted(node: cst.CSTNode) -> str | None:
    parts = dotted_parts(node) if isinstance(node, cst.BaseExpression) else None
    return ".".join(parts) if parts else None


class Analysis:
    """What the entry file contains: imports, scopes, the target model, loaders, epoch loops."""

    def __init__(self, module: cst.Module, target: str) -> None:
        self.module = module
        self.nodes: list[cst.CSTNode] = []
        self.parent: dict[int, cst.CSTNode] = {}
        self.span: dict[int, tuple[int, int]] = {}  # id -> (index of the node, end of its subtree)
        self._index(module)
        self._function_cache: dict[int, cst.FunctionDef | None] = {}
        self._helper_spans = [
            self.span[id(s)] for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value in HELPER_NAMES
        ]
        # local name -> qualified name, as the engine binds them (the same table it converted with)
        self.imports = analyse_imports(module, NO_RULES).original
        self.functions = {s.name.value: s for s in self.block_statements(module) if isinstance(s, cst.FunctionDef)}
        self.classes = {s.name.value: s for s in self.block_statements(module) if isinstance(s, cst.ClassDef)}
        self._locals: dict[int, set[str]] = {}
        parts = target.split(".")
        self.target_parts = parts
        self.target_sites = self._assignments(parts)
        if len(parts) == 1:
            # `-t model` also finds `self.model`: when there is no plain `model`, or when the plain
            # one only goes to the device as `self.x = model.to(device)` (the model a Trainer keeps)
            moved = self._moved_into(parts)
            kept = [t for t in moved if len(t) == 2 and t[0] == "self"]
            if not self.target_sites or (kept and parts not in moved):
                attr = kept[0] if kept else ["self", parts[0]]
                if self._assignments(attr):
                    self.target_parts = attr
                    self.target_sites = self._assignments(attr)
        self.target_code = ".".join(self.target_parts)

    # ---- tree bookkeeping

    def _index(self, module: cst.Module) -> None:
        stack: list[cst.CSTNode] = []
        nodes, parent, span = self.nodes, self.parent, self.span
        starts: dict[int, int] = {}

        class Indexer(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                starts[id(node)] = len(nodes)
                nodes.append(node)
                if stack:
                    parent[id(node)] = stack[-1]
                stack.append(node)
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                stack.pop()
                span[id(original_node)] = (starts.pop(id(original_node)), len(nodes))

        module.visit(Indexer())

    def subtree(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes below ``node``, in source order."""
        start, end = self.span[id(node)]
        return self.nodes[start + 1 : end]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent.get(id(node))
        while current is not None:
            yield current
            current = self.parent.get(id(current))

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function whose body holds ``node`` (None at module level and in class bodies)."""
        cache = self._function_cache
        path = []
        current = node
        while id(current) not in cache:
            path.append(id(current))
            parent = self.parent.get(id(current))
            if parent is None or isinstance(parent, (cst.ClassDef, cst.FunctionDef)):
                found = parent if isinstance(parent, cst.FunctionDef) else None
                break
            current = parent
        else:
            found = cache[id(current)]
        for key in path:
            cache[key] = found
        return found

    def class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for a in self.ancestors(node):
            if isinstance(a, cst.ClassDef):
                return a
        return None

    def in_helpers(self, node: cst.CSTNode) -> bool:
        """Is ``node`` part of the inserted helper functions?"""
        where = self.span[id(node)][0]
        return any(start <= where < end for start, end in self._helper_spans)

    def statement_of(self, node: cst.CSTNode) -> tuple[cst.BaseStatement, cst.CSTNode] | None:
        """The statement that contains ``node`` and sits in an indented block or the module body."""
        current = node
        for a in self.ancestors(node):
            if isinstance(a, (cst.IndentedBlock, cst.Module)) and isinstance(current, cst.BaseStatement):
                return current, a
            if isinstance(a, cst.SimpleStatementSuite):
                return None
            current = a
        return None

    def within(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """Is ``node`` ``top`` or anywhere below it?"""
        return node is top or any(a is top for a in self.ancestors(node))

    def under(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """Is ``node`` inside ``top`` without crossing a function, class or lambda boundary?"""
        for a in self.ancestors(node):
            if a is top:
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
        return False

    def in_loop(self, node: cst.CSTNode) -> bool:
        for a in self.ancestors(node):
            if isinstance(a, (cst.For, cst.While)):
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
        return False

    def guarded_by(self, node: cst.CSTNode, word: str) -> bool:
        """Is ``node`` inside an ``if`` whose condition mentions ``word``?"""
        for a in self.ancestors(node):
            if isinstance(a, cst.If) and word in code_of(a.test):
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    @staticmethod
    def block_statements(node: cst.CSTNode) -> list[cst.BaseStatement]:
        body = node.body if isinstance(node, cst.Module) else getattr(node, "body", None)
        if isinstance(body, cst.IndentedBlock):
            return list(body.body)
        if isinstance(node, cst.Module):
            return list(node.body)
        return []

    # ---- names

    def qual(self, node: cst.BaseExpression) -> str | None:
        parts = dotted_parts(node)
        if not parts or parts[0] not in self.imports:
            return None
        return ".".join([self.imports[parts[0]], *parts[1:]])

    def calls_to(self, names: frozenset[str] | set[str]) -> list[cst.Call]:
        return [n for n in self.nodes if isinstance(n, cst.Call) and self.qual(n.func) in names]

    def imports_plain(self, module: str) -> bool:
        """Is ``module`` bound to its own name at the top level (``import os``)?"""
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import) and any(
                        alias.asname is None and import_module_name(alias.name).split(".")[0] == module
                        for alias in small.names
                    ):
                        return True
        return False

    def local_names(self, fn: cst.FunctionDef) -> set[str]:
        """Names local to ``fn``: parameters and names it assigns (not those it declares global)."""
        cached = self._locals.get(id(fn))
        if cached is not None:
            return cached
        names = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        for star in (fn.params.star_arg, fn.params.star_kwarg):
            if isinstance(star, cst.Param):
                names.add(star.name.value)
        declared_global: set[str] = set()
        for node in self.subtree(fn):
            if self.function_of(node) is not fn:
                continue
            if isinstance(node, cst.Global):
                declared_global |= {n.name.value for n in node.names}
            elif isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.AsName)):
                target = node.name if isinstance(node, cst.AsName) else node.target
                names |= target_names(target)
        names -= declared_global
        self._locals[id(fn)] = names
        return names

    def key_of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple | None:
        """Where the variable ``expr`` lives, seen from ``at``: a local or global name, or an
        attribute of ``self`` in a class."""
        if isinstance(expr, cst.Name):
            fn = self.function_of(at)
            if fn is not None and expr.value in self.local_names(fn):
                return ("name", id(fn), expr.value)
            return ("name", id(self.module), expr.value)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.class_of(at)
            if cls is not None:
                return ("attr", id(cls), expr.attr.value)
        return None

    # ---- the target model

    def is_target(self, node: cst.CSTNode) -> bool:
        return isinstance(node, (cst.Name, cst.Attribute)) and dotted_parts(node) == self.target_parts

    def _assignments(self, parts: list[str]) -> list[cst.CSTNode]:
        sites = []
        for node in self.nodes:
            if self.in_helpers(node):
                continue
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                targets = [node.target]
            for t in targets:
                leaves = [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t]
                if any(isinstance(leaf, (cst.Name, cst.Attribute)) and dotted_parts(leaf) == parts for leaf in leaves):
                    sites.append(node)
                    break
        return sites

    def _moved_into(self, parts: list[str]) -> list[list[str]]:
        """Where ``parts.npu()``/``.to()``/``.cuda()`` results go: the assigned variables, or
        ``parts`` itself for an in-place move statement."""
        found = []
        for node in self.nodes:
            if not (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in MOVES
                and dotted_parts(node.func.value) == parts
            ):
                continue
            parent = self.parent.get(id(node))
            if isinstance(parent, cst.Expr):
                found.append(parts)
            elif isinstance(parent, cst.Assign) and parent.value is node:
                found.extend(p for t in parent.targets if (p := dotted_parts(t.target)))
        return found

    # ---- a script that is distributed already

    def already_distributed(self) -> str | None:
        """Why the script runs distributed by itself (outside the inserted helpers), or None: it
        joins a process group, spawns its processes, or reads the launcher's variables."""
        for call in self.calls_to(frozenset({INIT_PG})):
            if not self.in_helpers(call):
                return "it calls init_process_group"
        for call in self.calls_to(SPAWN):
            if not self.in_helpers(call):
                return "it starts its processes with torch.multiprocessing"
        for node in self.nodes:
            if not isinstance(node, cst.SimpleString) or self.in_helpers(node):
                continue
            value = node.evaluated_value if "\\" not in node.value else None
            if value in LAUNCH_ARGUMENTS and self._within_call_of(node, "add_argument"):
                return f"it reads {value} from the launcher"
            if value in LAUNCH_VARIABLES and any(
                word in code_of(anc) for anc in list(self.ancestors(node))[:3] for word in ("environ", "getenv")
            ):
                return f"it reads {value} from the launcher"
        return None

    def _within_call_of(self, node: cst.CSTNode, method: str) -> bool:
        parent = self.parent.get(id(node))
        call = self.parent.get(id(parent)) if isinstance(parent, cst.Arg) else None
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == method

    # ---- calls and loops

    def callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this file that ``call`` runs: a module-level function, a class's
        ``__init__`` for a constructor, or a method of the class for ``self.method()``."""
        func = call.func
        if isinstance(func, cst.Name) and func.value not in self.imports:
            caller = self.function_of(call)
            if caller is not None and func.value in self.local_names(caller):
                return None
            fn = self.functions.get(func.value)
            if fn is not None:
                return fn
            cls = self.classes.get(func.value)  # a constructor: its __init__
            if cls is not None:
                return next(
                    (
                        s
                        for s in self.block_statements(cls)
                        if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"
                    ),
                    None,
                )
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = self.class_of(call)
            if cls is not None:
                for stmt in self.block_statements(cls):
                    if isinstance(stmt, cst.FunctionDef) and stmt.name.value == func.attr.value:
                        return stmt
        return None

    def is_epoch_loop(self, node: cst.CSTNode) -> bool:
        """``for epoch in range(...)`` (also ``trange`` and ``tqdm(range(...))``)."""
        if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name):
            return False
        it = node.iter
        if not isinstance(it, cst.Call):
            return False
        if isinstance(it.func, cst.Name) and it.func.value in ("range", "trange"):
            return True
        return (
            bool(it.args)
            and isinstance(it.args[0].value, cst.Call)
            and isinstance(it.args[0].value.func, cst.Name)
            and it.args[0].value.func.value == "range"
        )

    def main_block(self) -> cst.If | None:
        """The ``if __name__ == "__main__":`` block."""
        for stmt in self.module.body:
            if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison):
                code = code_of(stmt.test).replace("'", '"').replace(" ", "")
                if code in ('__name__=="__main__"', '"__main__"==__name__'):
                    return stmt
        return None

    def main_function(self) -> cst.FunctionDef | None:
        """The function the ``__main__`` block runs (the one it calls, or the last with "main" in its name)."""
        block = self.main_block()
        if block is None or not isinstance(block.body, cst.IndentedBlock):
            return None
        called = []
        for stmt in block.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                value = (
                    small.value
                    if isinstance(small, (cst.Expr, cst.Assign))
                    else (small.exc if isinstance(small, cst.Raise) else None)
                )
                while isinstance(value, cst.Call) and not (
                    isinstance(value.func, cst.Name) and value.func.value in self.functions
                ):
                    value = value.args[0].value if len(value.args) == 1 else None
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                    called.append(self.functions[value.func.value])
        if len(called) == 1:
            return called[0]
        named = [f for f in called if "main" in f.name.value]
        return named[-1] if named else None
