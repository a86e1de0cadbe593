"""The words CUDA-only code needs, so that a file (or a module of the project a guard calls into) without
any of them is not parsed for it: runtime builds, Triton, tools, capability queries, cuDNN operators by
name, the library rules' modules and the project's extension modules (guards/__init__.py, crossfile.py).
"""

from __future__ import annotations

import re

from ..project import ProjectFacts
from ..rules import RuleSet, words_of

CUDA_SOURCE = re.compile(rb"\.cuh?['\"]")  # "kernel.cu" ("torch.cuda" is not one)
# a string naming a GPU package or TensorFlow (whose pip build is the GPU one): a package name ending in
# "-gpu", or one of the others; each searched only where the words it needs occur (a pattern that starts
# with a letter or a quote is tried at nearly every byte of a source)
GPU_PACKAGE = re.compile(rb"(?<![-\w])[a-z][\w.]*-gpu\b")
PACKAGE = re.compile(rb"_gpu['\"]|['\"]tensorflow|\[cuda|cupy-cuda|mxnet-cu")
_PACKAGE_WORDS = (b"_gpu", b"tensorflow", b"[cuda", b"cupy-cuda", b"mxnet-cu")  # one of them is in each match
WORDS = (
    b"cuda_sources",
    b"extra_cuda_cflags",
    b"cpp_extension",
    b"triton",
    b"ExecutionProvider",
    b"tensorrt",
    b"torch.ops",
    b"get_device_capability",
    b"get_device_properties",
    b"get_device_name",
    b"version.cuda",
    b"version.hip",
    b"cudnn_",  # a cuDNN operator called by name (reach.py)
    b"miopen_",
    b"_C._cuda",  # torch._C's CUDA bindings (reach.py)
    b"_C._nccl",
    b"_C import _",
)

# what every device test of sites.py spells (is_cuda, the CUDA queries, a comparison with "cuda",
# startswith("cuda")): a file without any has no guard, whatever the project's modules hold
DEVICE_TEST = re.compile(
    rb"is_cuda|is_available\(|device_count\(|is_initialized\(|[=!]=\s*[rbu]?['\"]cuda|['\"]cuda(?::\d+)?['\"]\s*(?:[=!]=|in\b|not\s)"
    rb"|startswith\(\s*['\"]cuda|\bin\s*[\[(]?\s*['\"]cuda"
)
# cuda-python's modules (cuda.cuda, cuda.bindings) begin with a word every CUDA file has: their import is the evidence
# (after the start, a blank or ";": checked by _imports_cuda_python, a look-behind would make the search 4x slower)
_CUDA_PYTHON = re.compile(rb"(?:from|import)\s+cuda\b")


def marks(source: bytes, rules: RuleSet, facts: ProjectFacts) -> bool:
    """May ``source`` hold CUDA-only code? (each kind of it needs one of these words)"""
    if any(word in source for word in WORDS) or CUDA_SOURCE.search(source):
        return True
    if any(word in source for word in _PACKAGE_WORDS) and PACKAGE.search(source):
        return True
    if b"-gpu" in source and GPU_PACKAGE.search(source):
        return True
    # a library's first and last name parts as words (nvidia and dali: also "from nvidia import dali"); an
    # import spells them so ("ray" in "array" or "ops" in "stops" is none)
    words = words_of(source)
    return any(
        first in words and any(last in words for last in lasts) and (first != b"cuda" or _imports_cuda_python(source))
        for first, lasts in rules.library_words
    ) or (bool(facts.modules or facts.namespaces) and facts.may_match(source))


def _imports_cuda_python(source: bytes) -> bool:
    m = _CUDA_PYTHON.search(source)
    while m is not None:
        i = m.start()
        if i == 0 or source[i - 1] in b" \t\n\r\f\v;":
            return True
        m = _CUDA_PYTHON.search(source, i + 1)
    return False


__all__ = ["CUDA_SOURCE", "DEVICE_TEST", "GPU_PACKAGE", "PACKAGE", "WORDS", "marks"]
