"""Where the imports the conversion needs must be, so that every name it writes is bound where it
runs.

Owns two questions the driver asks once a file is converted. Does the module bind a name for all
of its code? Only an import at module level does (also in a module-level ``try`` or ``with``
block, which runs on the way); one inside a function, a class or an ``if`` branch binds nothing
elsewhere, so ``import torch_npu`` is added at module level then. And how early must an added
import go? Before the first top-level statement that uses what it binds: in a notebook, whose
cells are one program, a use inside ``if using_colab: import torch ...`` in the first cell comes
before the ``import torch`` of a later cell that new imports normally follow.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

from .cst_util import import_module_name, is_docstring_stmt, is_future_import


def _module_level(body: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseSmallStatement]:
    """The small statements that run whenever the module runs: top level, and the bodies of
    module-level ``try`` (not its handlers) and ``with`` blocks."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, (cst.Try, cst.With)) and isinstance(stmt.body, cst.IndentedBlock):
            yield from _module_level(stmt.body.body)
        elif isinstance(stmt, (cst.Try, cst.With)) and isinstance(stmt.body, cst.SimpleStatementSuite):
            yield from stmt.body.body


def module_binding(body: Sequence[cst.BaseStatement], name: str) -> cst.Import | None:
    """The first import at module level that binds the module ``name`` (``torch_npu``; a dotted
    name such as ``torch.nn`` needs that module imported) under its own name, if any."""
    top = name.split(".")[0]
    for small in _module_level(body):
        if not isinstance(small, cst.Import):
            continue
        for alias in small.names:
            module = import_module_name(alias.name)
            if alias.asname is None and module.split(".")[0] == top and (module == name or "." not in name):
                return small
            if (
                alias.asname is not None
                and module == name == top
                and isinstance(alias.asname.name, cst.Name)
                and alias.asname.name.value == top
            ):
                return small
    return None


def import_floor(body: Sequence[cst.BaseStatement]) -> int:
    """The first index a new import may take: after the docstring and ``__future__`` imports."""
    index = 0
    while index < len(body) and (is_docstring_stmt(body[index]) and index == 0 or is_future_import(body[index])):
        index += 1
    return index


def earliest_index(
    body: Sequence[cst.BaseStatement],
    index: int,
    first_use: int | None,
    positions: dict[int, tuple[int, int, int, int]],
) -> int:
    """``index`` (where new imports go), moved up to the top-level statement that holds the first
    use ``first_use`` (a line) when that statement comes before it. ``positions`` has the places
    of ``body[:index]``."""
    if first_use is None:
        return index
    for i in range(import_floor(body), index):
        place = positions.get(id(body[i]))
        if place is not None and (place[2], place[3]) > (
            first_use,
            1,
        ):  # (1-based columns; it ends where the next line starts)
            return i
    return index
