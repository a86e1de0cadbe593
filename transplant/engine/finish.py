"""After the one traversal: where each finding is in the module, which changes a skip comment or
a kept device test leaves out, the records, and the imports added and pruned (phases "place",
"records", "add imports" and "prune" of driver.py's conversion).
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from ..guards import Guards
from ..records import CODES, OPERATION, Record
from ..skeleton import Skeleton
from .bindings import Bindings
from .cst_util import first_line
from .imports import (
    ImportPruner,
    imports_module,
    imports_torch_cuda,
    insert_imports,
    insertion_anchor,
    insertion_index,
)
from .placement import earliest_index, module_binding
from .positions import node_positions, positions_and_code
from .state import Pending
from .transformer import Converter


class Unfold(Exception):
    """The skeleton cannot settle this file: convert it whole."""


@dataclasses.dataclass
class Placed:
    """Where things are in the source (phase "place")."""

    positions: dict[int, tuple[int, int, int, int]]  # node id -> span, in the source's lines
    original_bytes: bytes  # the module's code when it was generated ("" when not needed)
    index: int  # where new imports go in the module's body
    anchor: list[cst.CSTNode]  # the statement they follow (insertion_anchor)
    first_use: int | None  # the first line that uses torch_npu


def place(
    module: cst.Module,
    conv: Converter,
    bindings: Bindings,
    pending: list[Pending],
    skel: Skeleton | None,
    source: bytes | None,
) -> Placed:
    """One pass of code generation places the records, the imports that may be removed, and the
    statement new imports follow."""
    index = insertion_index(module.body)
    anchor = insertion_anchor(module.body, index)
    if not any(p.level == "fix" for p in pending) and not conv.needs_npu:  # findings only: nothing is rewritten
        positions, original_bytes = node_positions(module, [p.anchor for p in pending]), b""
    elif source is not None and not source.endswith(b"\r"):
        # libcst gives back the source byte for byte (but for a final lone "\r"): module.bytes
        # is the source, and code generation can stop once the last record is placed
        positions = node_positions(
            module, [*(p.anchor for p in pending), *bindings.import_nodes, *anchor, *module.body[:index]]
        )
        original_bytes = source
    else:
        positions, original_code = positions_and_code(
            module, [*(p.anchor for p in pending), *bindings.import_nodes, *anchor, *module.body[:index]]
        )
        original_bytes = original_code.encode(module.encoding)
    # new imports go before the first top-level statement that uses torch_npu, if that comes earlier
    first_use = min((positions[id(a)][0] for a in conv.npu_uses if id(a) in positions), default=None)
    earlier = earliest_index(module.body, index, first_use, positions)
    if earlier != index:
        if skel is not None and earlier > 0 and positions.get(id(module.body[earlier - 1]), (0,))[0] in skel.starts:
            raise Unfold  # the import would follow folded statements, which have no line of their own here
        index, anchor = earlier, insertion_anchor(module.body, earlier)
    if skel is not None:
        positions = {key: skel.position(pos) for key, pos in positions.items()}
        if first_use is not None:  # in the source's lines, as the positions it is compared with below
            first_use = min(positions[id(a)][0] for a in conv.npu_uses if id(a) in positions)
    return Placed(positions, original_bytes, index, anchor, first_use)


def hits(
    positions: dict[int, tuple[int, int, int, int]],
    pending: list[Pending],
    bindings: Bindings,
    skip: set[int],
    guards: Guards | None,
) -> set[int]:
    """The anchors whose changes must be left out: on a skip line, inside a kept device test, or an
    import whose rewrite would change a name a kept test uses."""
    hit = {id(p.anchor) for p in pending if positions.get(id(p.anchor), (0,))[0] in skip}
    if guards is not None:
        hit |= {
            id(p.anchor)
            for p in pending
            if p.level == "fix" and id(p.anchor) in positions and guards.keeps(positions[id(p.anchor)])
        }
        # an import whose rewrite would change a name a kept test uses (from torch.cuda import is_available)
        hit |= {
            id(node)
            for node in bindings.import_nodes
            if id(node) in bindings.plans and guards.names.intersection(bindings.plans[id(node)].names)
        }
    return hit


def make_records(
    module: cst.Module, pending: list[Pending], positions: dict[int, tuple[int, int, int, int]]
) -> list[Record]:
    return [
        _placed(p.record, positions.get(id(p.anchor), (1, 1, 1, 1)), first_line(module.code_for_node(p.anchor)))
        for p in pending
    ]


def add_imports(
    module: cst.Module,
    new_module: cst.Module,
    conv: Converter,
    bindings: Bindings,
    placed: Placed,
    records: list[Record],
) -> cst.Module:
    """The converted module with the imports it needs (torch_npu, the modules of new names); a
    record of each is appended to ``records``."""
    positions, index, anchor, first_use = placed.positions, placed.index, placed.anchor, placed.first_use
    # an import inside a function, a class or an if branch binds nothing elsewhere (placement.py)
    # and one below the first use binds nothing before it
    to_import = [
        name
        for name in sorted(conv.needs_imports)
        if not (imports_module(bindings, name) and module_binding(module.body, name) is not None)
    ]
    npu_import = module_binding(module.body, "torch_npu")
    if conv.needs_npu and not (
        imports_module(bindings, "torch_npu")
        and npu_import is not None
        and (first_use is None or positions.get(id(npu_import), (0,))[0] < first_use)
    ):
        # torch_npu right after torch when both are added
        to_import.insert(1 if to_import[:1] == ["torch"] else 0, "torch_npu")
    if to_import:
        after = module.code_for_node(module.body[index - 1]) if index > 0 else None
        # which of the statements with that text it is (the same line may stand twice)
        occurrence = sum(module.code_for_node(stmt) == after for stmt in module.body[:index]) if after else 1
        new_module = insert_imports(new_module, to_import, after, occurrence)
        line = positions.get(id(anchor[0]), positions.get(id(module.body[index - 1]), (1,)))[0] if anchor else 1
        # (the line of the statement they follow)
        for name in to_import:
            records.append(
                Record(
                    line,
                    1,
                    line,
                    1,
                    CODES["import"],
                    "fix",
                    OPERATION["import"],
                    f"add import {name}",
                    "builtin",
                    api=name,
                    new=f"import {name}",
                )
            )
    return new_module


def prune(
    module: cst.Module,
    new_module: cst.Module,
    bindings: Bindings,
    unused: set[str],
    positions: dict[int, tuple[int, int, int, int]],
    records: list[Record],
) -> cst.Module:
    """The converted module without the imports nothing uses any more (and ``import torch.cuda``
    where torch.cuda's APIs were replaced); a record on each original import is appended."""
    replace_torch_cuda = any(r.is_change and r.api.startswith("torch.cuda") for r in records)
    if unused or (replace_torch_cuda and imports_torch_cuda(bindings)):  # else the pruner has nothing to remove
        pruner = ImportPruner(unused, bindings, replace_torch_cuda)
        new_module = new_module.visit(pruner)
        if pruner.removed:
            # the same decisions, replayed on the original statements to place one record on each
            replay = ImportPruner(unused, bindings, replace_torch_cuda)
            notes = [(n, replay.notes_for(n)) for n in bindings.import_nodes]
            notes = [(n, found) for n, found in notes if found]
            for node, found in notes:
                span = positions.get(id(node), (1, 1, 1, 1))
                records.append(
                    Record(
                        *span,
                        code=CODES["import"],
                        level="fix",
                        operation=OPERATION["import"],
                        message="remove import of the old namespace: " + "; ".join(found),
                        rule="builtin",
                        old=first_line(module.code_for_node(node)),
                    )
                )
    return new_module


def _placed(record: Record, span: tuple[int, int, int, int], old: str) -> Record:
    line, col, end_line, end_col = span
    return dataclasses.replace(record, line=line, col=col, end_line=end_line, end_col=end_col, old=old)
