"""CUDA programs and their build files: which Makefiles / CMake files build CUDA
(rules/project/cuda_programs.json), and which CUDA sources each of them covers, so that a project
of many ``.cu`` files is named once per build (formats/buildfiles.py, formats/cpp.py). Plain bytes
in, plain data out; never writes a file.
"""

from __future__ import annotations

import re

from ..records import SKIP_LINE
from ..resources import project_data

DATA = "cuda_programs.json"
RULE = "cuda_programs.json"
SIZE_LIMIT = 1 << 20
_NAMES = ("makefile", "gnumakefile", "cmakelists.txt")
_SUFFIXES = (".mk", ".make", ".cmake")  # as the file kind "build" (filekinds.py)
WORDS = (b"nvcc", b"CUDA", b"cuda", b"cublas", b"cudnn", b"CUDNN", b"nccl", b"NCCL")


def is_build_file(path: str) -> bool:
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return base in _NAMES or base.endswith(_SUFFIXES)


def may_match(data: bytes) -> bool:
    return any(word in data for word in WORDS)


def _code(line: bytes) -> bytes:
    """The line without its ``#`` comment (Make and CMake both use ``#``)."""
    return line.split(b"#", 1)[0]


def cuda_uses(data: bytes) -> list[tuple[str, int, int]]:
    """(what, line, 1-based column) of the first place of each CUDA marker, in the markers' order."""
    found: dict[str, tuple[int, int]] = {}
    markers = [(m["what"], re.compile(m["pattern"].encode())) for m in project_data(DATA)["markers"]]
    for number, line in enumerate(data.splitlines(), start=1):
        if SKIP_LINE.search(line) or not may_match(line):
            continue
        code = _code(line)
        for what, pattern in markers:
            if what not in found:
                m = pattern.search(code)
                if m:
                    found[what] = (number, m.start() + 1)
    return [(what, *found[what]) for what, _ in markers if what in found]


def is_cuda_build(data: bytes) -> bool:
    return may_match(data) and bool(cuda_uses(data))


def group_sources(build_files: list[str], cuda_sources: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each CUDA build file with the CUDA sources it covers: those under its folder that no build
    file deeper down covers."""

    def folder(rel: str) -> str:
        return rel.rsplit("/", 1)[0] if "/" in rel else ""

    owned: dict[str, list[str]] = {b: [] for b in build_files}
    for source in sorted(cuda_sources):
        candidates = [b for b in build_files if not folder(b) or source.startswith(folder(b) + "/")]
        if candidates:  # the deepest build folder wins; a Makefile before a CMakeLists.txt in one folder
            best = max(
                candidates, key=lambda b: (folder(b).count("/") + bool(folder(b)), b.lower().endswith("makefile"))
            )
            owned[best].append(source)
    return tuple((b, tuple(owned[b])) for b in sorted(build_files))
