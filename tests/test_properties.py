"""Property tests: converting generated sources keeps them valid Python and is idempotent;
converting a generated tree mirrors every file of it."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transplant.config import Config
from transplant.engine import convert
from transplant.runner import run
from transplant.walk import SKIP_DIRS, VENDOR_DIRS

from conftest import cached_ruleset

# --------------------------------------------------------------------------- sources

IMPORTS = [
    "import torch",
    "import torch as T",
    "import torch.cuda",
    "import torch.cuda as tc",
    "from torch import cuda",
    "from torch import cuda as C",
    "from torch.cuda import amp",
    "from torch.cuda.amp import autocast, GradScaler",
    "import torch.distributed as dist",
    "import numpy as np",
    "import os",
    "from numba import cuda as ncuda",
]
DEVICES = [
    '"cuda"',
    '"cuda:0"',
    "'cuda:1'",
    '"cpu"',
    'f"cuda:{rank}"',
    '"cuda:{}".format(rank)',
    '"cuda:%d" % rank',
    '"cuda" if flag else "cpu"',
]
EXPRS = [
    "torch.cuda.is_available()",
    "torch.cuda.device_count()",
    "torch.cuda.synchronize()",
    "T.cuda.current_device()",
    "tc.empty_cache()",
    "cuda.manual_seed(1)",
    "C.set_device(rank)",
    "x.cuda()",
    "x.cuda(rank)",
    "x.is_cuda",
    "model.to(@D)",
    "torch.device(@D)",
    "torch.zeros(2, device=@D)",
    "torch.load(path, map_location=@D)",
    "dist.init_process_group('nccl')",
    "np.zeros(3)",
    "ncuda.jit(f)",
    "autocast()",
    "GradScaler()",
    "os.environ['CUDA_VISIBLE_DEVICES']",
    "'cuda or cpu'",
    "rank + 1",
    "[x, y]",
    "{'device': @D}",
]
NAMES = st.sampled_from(["x", "y", "device", "dev", "model_device", "rank", "flag", "out"])


def _expr() -> st.SearchStrategy[str]:
    leaf = st.tuples(st.sampled_from(EXPRS), st.sampled_from(DEVICES)).map(lambda t: t[0].replace("@D", t[1]))
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda t: f"({t[0]}, {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"{t[0]} if flag else {t[1]}"),
            inner.map(lambda e: f"f({e})"),
            inner.map(lambda e: f"[{e} for _ in range(2)]"),
        ),
        max_leaves=4,
    )


def _indent(block: list[str]) -> list[str]:
    return ["    " + line if line else line for line in block]


def _statements(depth: int) -> st.SearchStrategy[list[str]]:
    simple = st.one_of(
        st.tuples(NAMES, _expr()).map(lambda t: [f"{t[0]} = {t[1]}"]),
        _expr().map(lambda e: [e]),
        st.tuples(NAMES, st.sampled_from(DEVICES)).map(lambda t: [f"{t[0]} = {t[1]}  # cuda here"]),
        st.sampled_from(IMPORTS).map(lambda i: [i]),
        st.just(['"""Docstring mentioning torch.cuda and cuda:0."""']),
        st.just(["pass  # torch.cuda.synchronize() in a comment"]),
    )
    if depth == 0:
        return simple

    def block(header: str) -> st.SearchStrategy[list[str]]:
        body = st.lists(_statements(depth - 1), min_size=1, max_size=3)
        return body.map(lambda parts: [header, *_indent([line for part in parts for line in part])])

    return st.one_of(
        simple,
        st.sampled_from(
            [
                "if torch.cuda.is_available():",
                "if flag:",
                "for rank in range(2):",
                "with torch.cuda.amp.autocast():",
                "with torch.no_grad():",
                "try:",
            ]
        ).flatmap(lambda h: block(h).map(lambda b: b + (["except Exception:", "    pass"] if h == "try:" else []))),
        st.sampled_from(['def f(x, device="cuda"):', "def g(model, rank=0):", "class M:"]).flatmap(block),
    )


SOURCES = st.lists(_statements(2), min_size=1, max_size=8).map(
    lambda parts: "\n".join(line for part in parts for line in part) + "\n"
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SOURCES)
def test_output_parses_and_second_conversion_is_a_no_op(source):
    ast.parse(source)  # the generator only makes valid Python
    rules = cached_ruleset()
    first = convert(source.encode(), rules)
    out = first.new if first.new is not None else source.encode()
    cst.parse_module(out)
    compile(out, "<converted>", "exec", ast.PyCF_ONLY_AST)
    again = convert(out, rules)
    assert again.new is None or again.new == out, out.decode()
    assert not any(r.is_change for r in again.records), out.decode()


# --------------------------------------------------------------------------- trees

_NAME = st.text(alphabet=st.sampled_from(list("abcXYZ019_-. éü深模 ")), min_size=1, max_size=10).filter(
    lambda n: n not in (".", "..") and n.strip() == n and n not in SKIP_DIRS and n not in VENDOR_DIRS
)
_CONTENT = st.sampled_from(
    [
        b"import torch\nx = torch.cuda.is_available()\n",
        b"print('hello')\n",
        b"def f(:\n",
        b"",
        b"\x00\x01\xff binary",
        b"#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\n",
        b"name,value\n1,2\n",
        b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
    ]
)
_SUFFIX = st.sampled_from([".py", ".txt", ".sh", ".ipynb", ".csv", "", ".PY"])
_TREE = st.recursive(
    st.tuples(_NAME, _SUFFIX, _CONTENT).map(lambda t: (t[0] + t[1], t[2])),
    lambda inner: st.tuples(_NAME, st.lists(inner, max_size=4)),
    max_leaves=12,
)


def _build(root: Path, entries: list) -> set[str]:
    """Create the tree; return the relative paths of files and folders it holds."""
    made: set[str] = set()
    for name, payload in entries:
        path = root / name
        if path.exists():
            continue  # generated the same name twice at one level
        if isinstance(payload, bytes):
            path.write_bytes(payload)
            made.add(name)
        else:
            path.mkdir()
            made.add(name)
            made |= {f"{name}/{rel}" for rel in _build(path, payload)}
    return made


def _listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TREE, max_size=5))
def test_result_mirrors_every_input_file_plus_reports(entries):
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "proj"
        src.mkdir()
        expected = _build(src, entries)
        assert _listing(src) == expected
        config = Config(input=src, output=Path(tmp) / "out", jobs=1, progress=False)
        summary = run(config, cached_ruleset())
        result = Path(tmp) / "out" / "proj_msft"
        assert set(summary.report_names.values()) & expected == set()
        assert _listing(result) == expected | set(summary.report_names.values())
        assert len(summary.report_names) == 3
        for rel in expected:
            if (src / rel).is_file() and not (result / rel).read_bytes() == (src / rel).read_bytes():
                assert rel.endswith((".py", ".sh", ".ipynb", ".PY")), rel  # only convertible files change
