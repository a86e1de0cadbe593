"""Minimal edits (transplant/lsp/textedits.py) and notebook positions (notebookpos.py): no pygls needed."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from transplant.lsp.notebookpos import NotebookPositions
from transplant.lsp.textedits import LineIndex, apply_edits, minimal_edits

PIECES = st.sampled_from(["torch.cuda", ".cuda()", "npu", "x", " ", "\n", "\r\n", "# é😀", '"cuda"', "import torch\n"])
TEXTS = st.lists(PIECES, max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_edits_turn_old_into_new(old: str, new: str):
    edits = minimal_edits(old, new)
    assert apply_edits(old, edits) == new
    assert all(a.end <= b.start for a, b in zip(edits, edits[1:]))  # in order, not overlapping
    assert all(old[e.start : e.end] != e.text for e in edits)  # no edit that changes nothing


def test_a_rename_touches_only_the_word():
    old = "import torch\nx = torch.ones(1).cuda()  # keep\ny = 2\n"
    new = "import torch\nimport torch_npu\nx = torch.ones(1).npu()  # keep\ny = 2\n"
    edits = minimal_edits(old, new)
    assert [(old[e.start : e.end], e.text) for e in edits] == [("", "import torch_npu\n"), ("cuda", "npu")]


def test_line_index_counts_lsp_line_breaks():
    index = LineIndex("a\r\nb\rc\nd")
    assert [index.position(o) for o in (0, 3, 5, 7)] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert index.offset(1, 99) == 4  # clamped to the end of the line's content
    assert index.offset(9, 0) == len(index.text)


def test_notebook_positions_inside_escaped_json_strings():
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "# t"},
            {"cell_type": "code", "source": ["s = '😀é'\n", 'x = torch.ones(1, device="cuda")']},
        ]
    }
    text = json.dumps(nb, indent=1)  # ensure_ascii: é is written as the escape \\u00e9
    positions = NotebookPositions(text)
    start = positions.offset(2, 2, 27)  # cell 2, line 2, column of "cuda" (1-based)
    assert text[start : start + 4] == "cuda"
    assert positions.offset(2, 1, 6) == text.index("\\ud83d")  # a surrogate pair is one character
    assert positions.offset(2, 1, 7) == text.index("\\u00e9")  # the escape stands for one character
    assert positions.offset(2, 1, 8) == text.index("\\u00e9") + 6
    assert positions.offset(1, 1, 1) == text.index("# t")
    assert positions.offset(7, 1, 1) is None
    assert NotebookPositions("{not json").offset(1, 1, 1) is None
