"""C, C++ and CUDA sources: listed, never rewritten (they are copied byte for byte).

Every operator a file registers is a TP204 finding at its registration line (``api`` = the name
Python reaches it by, which the Custom operators sheet matches with the calls found); a CUDA file
that registers nothing but defines kernels is one finding for the whole file (line 1). Names
hidden behind ``TORCH_EXTENSION_NAME`` are resolved through the project's builds.
"""

from __future__ import annotations

from ..project import NO_FACTS, ProjectFacts, cpp_ops
from ..project.builds import NPU_ROUTE
from ..records import CODES, Conversion, Record
from ..session import Session

RULE = "builtin:custom_op"


def may_convert(path: str, data: bytes, session: Session) -> bool:
    return any(marker in data for marker in cpp_ops.MARKERS)


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
        route = NPU_ROUTE + ("; register its NPU kernel under the PrivateUse1 dispatch key"
                             if reg.macro != "PYBIND11_MODULE" else "")
        records.append(Record(reg.line, reg.col, reg.line, reg.col + len(reg.method) + 2, CODES["custom_op"],
                              "warning" if cuda else "note", "custom operator", message, RULE, api=name,
                              suggestion=route))
    if not scan.registrations and scan.kernels and cpp_ops.is_cuda(path):
        records.append(Record(1, 1, 1, 1, CODES["custom_op"], "warning", "custom operator",
                              f"CUDA source with {scan.kernels} __global__ kernel(s), compiled by nvcc only", RULE,
                              suggestion=NPU_ROUTE))
    return Conversion(None, records)
