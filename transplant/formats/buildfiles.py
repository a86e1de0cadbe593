"""Build files of C/C++/CUDA programs: Makefiles (``Makefile``, ``GNUmakefile``, ``*.mk``) and CMake
(``CMakeLists.txt``, ``*.cmake``). Never rewritten (copied byte for byte).

A build file that calls nvcc, enables the CUDA language, finds the CUDA toolkit or links cuBLAS,
cuDNN or NCCL (rules/project/cuda_programs.json) is one finding (TP205) at its first such line,
naming what it uses and the CUDA sources under its folder: a standalone CUDA program, which
transplant does not port (route: Ascend C, or torch / torch_npu), or the CUDA build of a PyTorch
extension (route: NpuExtension and Ascend C). The CUDA sources it covers are named by it, once,
not file by file (formats/cpp.py asks ``ProjectFacts.cuda_owner``).
"""

from __future__ import annotations

import re

from ..project import NO_FACTS, ProjectFacts
from ..project.builds import NPU_ROUTE
from ..project.cuda_programs import DATA, cuda_uses, is_build_file, may_match
from ..records import CODES, Conversion, Record, skips_file
from ..resources import project_data
from ..session import Session

__all__ = ["convert", "convert_build_file", "is_build_file", "may_convert", "may_match"]

RULE = "cuda_programs.json"


def may_convert(path: str, data: bytes, session: Session) -> bool:
    """The file kind "build" (transplant.filekinds): a CUDA marker's word is in the file."""
    return may_match(data)


def convert(path: str, data: bytes, session: Session) -> Conversion:
    return convert_build_file(path, data, session.facts)


def convert_build_file(path: str, data: bytes, facts: ProjectFacts = NO_FACTS) -> Conversion:
    if skips_file(data) or not may_match(data):
        return Conversion(None, [])
    uses = cuda_uses(data)
    if not uses:
        return Conversion(None, [])
    facts_data = project_data(DATA)
    what = ", ".join(w for w, _, _ in uses)
    extension = re.search(facts_data["extension_pattern"].encode(), data) is not None
    rel = path.replace("\\", "/")
    folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    sources = [s.removeprefix(folder) for s in facts.cuda_sources_of(rel)]
    shown = ", ".join(sources[:4]) + (", ..." if len(sources) > 4 else "")
    plural = "s" if len(sources) > 1 else ""
    covers = f"; it compiles the {len(sources)} CUDA source{plural} under its folder ({shown})" if sources else ""
    if extension:
        message = facts_data["extension_message"].format(what=what) + covers
        route = NPU_ROUTE
    else:
        message = facts_data["program_message"].format(what=what) + covers
        route = facts_data["program_route"]
    _, line, col = min(uses, key=lambda u: (u[1], u[2]))
    record = Record(
        line,
        col,
        line,
        col,
        CODES["cuda_build"],
        "warning",
        "CUDA build",
        message,
        RULE,
        api="CUDA program" if not extension else "CUDA build",
        suggestion=route,
    )
    return Conversion(None, [record])
