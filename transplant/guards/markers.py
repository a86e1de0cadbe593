"""The words CUDA-only code needs, so that a file (or a module of the project a guard calls into) without
any of them is not parsed for it: runtime builds, Triton, tools, capability queries, cuDNN operators by
name, the library rules' modules and the project's extension modules (guards/__init__.py, crossfile.py).
"""

from __future__ import annotations

import re

from ..project import ProjectFacts
from ..rules import RuleSet

CUDA_SOURCE = re.compile(rb"\.cuh?['\"]")  # "kernel.cu" ("torch.cuda" is not one)
# a string naming a GPU package or TensorFlow (whose pip build is the GPU one)
PACKAGE = re.compile(rb"(?<![-\w])[a-z][\w.]*-gpu\b|_gpu['\"]|['\"]tensorflow|\[cuda|cupy-cuda|mxnet-cu")
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
_CUDA_PYTHON = re.compile(rb"(?:^|[\s;])(?:from|import)\s+cuda\b")


def marks(source: bytes, rules: RuleSet, facts: ProjectFacts) -> bool:
    """May ``source`` hold CUDA-only code? (each kind of it needs one of these words)"""
    if any(word in source for word in WORDS) or CUDA_SOURCE.search(source) or PACKAGE.search(source):
        return True
    # a library's first and last name parts (nvidia and dali: also "from nvidia import dali")
    return any(
        all(part.encode() in source for part in {module.split(".")[0], module.split(".")[-1]})
        and (module.split(".")[0] != "cuda" or _CUDA_PYTHON.search(source))
        for module in rules.library_q
    ) or (bool(facts.modules or facts.namespaces) and facts.may_match(source))


__all__ = ["CUDA_SOURCE", "DEVICE_TEST", "PACKAGE", "WORDS", "marks"]
