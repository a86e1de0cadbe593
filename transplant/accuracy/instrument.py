"""Plans and applies the instrumentation of one entry module (no file access here).

It reads the entry file with distributed mode's :class:`~..distributed.analysis.Analysis` (imports,
scopes, the ``-t`` model, the ``__main__`` function) and fills the same kind of
:class:`~..distributed.plan.Plan`, applied in one traversal, so that everything else keeps its bytes:

* before the imports (after a docstring and ``from __future__`` imports): the environment variables
  torch_npu reads on import (no CPU fallback; upstream-compatible implementations when asked);
* after the imports: determinism (msprobe's ``seed_all`` with deterministic algorithms and dropout
  removed), a ``PrecisionDebugger`` made from the config file beside the entry file, and a function
  run at exit that records where the run computed (templates.where);
* in each training-step loop (the innermost loop that runs ``backward``, directly or through the
  functions it calls): ``start(model)`` first, ``stop()`` and ``step()`` last.

Where no such loop is found, or no model variable is visible in it, the calls are written as
comments at the best place found, and a warning says so. An entry file that uses msprobe already
is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union, cast

import libcst as cst

from ..distributed.analysis import Analysis
from ..distributed.candidates import MODULE_ONLY_METHODS, candidates
from ..distributed.plan import PlanApplier
from ..distributed.planner import EditPlanner
from ..engine import is_docstring_stmt, node_positions, parse
from . import templates

LOOPS = (cst.For, cst.While)
Loop = Union[cst.For, cst.While]
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
CALL_DEPTH = 3  # how deep into the functions a loop calls the backward pass is looked for


@dataclass
class Instrumented:
    """What accuracy mode did to one entry module."""

    source: bytes
    loops: list[int] = field(default_factory=list)  # lines of the instrumented loops (original file)
    warnings: list[str] = field(default_factory=list)
    already: bool = False  # the file uses msprobe already: left as it was


def instrument(
    source: bytes, target: str = "model", config_file: str = templates.CONFIG_FILE, compatible: bool = False
) -> Instrumented:
    """The instrumented form of an entry file's source (SourceError when it cannot be parsed)."""
    module = parse(source)
    p = EditPlanner(module, target)
    a = p.a
    if any(q == "msprobe" or q.startswith("msprobe.") for q in a.imports.values()):
        return Instrumented(source, already=True)
    debugger = p.unique(templates.DEBUGGER)
    env_comments, env_code = templates.environment(compatible)
    comments, code = templates.header(debugger, config_file, False, p.unique(templates.RECORDER))
    head: list[Statement] = list(cst.parse_module(code).body)
    head[0] = head[0].with_changes(leading_lines=[cst.EmptyLine(), *_comment_lines(comments)])
    result = Instrumented(source)
    loops = training_loops(a)
    lines = node_positions(module, loops + _exits(a, loops))
    for loop in loops:
        model = model_expression(a, loop)
        line = lines[id(loop)][0] + len(loop.leading_lines)  # the loop itself, not the comments above it
        if model is None:
            _comment(
                p,
                cast(cst.IndentedBlock, loop.body).body[0],
                templates.manual(debugger, "MODEL", "no model variable is visible here"),
            )
            result.warnings.append(
                f"line {line}: no model variable is visible in the training loop; the calls "
                "to place are written there as comments (name the model with -t)"
            )
            continue
        p.plan.prepend.setdefault(id(loop.body), []).append(cst.parse_statement(templates.start(debugger, model)))
        p.plan.after.setdefault(id(cast(cst.IndentedBlock, loop.body).body[-1]), []).extend(
            cst.parse_statement(s) for s in templates.stop(debugger)
        )
        result.loops.append(line)
        for node in _exits(a, [loop]):
            kind = type(node).__name__.lower()
            result.warnings.append(
                f"line {lines[id(node)][0]}: a step that ends at this {kind} is not closed "
                f"by {debugger}.stop()/step(); add them before it if that step should be dumped"
            )
    if not loops:
        why = "transplant found no training loop (a loop that calls backward)"
        place = _model_statement(a)
        if place is not None:
            _comment(p, place, templates.manual(debugger, a.target_code, why))
        else:
            lines_ = templates.manual(debugger, "MODEL", why)
            head[-1] = head[-1].with_changes(leading_lines=[*head[-1].leading_lines, *_comment_lines(lines_)])
        result.warnings.append(
            f"{why}; the calls to place are written as comments "
            + ("above the model's assignment" if place is not None else "above the debugger's set-up")
        )
    env: list[Statement] = list(cst.parse_module(env_code).body)
    env[0] = env[0].with_changes(leading_lines=_comment_lines(env_comments))
    _insert_header(p, head, env)
    result.source = module.visit(PlanApplier(p.plan)).bytes
    return result


