"""C, C++ and CUDA sources: listed, never rewritten (they are copied byte for byte).

Every operator a file registers is a TP204 finding at its registration line (``api`` = the name
Python reaches it by, which the Custom operators sheet matches with the calls found); a CUDA file
that registers nothing but defines kernels is one finding for the whole file (line 1), and one
that defines ``main`` is a CUDA program (TP205); CUDA sources under a CUDA Makefile / CMakeLists.txt are
named by that build once, not file by file (an extension build's are listed file by file). Names
hidden behind ``TORCH_EXTENSION_NAME`` are resolved through the project's builds.
"""

from __future__ import annotations

import re

from ..project import NO_FACTS, ProjectFacts, cpp_ops
from ..project.builds import NPU_ROUTE
from ..records import CODES, Conversion, Record
from ..resources import project_data
from ..session import Session

RULE = "builtin:custom_op"


_MAIN = re.compile(rb"\b(?:int|void|auto)\s+main\s*\(")


def may_convert(path: str, data: bytes, session: Session) -> bool:
    return may_match(data)


def may_match(data: bytes) -> bool:
    return any(marker in data for marker in cpp_ops.MARKERS) or b"main" in data


def main_line(data: bytes) -> int:
    """The line where the source defines ``main`` (outside comments and strings), or 0."""
    if b"main" not in data:
        return 0
    bare = cpp_ops.blank_comments(data)[1]
    m = _MAIN.search(bare)
    return bare.count(b"\n", 0, m.start()) + 1 if m else 0


def convert(path: str, data: bytes, session: Session) -> Conversion:
    return convert_cpp(path, data, session.facts)


def convert_cpp(path: str, data: bytes, facts: ProjectFacts = NO_FACTS) -> Conversion:
    scan = cpp_ops.scan(data)
    cuda_file = cpp_ops.is_cuda(path) or path in facts.cuda_files
    records: list[Record] = []
    for reg in scan.registrations:
        module = reg.module
        resolved = facts.module_of_file(path)
        if resolved and module.isupper():
            module = resolved
        name = cpp_ops.Registration(reg.line, reg.col, reg.macro, module, reg.key, reg.op, reg.method).python_name
        source = facts.module(module) if reg.macro == "PYBIND11_MODULE" else facts.namespace(module)
        cuda = cuda_file or reg.key == "CUDA" or (source is not None and source.cuda)
        where = f"{reg.macro}({module}{', ' + reg.key if reg.key else ''}) {reg.method}"
        if cuda:
            message = f"{name}: custom CUDA operator registered here ({where}); it has no NPU kernel"
        else:
            message = f"{name}: custom C++ operator registered here ({where}); check that it accepts NPU tensors"
        route = NPU_ROUTE + (
            "; register its NPU kernel under the PrivateUse1 dispatch key" if reg.macro != "PYBIND11_MODULE" else ""
        )
        records.append(
            Record(
                reg.line,
                reg.col,
                reg.line,
                reg.col + len(reg.method) + 2,
                CODES["custom_op"],
                "warning" if cuda else "note",
                "custom operator",
                message,
                RULE,
                api=name,
                suggestion=route,
            )
        )
    if scan.registrations or not cpp_ops.is_cuda(path) or facts.cuda_owner(path):
        return Conversion(None, records)  # a CUDA build file names its sources once
    main = main_line(data)
    if main:
        facts_data = project_data("cuda_programs.json")
        kernels = f" and {scan.kernels} __global__ kernel(s)" if scan.kernels else ""
        records.append(
            Record(
                main,
                1,
                main,
                1,
                CODES["cuda_build"],
                "warning",
                "CUDA build",
                facts_data["main_message"].format(kernels=kernels),
                "cuda_programs.json",
                api="CUDA program",
                suggestion=facts_data["program_route"],
            )
        )
    elif scan.kernels:
        records.append(
            Record(
                1,
                1,
                1,
                1,
                CODES["custom_op"],
                "warning",
                "custom operator",
                f"CUDA source with {scan.kernels} __global__ kernel(s), compiled by nvcc only",
                RULE,
                suggestion=NPU_ROUTE,
            )
        )
    return Conversion(None, records)
