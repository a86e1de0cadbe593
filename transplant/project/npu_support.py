"""Does the project already run on NPU? (issue 31, mechanism 6)

A project that supports Ascend itself (verl, FastChat, timm's loaders) has helpers that choose among
backends: the visible-devices variable per backend, a ROCm branch, an NCCL engine beside its HCCL twin,
a CUDA flag of its own (``is_cuda_available``) under which allocator calls mean CUDA. Converting those
makes NPU-only code and takes the other backends away. Owns the project-level evidence, read from bytes
the project scan has in hand anyway (only files that name ``npu`` are looked at, and only requirement
files are read for it), with one line of where it was found:

* the project imports ``torch_npu`` behind its own availability check: ``try: import torch_npu``
  with ``except ImportError``, ``importlib.util.find_spec("torch_npu")``;
* it defines an NPU availability helper (``def is_torch_npu_available``, ``def is_npu_available``);
* it chooses the NPU's visible-devices variable (``"ASCEND_RT_VISIBLE_DEVICES"``) in Python;
* its requirements, pyproject or setup name ``torch_npu`` / ``torch-npu``.

The engine (engine/multi_backend.py, npu_aware.py) keeps multi-backend helpers as they are where the
fact holds and completes only the code that has no NPU path.
"""

from __future__ import annotations

import re

# (bytes each match holds, pattern, what it says): checked in this order, on Python files that name npu
# (the bytes first: "npu" is in every "input", and a pattern searched at each "try:" of a file is slow)
_PYTHON = (
    (
        b"torch_npu",
        re.compile(rb"\btry:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]+import[ \t]+torch_npu\b"),
        "imports torch_npu behind its own availability check (try/except ImportError)",
    ),
    (
        b"torch_npu",
        re.compile(rb"""\bfind_spec\(\s*['"]torch_npu['"]"""),
        "imports torch_npu behind its own availability check (find_spec)",
    ),
    (b"_available", re.compile(rb"\bdef[ \t]+is_\w*npu\w*_available\b"), "defines an NPU availability helper"),
    (
        b"ASCEND_RT_VISIBLE_DEVICES",
        re.compile(rb"""['"]ASCEND_RT_VISIBLE_DEVICES['"]"""),
        "chooses the NPU's visible-devices variable",
    ),
)
_REQUIREMENT = re.compile(rb"(?im)^[^#\n]*?(?<![\w-])torch[_-]npu\b")
MAX_BYTES = 1 << 20
# the end of the note on a multi-backend helper with no NPU arm (engine/multi_backend.py), which
# variants.py reads: where the project keeps its NPU versions as modules, no arm is wanted
NO_NPU_ARM = "it has no NPU arm: add one beside the others by hand (ASCEND_RT_VISIBLE_DEVICES, torch_npu.npu)"


def python_evidence(data: bytes) -> tuple[int, str] | None:
    """(line, why) of the first sign in the Python source ``data`` that its project supports NPU."""
    if b"npu" not in data:
        return None
    for word, pattern, why in _PYTHON:
        m = pattern.search(data) if word in data else None
        if m is not None:
            return data.count(b"\n", 0, m.end()) + 1, why
    return None


def evidence(rel: str, data: bytes) -> str:
    """ "rel:line: why" where the project file ``rel`` (relative, with "/") with the bytes ``data`` shows
    that its project runs on NPU, or "": a Python source (a setup.py by its requirements too) or a
    dependency file. The one test of a file, for the project scan and for the single-file modes
    (roots.py), so both find the same evidence."""
    from .triton import is_dependency_file

    if rel.lower().endswith((".py", ".pyw")):
        found = python_evidence(data)
        if found is None and rel.rsplit("/", 1)[-1] == "setup.py":
            found = requirement_evidence(rel, data)
    elif is_dependency_file(rel):
        found = requirement_evidence(rel, data)
    else:
        return ""
    return f"{rel}:{found[0]}: {found[1]}" if found is not None else ""


def requirement_evidence(rel: str, data: bytes) -> tuple[int, str] | None:
    """(line, why) where the dependency file ``rel`` (requirements, pyproject, setup.cfg) names torch_npu."""
    m = _REQUIREMENT.search(data) if b"npu" in data else None
    if m is None:
        return None
    return data.count(b"\n", 0, m.end()) + 1, "ships NPU requirements (torch_npu)"
