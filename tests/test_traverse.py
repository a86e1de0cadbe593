"""engine/traverse.py visits the nodes libcst's own visit does, in the same order."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst
import pytest

from transplant.engine.traverse import children, walk

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from dense import dense_file  # noqa: E402

SOURCES = [
    dense_file(300),
    *(p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests" / "fixtures").rglob("*.py"))[::4]),
    "match x:\n    case [1, *rest] if rest: pass\n    case {'a': b, **kw}: pass\n    case Point(x=0) | None: pass\n",
    "async def f[T](a: int = 1, /, *b, c, **d) -> T:\n    async with x as (y, z): await q\n"
    "    async for i in j: yield i\n    lambda *, k=1: k\n",
    "@dec(1)\nclass A(B, metaclass=M):\n    x: int = 1\n    del a[1:2, ::3]\n    global g; nonlocal h\n",
    "x = f'{a!r:>{w}}' 'b' r'c'\ny = [i async for i in z if i] + {k: v for k, v in d}\n"
    "try:\n    pass\nexcept* E as e:\n    raise X from e\nelse: pass\nfinally: pass\n",
]


class Recorder(cst.CSTVisitor):
    def __init__(self, skip: type | None = None) -> None:
        self.seen: list[tuple[str, int]] = []
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.seen.append(("visit", id(node)))
        return not (self.skip is not None and isinstance(node, self.skip))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.seen.append(("leave", id(original_node)))


def _parsed():
    for text in SOURCES:
        try:
            yield cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue


@pytest.mark.parametrize("skip", [None, cst.If, cst.Call])
def test_walk_sees_what_module_visit_sees(skip):
    count = 0
    for module in _parsed():
        ours, theirs, other = Recorder(skip), Recorder(skip), Recorder()
        walk(module, [ours, other])
        module.visit(theirs)
        assert ours.seen == theirs.seen
        plain = Recorder()
        module.visit(plain)
        assert other.seen == plain.seen  # one visitor's skipping does not hide a subtree from another
        count += 1
    assert count > 10


def test_children_are_libcsts_children():
    module = cst.parse_module(SOURCES[0] + SOURCES[-1] + SOURCES[-2])
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        assert [id(c) for c in children(node)] == [id(c) for c in node.children]
        stack.extend(node.children)


def test_attribute_hooks_are_refused():
    class Hooked(cst.CSTVisitor):
        def visit_Call_args(self, node: cst.Call) -> None:
            pass

    with pytest.raises(TypeError):
        walk(cst.parse_module("f(1)\n"), [Hooked()])


class Hooks(cst.CSTVisitor):
    """A visitor of the usual kind: hooks of some classes (one of them a token), one that skips."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.seen.append(("name", id(node)))

    def visit_Comma(self, node: cst.Comma) -> None:
        self.seen.append(("comma", id(node)))

    def visit_If(self, node: cst.If) -> bool:
        self.seen.append(("if", id(node)))
        return False  # its names are not seen

    def leave_If(self, original_node: cst.If) -> None:
        self.seen.append(("left if", id(original_node)))

    def visit_Call(self, node: cst.Call) -> bool | None:
        self.seen.append(("call", id(node)))
        return None

    def leave_Call(self, original_node: cst.Call) -> None:
        self.seen.append(("left call", id(original_node)))


def test_walk_calls_hooks_as_module_visit_does():
    for module in _parsed():
        ours, theirs, plain = Hooks(), Hooks(), Recorder()
        walk(module, [ours, plain])
        module.visit(theirs)
        assert ours.seen == theirs.seen
        alone = Hooks()
        walk(module, [alone])
        assert alone.seen == theirs.seen
