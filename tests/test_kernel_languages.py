"""Kernel languages among the CUDA-only libraries (rules/libraries_kernels.json, ``"per_use": false``):
TileLang's names are used inside kernels hundreds of times a file, so only its imports are reported,
each saying that it stands for the file's uses; a statement that only uses it, like one that only uses
Triton (which the project scan reports), is no rule's business and is folded away before libcst parses
the file. Other libraries are still reported at every use, and a device test in front of a kernel
still stays a CUDA test."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import cached_ruleset
from transplant import engine
from transplant.engine import driver
from transplant.skeleton import skeleton

RULES = cached_ruleset()

KERNEL = """

@tilelang.jit
def kernel(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16")):
        with T.Kernel(M) as bx:
            buf = T.alloc_fragment((N,), "float16")
            T.copy(A[bx, :], buf)

    return main


def run(x):
    return kernel(4, 8)(x.cuda())
"""


def whole(source: bytes, monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as m:
        m.setattr(driver, "skeleton", lambda *args: None)
        return engine.convert(source, RULES)


def view(conv):
    return conv.new, [dataclasses.astuple(r) for r in conv.records]


@pytest.mark.parametrize(
    "imports",
    [
        "import tilelang\nimport tilelang.language as T\n",
        "import tilelang\nfrom tilelang import language as T\n",
        "from tilelang import jit\nimport tilelang.language as T\ntilelang = __import__('types').SimpleNamespace(jit=jit)\n",
    ],
)
def test_only_the_imports_of_a_kernel_language_are_reported(imports: str, monkeypatch: pytest.MonkeyPatch):
    source = ("import torch\n" + imports + KERNEL).encode()
    conv = engine.convert(source, RULES)
    library = [r for r in conv.records if r.code == "TP206"]
    import_lines = {
        i for i, line in enumerate(source.decode().splitlines(), 1) if "tilelang" in line and "import" in line
    }
    assert library and {r.line for r in library} <= import_lines
    assert all("not listed one by one" in r.message and r.level == "error" for r in library)
    assert conv.new is not None and b"x.npu()" in conv.new and b"T.copy(A[bx, :], buf)" in conv.new
    assert view(conv) == view(whole(source, monkeypatch))


def test_a_statement_that_only_uses_a_kernel_language_or_triton_is_folded():
    source = (
        "import torch\nimport tilelang\nimport tilelang.language as T\nimport triton\nimport triton.language as tl\n"
        + KERNEL
        + "\n\n@triton.jit\ndef add(x_ptr, n):\n    offs = tl.arange(0, 16)\n    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)\n"
    ).encode()
    skel = skeleton(source, RULES)
    assert skel is not None
    assert b"T.copy" not in skel.text and b"tl.store" not in skel.text
    assert b"x.cuda()" in skel.text  # what a rule changes is never folded


def test_other_libraries_are_still_reported_at_every_use():
    source = b"import torch\nimport flash_attn\n\n\ndef f(q, k, v):\n    a = flash_attn.flash_attn_func(q, k, v)\n    return flash_attn.flash_attn_func(a, k, v)\n"
    conv = engine.convert(source, RULES)
    assert sorted(r.line for r in conv.records if r.code == "TP206") == [2, 6, 7]
    assert not any("not listed one by one" in r.message for r in conv.records)


def test_a_device_test_in_front_of_a_kernel_stays_a_cuda_test():
    source = (
        "import torch\nimport tilelang\nimport tilelang.language as T\n"
        + KERNEL.replace("x.cuda()", "x")
        + "\n\ndef pick(x):\n    if x.is_cuda:\n        return run(x)\n    return x * 2\n"
    ).encode()
    conv = engine.convert(source, RULES)
    assert any(r.code == "TP240" for r in conv.records)
    assert conv.new is None or b"if x.is_cuda:" in conv.new
