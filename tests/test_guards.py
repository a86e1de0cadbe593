"""Device tests that guard CUDA-only code stay CUDA tests (transplant/guards/): the spellings the golden
fixtures (guards_*.in.py) do not show, the project's own extensions, notebooks, skip comments, the
change message of a rewrite that still leaves a risk, and the names the findings suggest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import REPO, cached_ruleset
from test_names import exists, public_names
from transplant.engine import convert
from transplant.filetypes import convert_file
from transplant.guards import analyse, may_guard
from transplant.project import gather


def run(source: str):
    conv = convert(source.encode(), cached_ruleset())
    return (conv.new or source.encode()).decode(), conv


def codes(conv) -> list[tuple[int, str]]:
    return [(r.line, r.code) for r in conv.findings if r.code.startswith("TP24")]


@pytest.mark.parametrize(
    "header,test",
    [
        ("import torch.cuda as tc", "tc.is_available()"),
        ("from torch import cuda", "cuda.is_available()"),
        ("import torch", "torch.cuda.device_count() > 0"),
        ("import torch", "x.is_cuda"),
        ("import torch", "(x if x is not None else y).device.type == 'cuda'"),
        ("import torch", "str(x.device).startswith('cuda')"),
        ("import torch", "'cuda' in str(x.device)"),
    ],
)
def test_every_spelling_of_a_cuda_test_in_front_of_triton_is_kept(header, test):
    source = f"{header}\n\n\ndef f(x, y):\n    if {test}:\n        import triton\n        return x\n    return y\n"
    new, conv = run(source)
    assert f"    if {test}:\n" in new
    assert (5, "TP240") in codes(conv)


def test_a_kept_test_through_a_from_import_leaves_the_import():
    source = (
        "from torch.cuda import is_available, synchronize\n\n\n"
        "def f(x):\n    if is_available():\n        from flash_attn import flash_attn_func\n"
        "        return flash_attn_func(x, x, x)\n    return x\n"
    )
    new, conv = run(source)
    assert new.startswith("from torch.cuda import is_available")
    assert "    if is_available():\n" in new
    assert (1, "TP240") in codes(conv) and (5, "TP240") in codes(conv)


@pytest.mark.parametrize(
    "build",
    [
        'load("ext", ["a.cpp", "a.cu"])',
        'load(name="ext", sources=["a.cpp", "a.cu"])',
        'load_inline("ext", cpp_src, cuda_sources=cu_src)',
        'load_inline(name="ext", cpp_sources=cpp_src, extra_cuda_cflags=["-O3"])',
        'my_builder("ext", sources=SOURCES + ["k.cuh"])',
    ],
)
def test_runtime_builds_by_position_keyword_and_helper(build):
    source = (
        "import torch\nfrom torch.utils.cpp_extension import load, load_inline\n\n_ext = None\n\n\n"
        f"def _get():\n    global _ext\n    _ext = {build}\n    return _ext\n\n\n"
        "def op(x):\n    if x.device.type == 'cuda':\n        return _get().op(x)\n    return x * 2\n"
    )
    new, conv = run(source)
    assert "    if x.device.type == 'cuda':\n" in new
    assert any(r.code == "TP240" and "(line 9)" in r.message for r in conv.findings)


def test_a_branch_that_reaches_nothing_cuda_only_still_converts():
    source = (
        "import torch\n\n\ndef helper(x):\n    return x.half()\n\n\n"
        "def f(x):\n    if x.is_cuda:\n        return helper(x)\n    return x\n"
    )
    new, conv = run(source)
    assert "    if x.is_npu:\n" in new
    assert codes(conv) == []


def test_recursion_between_functions_ends():
    source = (
        "import torch\n\n\ndef a(x):\n    return b(x)\n\n\ndef b(x):\n    return a(x)\n\n\n"
        "def f(x):\n    if x.is_cuda:\n        return a(x)\n    return x\n"
    )
    new, _ = run(source)
    assert "    if x.is_npu:\n" in new


def test_a_skip_comment_silences_the_finding_and_the_conversion_keeps_the_test():
    source = (
        "import torch\nimport triton\n\n\n"
        "def f(x):\n    if x.is_cuda:  # transplant: skip\n        return triton.cdiv(x, 2)\n    return x\n"
    )
    new, conv = run(source)
    assert "    if x.is_cuda:  # transplant: skip\n" in new
    assert codes(conv) == []


def test_a_rename_that_still_leaves_a_risk_says_so_in_its_change_message():
    source = "import torch\n\nBIG = 'H100' in torch.cuda.get_device_name(0)\n"
    _, conv = run(source)
    change = next(r for r in conv.changes if r.line == 3)
    assert change.message.startswith("torch.cuda.get_device_name -> torch_npu.npu.get_device_name; warning: ")


def test_the_pre_check_is_cheap_and_sound():
    rules = cached_ruleset()
    assert not may_guard(b"import torch\nif x.is_cuda:\n    x = x.half()\n", rules)
    assert analyse(b"import torch\nif x.is_cuda:\n    x = x.half()\n", rules) is None
    assert may_guard(b"if x.is_cuda:\n    from flash_attn import f\n", rules)  # a library rule's module
    assert analyse(b"if x.is_cuda:\n    from flash_attn import f\n", rules) is not None
    assert analyse(b"if x.is_cuda:\n  (\n", rules) is None  # does not parse: the engine reports it


def test_the_projects_own_cuda_extension_is_cuda_only_code(tmp_path: Path):
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "ops.cu").write_text('PYBIND11_MODULE(my_ext, m) { m.def("go", &go); }\n', encoding="utf-8")
    model = (
        b"import torch\nimport my_ext\n\n\ndef go(x):\n    if x.is_cuda:\n        return my_ext.go(x)\n    return x\n"
    )
    (tmp_path / "model.py").write_bytes(model)
    facts = gather([(p.relative_to(tmp_path).as_posix(), str(p)) for p in tmp_path.rglob("*") if p.is_file()])
    result = convert_file("model.py", model, cached_ruleset(), facts=facts)
    assert result.new is None or b"    if x.is_cuda:\n" in result.new
    guard = next(r for r in result.records if r.code == "TP240")
    assert guard.line == 6 and "the CUDA extension my_ext (csrc/ops.cu:1)" in guard.message
    # without the project's facts the module is unknown: the test is converted
    alone = convert_file("model.py", model, cached_ruleset())
    assert b"    if x.is_npu:\n" in alone.new


def test_a_notebook_guard_across_cells(tmp_path: Path):
    from transplant.formats.notebooks import convert_notebook

    cells = [
        [
            "import torch\n",
            "from torch.utils.cpp_extension import load_inline\n",
            "ext = load_inline('k', cpp_src, cuda_sources=cu_src)\n",
        ],
        ["def f(x):\n", "    if x.is_cuda:\n", "        return ext.k(x)\n", "    return x.cuda()\n"],
    ]
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    conv = convert_notebook(json.dumps(nb, indent=1).encode(), cached_ruleset())
    out = json.loads(conv.new)
    assert out["cells"][1]["source"] == [
        "def f(x):\n",
        "    if x.is_cuda:\n",
        "        return ext.k(x)\n",
        "    return x.npu()\n",
    ]
    assert any(r.code == "TP240" for r in conv.findings)


def test_npu_names_the_findings_suggest_exist_in_torch_npu():
    names = public_names()
    text = "".join(
        (REPO / "transplant" / "guards" / name).read_text(encoding="utf-8")
        for name in ("__init__.py", "reach.py", "probes.py", "sites.py")
    )
    suggested = set(re.findall(r"torch_npu(?:\.\w+)+", text))
    assert "torch_npu.npu.is_bf16_supported" in suggested
    for name in suggested:
        assert exists(name, names), name


def test_codes_are_listed_in_the_docs():
    readme = (REPO / "docs" / "reports.md").read_text(encoding="utf-8")
    for code in ("TP240", "TP241", "TP242", "TP243"):
        assert f"| {code} |" in readme


def test_a_function_that_branches_on_the_device_inside_is_no_predicate():
    """``smooth`` tests the device inside and returns a tensor: its result is no flag, and the call
    that passes it a tensor gets no row; ``use_kernel`` answers the device test itself, so a flag
    set from it chooses the kernel like the test would."""
    kernel = "import torch\nimport triton\n\n\ndef _fast(x):\n    return triton.cdiv(x, 2)\n\n\n"
    smooth = (
        "def smooth(x):\n    out = None\n    if x.is_cuda:\n        out = _fast(x)\n"
        "    if out is None:\n        out = x * 2\n    return out\n\n\n"
        "def run(w):\n    w = smooth(w)\n    return w\n"
    )
    new, conv = run(kernel + smooth)
    assert "    if x.is_cuda:\n" in new
    assert codes(conv) == [(11, "TP240")]
    assert not any("flag" in r.message for r in conv.findings)
    predicate = (
        "def use_kernel(x):\n    if x.is_cuda:\n        return True\n    return False\n\n\n"
        "def run(w):\n    fast = use_kernel(w)\n    if fast:\n        return _fast(w)\n    return w\n"
    )
    new, conv = run(kernel + predicate)
    assert "    fast = use_kernel(w)\n" in new and "    if x.is_cuda:\n" in new
    assert any("flag `fast` kept as the CUDA test" in r.message for r in conv.findings)