def _insert_header(p: EditPlanner, head: list[Statement], env: list[Statement]) -> None:
    """The environment goes before the first import (after a docstring and ``__future__`` imports),
    the set-up after the leading docstring and imports, before any other code runs."""
    body = list(p.module.body)
    futures = [
        stmt
        for stmt in body
        if isinstance(stmt, cst.SimpleStatementLine)
        and all(isinstance(s, cst.ImportFrom) and _future(s) for s in stmt.body)
    ]
    if futures:
        p.plan.after.setdefault(id(futures[-1]), []).extend(env)
    else:  # after a docstring: where PlanApplier puts what is prepended
        p.plan.prepend.setdefault(id(p.module), []).extend(env)
    end = 0
    for i, stmt in enumerate(body):
        if (i == 0 and is_docstring_stmt(stmt)) or (
            isinstance(stmt, cst.SimpleStatementLine)
            and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
        ):
            end = i + 1
            continue
        break
    if end:
        p.plan.after.setdefault(id(body[end - 1]), []).extend(head)
    else:  # no imports: at the top, without the blank line that separates it from them
        head[0] = head[0].with_changes(leading_lines=head[0].leading_lines[1:])
        p.plan.prepend.setdefault(id(p.module), []).extend(head)


def _future(node: cst.ImportFrom) -> bool:
    return isinstance(node.module, cst.Name) and node.module.value == "__future__"


def _comment_lines(lines: list[str]) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=cst.Comment(text)) for text in lines]


def _comment(p: EditPlanner, stmt: cst.BaseStatement, lines: list[str]) -> None:
    """Comment ``lines`` above ``stmt``, a statement of the original tree."""
    previous = p.plan.replace.get(id(stmt))
    comments = _comment_lines(lines)

    def add(updated: cst.CSTNode) -> cst.CSTNode:
        statement = cast(Statement, previous(updated) if previous is not None else updated)
        return statement.with_changes(leading_lines=[*statement.leading_lines, *comments])

    p.plan.replace[id(stmt)] = add


def training_loops(a: Analysis) -> list[Loop]:
    """The innermost loops that run a backward pass (in their body, or in functions they call)."""
    found: list[Loop] = []
    for call in _backward_calls(a):
        loop = _loop_reaching(a, call, CALL_DEPTH)
        if loop is not None and all(loop is not f for f in found):
            found.append(loop)
    innermost = [loop for loop in found if not any(other is not loop and a.within(other, loop) for other in found)]
    return sorted((loop for loop in innermost if isinstance(loop.body, cst.IndentedBlock)), key=a.nodes.index)


def _backward_calls(a: Analysis) -> list[cst.Call]:
    return [
        n
        for n in a.nodes
        if isinstance(n, cst.Call)
        and not a.in_helpers(n)
        and (
            (isinstance(n.func, cst.Attribute) and n.func.attr.value == "backward")
            or a.qual(n.func) in BACKWARD_FUNCTIONS
        )
    ]


def _loop_reaching(a: Analysis, node: cst.CSTNode, depth: int) -> Loop | None:
    """The innermost loop around ``node`` in its function; else, the loop around a call of that function."""
    for anc in a.ancestors(node):
        if isinstance(anc, LOOPS) and a.within(node, anc.body):
            return anc
        if isinstance(anc, SCOPES):
            break
    fn = a.function_of(node)
    if fn is None or depth == 0:
        return None
    for call in (n for n in a.nodes if isinstance(n, cst.Call) and a.callee(n) is fn):
        loop = _loop_reaching(a, call, depth - 1)
        if loop is not None:
            return loop
    return None


def _exits(a: Analysis, loops: list[Loop]) -> list[cst.CSTNode]:
    """``continue``/``break``/``return`` statements that leave a loop's step before its end."""
    found: list[cst.CSTNode] = []
    for loop in loops:
        for node in a.subtree(loop.body):
            if isinstance(node, cst.Return) and a.under(node, loop):
                found.append(node)
            elif (
                isinstance(node, (cst.Continue, cst.Break))
                and next((anc for anc in a.ancestors(node) if isinstance(anc, LOOPS)), None) is loop
            ):
                found.append(node)
    return found


def model_expression(a: Analysis, loop: Loop) -> str | None:
    """The code of the model variable as the loop sees it: the ``-t`` target, else a variable that
    looks like a model (assigned from a model class, or used like a module) in the loop's scope."""
    fn = a.function_of(loop)
    local = a.local_names(fn) if fn is not None else set()
    cls = a.class_of(loop)
    if a.target_parts[0] == "self":
        if cls is not None and any(a.class_of(site) is cls for site in a.target_sites):
            return a.target_code
    elif a.target_parts[0] in local or any(a.function_of(site) is None for site in a.target_sites):
        return a.target_code  # a local of the loop's function, or a global
    for name in candidates(a):
        if (name.startswith("self.") and cls is not None) or ("." not in name and (name in local or fn is None)):
            return name
    for node in a.subtree(fn) if fn is not None else ():  # a parameter used like a module: net.train()
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.attr.value in MODULE_ONLY_METHODS
            and node.func.value.value in local
        ):
            return node.func.value.value
    return None


def _model_statement(a: Analysis) -> cst.BaseStatement | None:
    """The statement that last assigns the model, when it sits in a block."""
    for site in reversed(a.target_sites):
        found = a.statement_of(site)
        if found is not None:
            return found[0]
    return None
