"""Operator registrations in C, C++ and CUDA sources, read as bytes in any encoding.

Finds ``PYBIND11_MODULE(name, m) { m.def("op", ...); }`` and ``TORCH_LIBRARY(ns, m)``,
``TORCH_LIBRARY_FRAGMENT(ns, m)``, ``TORCH_LIBRARY_IMPL(ns, KEY, m)`` blocks with their
``m.def`` / ``m.impl`` calls, and counts ``__global__`` kernels. Only ASCII patterns are searched,
so a GBK or latin-1 comment can neither stop nor shift the scan. This module never writes a file
and knows nothing of Python: it returns plain data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c++", ".c", ".h", ".hpp", ".hh", ".hxx", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")
# a file worth scanning mentions one of these
MARKERS = (b"PYBIND11_MODULE", b"TORCH_LIBRARY", b"__global__")

_BLOCK = re.compile(
    rb"\b(PYBIND11_MODULE|TORCH_LIBRARY_FRAGMENT|TORCH_LIBRARY_IMPL|TORCH_LIBRARY)\s*\(\s*([A-Za-z_]\w*)\s*"
    rb"(?:,\s*([A-Za-z_]\w*)\s*)?,\s*([A-Za-z_]\w*)\s*\)\s*\{"
)
_NAME_WRAPPER = rb"(?:(?:TORCH_SELECTIVE_SCHEMA|TORCH_SELECTIVE_NAME)\s*\(\s*)?"
_GLOBAL = re.compile(rb"\b__global__\b")


@dataclass(frozen=True)
class Registration:
    """One operator registered in a C++ block."""

    line: int
    col: int  # 1-based, in bytes
    macro: str  # PYBIND11_MODULE | TORCH_LIBRARY | TORCH_LIBRARY_FRAGMENT | TORCH_LIBRARY_IMPL
    module: str  # the pybind11 module name or the torch library namespace, as written
    key: str  # dispatch key of TORCH_LIBRARY_IMPL (CUDA, CPU, ...), else ""
    op: str
    method: str  # def | impl

    @property
    def python_name(self) -> str:
        """How Python reaches it: ``module.op`` for pybind11, ``torch.ops.ns.op`` for a library."""
        if self.macro == "PYBIND11_MODULE":
            return f"{self.module}.{self.op}"
        return f"torch.ops.{self.module}.{self.op}"


@dataclass(frozen=True)
class CppScan:
    registrations: tuple[Registration, ...] = ()
    kernels: int = 0  # __global__ functions


def is_cpp(path: str) -> bool:
    return path.lower().endswith(CPP_SUFFIXES)


def is_cuda(path: str) -> bool:
    return path.lower().endswith(CUDA_SUFFIXES)


_TOKEN = re.compile(rb"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?", re.DOTALL)
_NOT_NEWLINE = re.compile(rb"[^\n]")


def blank_comments(data: bytes) -> tuple[bytes, bytes]:
    """(code with comments blanked, code with comments and string contents blanked); every byte
    keeps its offset and every newline stays, so positions in either are positions in ``data``."""
    code: list[bytes] = []
    bare: list[bytes] = []
    last = 0
    for m in _TOKEN.finditer(data):
        text = m.group()
        code.append(data[last : m.start()])
        bare.append(data[last : m.start()])
        if text[:1] == b"/":
            blank = _NOT_NEWLINE.sub(b" ", text)
            code.append(blank)
            bare.append(blank)
        else:
            code.append(text)
            bare.append(text[:1] + b" " * max(0, len(text) - 2) + text[-1:] if len(text) > 1 else text)
        last = m.end()
    code.append(data[last:])
    bare.append(data[last:])
    return b"".join(code), b"".join(bare)


def _block_end(bare: bytes, start: int) -> int:
    """Offset just after the brace that closes the one opened at ``start``."""
    depth = 0
    for i in range(start, len(bare)):
        ch = bare[i]
        if ch == 0x7B:
            depth += 1
        elif ch == 0x7D:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(bare)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _op_name(text: bytes) -> str:
    """``ns::op.overload(Tensor x) -> Tensor`` -> ``op``; ``op`` -> ``op``."""
    name = text.split(b"(", 1)[0].strip().split(b"::")[-1].split(b".", 1)[0]
    return name.decode("latin-1")


def scan(data: bytes) -> CppScan:
    """The registrations and kernel count of one C/C++/CUDA source. Never raises for content."""
    if not any(marker in data for marker in MARKERS):
        return CppScan()
    code, bare = blank_comments(data)
    found: list[Registration] = []
    for block in _BLOCK.finditer(bare):
        macro = block.group(1).decode()
        module = block.group(2).decode()
        key = block.group(3).decode() if macro == "TORCH_LIBRARY_IMPL" and block.group(3) else ""
        var = re.escape(block.group(4))
        end = _block_end(bare, block.end() - 1)
        call = re.compile(rb"\b" + var + rb"\s*\.\s*(def|impl)\s*\(\s*" + _NAME_WRAPPER + rb"\"([^\"\n]*)\"")
        for m in call.finditer(code, block.end(), end):
            if bare[m.start()] == 0x20:  # inside a string or comment (blanked in ``bare``)
                continue
            op = _op_name(m.group(2))
            if op:
                line, col = _position(data, m.start())
                found.append(Registration(line, col, macro, module, key, op, m.group(1).decode()))
    kernels = len(_GLOBAL.findall(bare)) if b"__global__" in data else 0
    return CppScan(tuple(found), kernels)
