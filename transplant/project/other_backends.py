"""Adapters of another accelerator's library (issue 31, mechanism 6).

A project that runs on several backends keeps the code of a library that exists for one of them in a
module of its own, named for it: DeepSpeed's ``deepspeed/comm/mori.py`` imports AMD's MORI and runs
its all-gather on AMD GPUs, falling back to the usual collective everywhere else. On an NPU such a
module never runs; converting its CUDA names (``stream.cuda_stream``, which ROCm's torch keeps for HIP
streams) changes code that only ROCm hosts run. Owns finding such a module from its name and bytes:
its file name has the library's name as a word (``mori.py``, ``mori_allgather.py``) and it imports that
library (at any level: such modules import it late, inside a try). The libraries, with their backend
and source, are data (rules/project/other_backends.json). formats/python.py keeps such a file as it
is, with one note.
"""

from __future__ import annotations

import re

from ..resources import project_data

_WORD = re.compile(r"[a-z0-9]+")


def adapter_of(path: str, data: bytes) -> tuple[str, str, str] | None:
    """(library, backend, what it is) when the Python file ``path`` with the bytes ``data`` is the
    adapter of another accelerator's library, else None."""
    name = path.replace("\\", "/").rpartition("/")[2].lower()
    words = set(_WORD.findall(name.removesuffix(".py")))
    libraries = project_data("other_backends.json")["libraries"]
    for library in sorted(words & set(libraries)):
        imported = re.compile(rb"(?m)^[ \t]*(?:from|import)[ \t]+%s\b" % re.escape(library.encode()))
        if imported.search(data):
            entry = libraries[library]
            return library, entry["backend"], entry["what"]
    return None


def adapter_note_text(library: str, backend: str, what: str) -> str:
    return (
        f"kept as it is: the module is the adapter of {library}, {what}, a {backend} library; it runs only "
        f"where {library} does (on {backend} hosts), never on an NPU"
    )
