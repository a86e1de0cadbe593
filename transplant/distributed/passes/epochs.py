"""Epochs pass: every epoch loop that uses a sharded loader (directly or in the functions it
calls, three calls deep) calls ``set_epoch`` on its sampler first, unless it already does. The
epoch loops found are kept in ``EditPlanner.epoch_loops`` for the rank-0 prints.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...engine import code_of
from ..plan import anchor_of, parse_stmt
from ..plan import LoaderInfo
from .loaders import loader_of


def run(p) -> None:
    """Plan ``set_epoch`` calls; remember the epoch loops over sharded loaders."""
    loops = [n for n in p.a.nodes if p.a.is_epoch_loop(n) and not p.a.in_helpers(n)]
    found = p.epoch_loops
    for loop in loops:
        if not isinstance(loop.body, cst.IndentedBlock):
            continue
        refs: list[tuple[str, cst.CSTNode]] = []
        existing = {
            code_of(n.func.value)
            for body in _bodies(p, loop.body, 0)
            for n in p.a.subtree(body)
            if isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "set_epoch"
            and p.a.under(n, body)
        }
        for node, info in _loader_refs(p, loop, loop.body, 0):
            receiver = _receiver(p, node, info, loop)
            if {receiver, f"{code_of(node)}.sampler", info.sampler} & existing:
                continue
            if all(r != receiver for r, _ in refs):
                refs.append((receiver, node))
        if not refs:
            if _uses_loader(p, loop):
                found.append(loop)
            continue
        epoch = loop.target.value
        stmts = []
        for receiver, _node in refs:
            stmt = parse_stmt(f"{receiver}.set_epoch({epoch})\n")
            stmts.append(stmt)
            k = p.key()
            p.plan.anchors[k] = anchor_of(stmt)
            p.plan.record("epoch", f"{receiver}.set_epoch({epoch}): a new shuffle order in every epoch", k)
        p.plan.prepend.setdefault(id(loop.body), []).extend(stmts)
        p.edit_sites.append(loop)
        found.append(loop)


def _bodies(p, body: cst.CSTNode, depth: int) -> Iterator[cst.CSTNode]:
    """``body`` and the bodies of the functions it calls (three calls deep)."""
    yield body
    if depth < 3:
        for node in p.a.subtree(body):
            if isinstance(node, cst.Call) and p.a.under(node, body):
                fn = p.a.callee(node)
                if fn is not None and fn.body is not body and isinstance(fn.body, cst.IndentedBlock):
                    yield from _bodies(p, fn.body, depth + 1)


def _loader_refs(p, loop: cst.For, body: cst.CSTNode, depth: int) -> Iterator[tuple[cst.CSTNode, LoaderInfo]]:
    """Uses of distributed loaders in ``body`` that belong to ``loop`` (not to an inner epoch
    loop), also inside the functions and methods it calls (loaders of ``self`` or globals)."""
    for node in p.a.subtree(body):
        if not p.a.under(node, body):
            continue
        if depth == 0 and next((a for a in p.a.ancestors(node) if p.a.is_epoch_loop(a)), None) is not loop:
            continue
        if isinstance(node, cst.Call) and depth < 3:
            fn = p.a.callee(node)
            if fn is not None and fn.body is not body and isinstance(fn.body, cst.IndentedBlock):
                yield from _loader_refs(p, loop, fn.body, depth + 1)
            continue
        if not isinstance(node, (cst.Name, cst.Attribute)):
            continue
        parent = p.a.parent.get(id(node))
        if isinstance(parent, (cst.AssignTarget, cst.Attribute)) and (
            not isinstance(parent, cst.Attribute) or parent.value is node
        ):
            continue
        info = loader_of(p, node, node)
        if info is None or not info.distributed:
            continue
        if depth > 0 and p.a.key_of(node, loop) != p.a.key_of(node, node):
            continue  # a local of the called function: not visible in the loop
        yield node, info


def _uses_loader(p, loop: cst.For) -> bool:
    return any(
        isinstance(n, (cst.Name, cst.Attribute))
        and p.a.under(n, loop.body)
        and (info := loader_of(p, n, n)) is not None
        and info.distributed
        for n in p.a.subtree(loop.body)
    )


def _receiver(p, ref: cst.CSTNode, info: LoaderInfo, loop: cst.For) -> str:
    """``train_sampler`` when the loader's sampler variable is visible in the loop, else
    ``loader.sampler``."""
    if info.sampler is not None and info.sampler_key is not None:
        kind, owner, _name = info.sampler_key
        here = p.a.class_of(loop) if kind == "attr" else (p.a.function_of(loop) or p.module)
        if here is not None and id(here) == owner:
            return info.sampler
    return f"{code_of(ref)}.sampler"
