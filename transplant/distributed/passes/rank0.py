"""Rank-0 passes: ``torch.save`` of the model saves the model inside the DistributedDataParallel
wrapper, on rank 0 only; ``print`` calls in epoch loops, and those right after such a save, print
on rank 0 only. Lines already guarded by a condition that mentions ``rank`` are left alone.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from ...engine import code_of


def saves(p) -> None:
    """Plan unwrapped, rank-0-only saves of the model."""
    a = p.a
    for call in a.calls_to(frozenset({"torch.save"})):
        if not call.args or a.in_helpers(call):
            continue
        obj = call.args[0].value
        refs = _target_refs(p, obj)
        if not refs and isinstance(obj, cst.Name):
            # `ckp = model.state_dict()` ... `torch.save(ckp, path)` in the same function
            scope = a.function_of(call)
            for node in a.subtree(scope) if scope is not None else a.nodes:
                if (
                    isinstance(node, cst.Assign)
                    and a.function_of(node) is scope
                    and any(isinstance(t.target, cst.Name) and t.target.value == obj.value for t in node.targets)
                    and a.span[id(node)][0] < a.span[id(call)][0]
                ):
                    refs = _target_refs(p, node.value)
        if not refs:
            continue
        unwrap_refs = [r for r in refs if not _unwrapped(p, r)]
        for ref in unwrap_refs:
            k = p.key()

            def unwrap(updated: cst.CSTNode, k=k) -> cst.CSTNode:
                new = cst.Call(func=cst.Name("npu_unwrap"), args=[cst.Arg(cast(cst.BaseExpression, updated))])
                p.plan.anchors[k] = new
                return new

            p.plan.replace[id(ref)] = unwrap
            p.plan.record(
                "rank0", f"save the model inside the DistributedDataParallel wrapper: npu_unwrap({code_of(ref)})", k
            )
        line = p.sole_expr_statement(call)
        if line is not None and not a.guarded_by(call, "rank"):
            p.plan.record("rank0", "torch.save on rank 0 only", p.guard_line(line, "npu_rank() == 0"))
            for after in _prints_after(p, line):  # "saved to ..." is said where the file was saved
                p.rank0_prints.add(id(after))
                p.plan.record(
                    "rank0", "print after the rank-0-only save, on rank 0 only", p.guard_line(after, "npu_rank() == 0")
                )


def _prints_after(p, line: cst.SimpleStatementLine) -> list[cst.SimpleStatementLine]:
    """The ``print(...)`` lines that directly follow ``line`` in its block."""
    a = p.a
    if "print" in a.imports:
        return []
    block = a.parent.get(id(line))
    body = list(getattr(block, "body", ()))
    found = []
    for stmt in body[body.index(line) + 1 :]:
        if not (
            isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
        ):
            break
        call = stmt.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "print"):
            break
        found.append(stmt)
    return found


def _target_refs(p, expr: cst.BaseExpression) -> list[cst.CSTNode]:
    a = p.a
    return [
        n
        for n in [expr, *a.subtree(expr)]
        if a.is_target(n)
        and not (
            isinstance(a.parent.get(id(n)), cst.Attribute)
            and a.parent[id(n)].value is n
            and a.is_target(a.parent[id(n)])
        )
    ]


def _unwrapped(p, ref: cst.CSTNode) -> bool:
    parent = p.a.parent.get(id(ref))
    if isinstance(parent, cst.Attribute) and parent.value is ref and parent.attr.value == "module":
        return True
    arg = parent if isinstance(parent, cst.Arg) else None
    call = p.a.parent.get(id(arg)) if arg is not None else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "npu_unwrap"


def prints(p) -> None:
    """Plan rank-0-only prints in the epoch loops."""
    loops = p.epoch_loops
    a = p.a
    for node in a.nodes:
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "print"):
            continue
        if "print" in a.imports or not any(a.under(node, loop.body) for loop in loops):
            continue
        line = p.sole_expr_statement(node)
        if line is None or a.guarded_by(node, "rank") or id(line) in p.rank0_prints:
            continue
        p.plan.record("rank0", "print the epoch log on rank 0 only", p.guard_line(line, "npu_rank() == 0"))
