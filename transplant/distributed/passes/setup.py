"""Set-up pass: the imports the helpers need, the helper functions after the imports (once), and
one call of the set-up at the start of the entry point, or before the first module-level statement
whose edits need the process group. Runs last: it only acts when an earlier pass planned a change.
"""

from __future__ import annotations

from typing import Sequence, cast

import libcst as cst

from ...engine import import_module_name, is_docstring_stmt, is_future_import
from ..plan import Statement, anchor_of, chain, parse_stmt
from ..templates import HELPER_NAMES, HELPERS, INDEX_FUNCTION, INDEX_HELPER, SETUP_FUNCTION


def run(p) -> None:
    """Plan the set-up: imports, helpers, the call."""
    a = p.a
    plan = p.plan
    if not plan.records:
        return
    has_helpers = SETUP_FUNCTION in a.functions
    module_body = list(p.module.body)
    header_end = 0
    for i, stmt in enumerate(module_body):
        if (i == 0 and is_docstring_stmt(stmt)) or (
            isinstance(stmt, cst.SimpleStatementLine)
            and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
        ):
            header_end = i + 1
            continue
        break
    # imports the helpers and the edits need
    missing = [m for m in ("atexit", "os", "torch", "torch_npu") if not a.imports_plain(m)]
    imports = [
        i
        for i, stmt in enumerate(module_body[:header_end])
        if not is_docstring_stmt(stmt) and not is_future_import(stmt)
    ]
    torch_at = next(
        (
            i
            for i in imports
            if any(
                isinstance(s, cst.Import)
                and any(import_module_name(al.name).split(".")[0] in ("torch", "torch_npu") for al in s.names)
                for s in module_body[i].body
            )
        ),
        None,
    )
    for m in missing:
        # os with the first imports, torch_npu after import torch, torch at the end of the imports
        if m in ("atexit", "os"):
            index = imports[0] if imports else header_end
        elif m == "torch_npu" and torch_at is not None:
            index = torch_at + 1
        else:
            index = header_end
        stmt = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name(m))])])
        _insert_module(p, index, [stmt], module_body)
        k = p.key()
        plan.anchors[k] = anchor_of(stmt)
        plan.record("setup", f"add import {m} (used by the distributed set-up)", k)
    add_index = p.needs_index_helper and INDEX_FUNCTION not in a.functions
    if not has_helpers:
        helpers = list(cst.parse_module(HELPERS + ("\n\n" + INDEX_HELPER if add_index else "")).body)
        blank = [cst.EmptyLine(), cst.EmptyLine()]
        helpers[0] = helpers[0].with_changes(leading_lines=blank)
        if header_end < len(module_body):
            nxt = module_body[header_end]
            if len(nxt.leading_lines) < 2 and not any(line.comment for line in nxt.leading_lines):
                plan.replace[id(nxt)] = chain(
                    plan.replace.get(id(nxt)), lambda updated: updated.with_changes(leading_lines=blank)
                )
        _insert_module(p, header_end, helpers, module_body)
        k1, k2 = p.key(), p.key()
        plan.anchors[k1] = anchor_of(helpers[0])
        last = cast(cst.FunctionDef, helpers[-1])  # HELPERS ends with a function
        plan.anchors[k2] = (
            cast(cst.SimpleStatementLine, last.body.body[-1]).body[0]
            if isinstance(last.body, cst.IndentedBlock)
            else last.name
        )
        plan.record(
            "setup",
            "add the process-group set-up (hccl, rank and world size from RANK_ID/RANK_SIZE/"
            "DEVICE_ID or RANK/WORLD_SIZE/LOCAL_RANK) and rank helpers",
            k1,
            k2,
        )
    elif add_index:  # converted before: its helpers lack npu_index
        last_helper = max(
            (f for f in a.functions.values() if f.name.value in HELPER_NAMES and f in module_body),
            key=module_body.index,
            default=None,
        )
        helper = cst.parse_module(INDEX_HELPER).body[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        if last_helper is not None:
            plan.after.setdefault(id(last_helper), []).append(helper)
            k = p.key()
            plan.anchors[k] = anchor_of(helper)
            plan.record("setup", f"add {INDEX_FUNCTION}() beside the set-up helpers", k)
    already_called = any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == SETUP_FUNCTION
        for n in a.nodes
        if not a.in_helpers(n)
    )
    if already_called:
        return
    call = parse_stmt(f"{SETUP_FUNCTION}()\n")
    k = p.key()
    plan.anchors[k] = anchor_of(call)
    where = _setup_place(p)
    if where is None:
        plan.warnings.append(f"no entry point found; call {SETUP_FUNCTION}() before training")
        plan.anchors.pop(k)
        return
    kind, node = where
    if kind == "prepend":
        plan.prepend.setdefault(id(node), []).insert(0, call)
    else:
        plan.before.setdefault(id(node), []).insert(0, call)
    plan.record("setup", f"call {SETUP_FUNCTION}() at the start of the entry point", k)


def _insert_module(p, index: int, stmts: list[Statement], body: Sequence[cst.BaseStatement]) -> None:
    if index > 0:
        p.plan.after.setdefault(id(body[index - 1]), []).extend(stmts)
    elif body:
        p.plan.before.setdefault(id(body[0]), []).extend(stmts)  # in the order of the calls
    else:
        p.plan.after.setdefault(id(p.module), []).extend(stmts)


def _setup_place(p) -> tuple[str, cst.CSTNode] | None:
    """Where the set-up call goes: before the first module-level code that needs it, else at the
    start of the ``__main__`` block or of the function it calls."""
    a = p.a
    main_block = p.a.main_block()
    top_level = [s for s in p.edit_sites if a.function_of(s) is None and a.class_of(s) is None]
    if top_level:
        first = min(top_level, key=lambda s: a.nodes.index(s))
        if main_block is not None and a.within(first, main_block):
            return "prepend", main_block.body
        stmt = next((s for s in p.module.body if s is first or a.within(first, s)), None)
        return ("before", stmt) if stmt is not None else None
    fn = p.a.main_function()
    if fn is not None and isinstance(fn.body, cst.IndentedBlock):
        return "prepend", fn.body
    if main_block is not None and isinstance(main_block.body, cst.IndentedBlock):
        return "prepend", main_block.body
    for stmt in p.module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or is_docstring_stmt(stmt):
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            continue
        return "before", stmt
    main = a.functions.get("main")
    if main is not None and isinstance(main.body, cst.IndentedBlock):
        return "prepend", main.body
    return None
