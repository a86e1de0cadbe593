"""Long sources parsed in pieces give the trees of the whole (issue 32: peak memory).

* libcst (transplant/engine/chunks.py): the skeleton of a long file is parsed a few thousand lines
  at a time, cut at the top-level statements skeleton.py lists (``Skeleton.tops``); the module put
  together equals, node for node, the one a parse of the whole skeleton gives, and converting
  through the pieces gives the same bytes and records.
* CPython's ``ast`` (project/pynames.py ``parse``): a long source is parsed in pieces cut after an
  empty line; the tree equals ``ast.parse`` of the whole, positions included, and where a cut could
  be wrong (inside a string, before an ``else:``, a coding cookie, lone carriage returns) the whole
  is parsed.
"""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from conftest import FIXTURES, cached_ruleset
from transplant import engine
from transplant.engine import chunks
from transplant.engine.npu_aware import NPU_STRING_BYTES, NPU_WORD_BYTES
from transplant.project import pynames
from transplant.skeleton import skeleton

RULES = cached_ruleset()
SOURCES = sorted(p for p in FIXTURES.rglob("*.py") if p.stat().st_size > 300)

RECIPE = b'''"""A recipe."""
import torch

DEVICES = ["cpu", "cuda"]


@torch.no_grad()
def evaluate(model, batch):
    return model(batch.cuda())


class Trainer:
    def __init__(self, device="cuda"):
        self.device = torch.device(device)

    def step(self, x):
        # a comment at the end of a block
        return x.to(self.device)
    # an indented comment that ends the class


def pick():
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"
x = torch.cuda.device_count()
if x:
    y = 1

else:
    y = 2


def summary(records):
    total = 0
    for r in records:
        total += r
    return total
'''


def _skeleton(source: bytes):
    keep = NPU_WORD_BYTES if NPU_STRING_BYTES.search(source) else None
    return skeleton(source, RULES, keep)


def test_tops_are_top_level_statements_after_blank_lines():
    skel = _skeleton(RECIPE)
    assert skel is not None
    lines = skel.text.splitlines()
    assert skel.tops, "the recipe has top-level statements after blank lines"
    for top in skel.tops:
        assert lines[top - 1][:1] not in (b" ", b"\t", b"#", b"")  # at column 0, code
        assert not lines[top - 2].lstrip().startswith(b"#")  # blank lines or the statement before
    starts = [lines[t - 1] for t in skel.tops]
    assert not any(s.startswith(b"else") for s in starts)
    assert not any(s.startswith(b"def pick") for s in starts)  # after the comment that ends the class
    assert any(s.startswith(b"@torch.no_grad") for s in starts)  # a decorated function starts at its decorator
    assert any(s.startswith(b"x = ") for s in starts) and any(s.startswith(b"__transplant_folded_") for s in starts)


@pytest.mark.parametrize("size", [1, 3, 10])
def test_pieces_give_the_whole_module(monkeypatch: pytest.MonkeyPatch, size: int):
    monkeypatch.setattr(chunks, "CHUNK_LINES", size)
    cut = 0
    for path in [*SOURCES, None]:
        source = RECIPE if path is None else path.read_bytes()
        skel = _skeleton(source)
        if skel is None:
            continue
        try:
            whole = cst.parse_module(skel.text)
        except cst.ParserSyntaxError:
            continue
        cut += len(chunks._cuts(len(skel.text.splitlines()), skel.tops))
        pieces = chunks.parse_chunks(skel.text, skel.tops)
        assert pieces.deep_equals(whole), path
        assert pieces.bytes == skel.text
    assert cut > 50  # the cuts were made, not parsed whole every time


def test_pieces_that_disagree_on_indentation_are_parsed_whole(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(chunks, "CHUNK_LINES", 1)
    text = b"import torch\n\n\nx = 1\n\n\ndef f():\n  return torch.cuda.current_device()\n"
    module = chunks.parse_chunks(text, [4, 7])
    assert module.default_indent == "  " and module.deep_equals(cst.parse_module(text))


def test_conversion_through_pieces_is_the_same(monkeypatch: pytest.MonkeyPatch):
    expected = [engine.convert(p.read_bytes(), RULES) for p in SOURCES[:60]]
    monkeypatch.setattr(chunks, "CHUNK_LINES", 2)
    for path, before in zip(SOURCES[:60], expected):
        after = engine.convert(path.read_bytes(), RULES)
        assert (after.new, after.records) == (before.new, before.records), path


def _dump(tree: ast.AST | None) -> str:
    return "" if tree is None else ast.dump(tree, include_attributes=True)


@pytest.mark.parametrize("size", [40, 300])
def test_ast_pieces_give_the_whole_tree(monkeypatch: pytest.MonkeyPatch, size: int):
    monkeypatch.setattr(pynames, "PIECE_BYTES", size)
    used = 0
    for path in [*SOURCES, None]:
        data = RECIPE if path is None else path.read_bytes()
        try:
            whole = ast.parse(data)
        except SyntaxError:
            continue
        pieces = pynames._parse_pieces(data)
        if pieces is not None:
            used += 1
            assert _dump(pieces) == _dump(whole), path
    assert used > 50


@pytest.mark.parametrize(
    "data",
    [
        b'x = """\n\ndef f():\n    pass\n\n"""\n\n\ny = 2\n',  # cut inside a string: that piece does not parse
        b"if x:\n    y = 1\n\nelse:\n    y = 2\n\n\nz = 3\n",  # not cut before else
        b"# -*- coding: latin-1 -*-\nx = 1\n\n\ny = '\xe9'\n",  # later pieces would not see the cookie
        b"x = 1\r\r\ry = 2\n\n\nz = 3\n",  # lone carriage returns: lines are not counted by newlines
        b"x = 1\n\n\nfrom __future__ import annotations\n",  # a late __future__ import is an error
    ],
)
def test_ast_pieces_only_where_they_are_the_whole(monkeypatch: pytest.MonkeyPatch, data: bytes):
    monkeypatch.setattr(pynames, "PIECE_BYTES", 1)
    pieces = pynames._parse_pieces(data)
    try:
        whole = ast.parse(data)
    except SyntaxError:
        whole = None
    assert pieces is None or _dump(pieces) == _dump(whole)
    monkeypatch.setattr(pynames, "_last", [])
    assert _dump(pynames.parse(data)) == _dump(whole)
