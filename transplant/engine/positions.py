"""Line and column of the nodes that records point at.

The one user of libcst's private code generation: a ``CodegenState`` that notes where a few
target nodes start and end, which costs far less than libcst's PositionProvider over the whole
tree. It places nodes; it decides nothing about what to record.
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState


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
            text = "".join(self.tokens[self._done :])
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


def positions_and_code(
    module: cst.Module, nodes: Iterable[cst.CSTNode]
) -> tuple[dict[int, tuple[int, int, int, int]], str]:
    """node_positions, and ``module.code`` from the same pass of code generation."""
    state = _LineTracker(module, {id(n) for n in nodes})
    state.stop_early = False
    module._codegen(state)
    return state.positions, "".join(state.tokens)
