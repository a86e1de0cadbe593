"""CUDA files beside their NPU twin (issue 31, mechanism 6).

A project that already runs on NPU often keeps one module per backend: ``nccl_checkpoint_engine.py``
beside ``hccl_checkpoint_engine.py``, ``test_correctness_on_gpu.py`` beside
``test_correctness_on_npu.py``, ``nvtx_profile.py`` beside ``mstx_profile.py`` (verl's profilers).
The CUDA one is what CUDA hosts run; converting it makes a second,
worse NPU version and takes the CUDA path away. Owns finding, from the project's file names alone,
each Python file whose name with its backend word swapped (``nccl``/``hccl``, ``cuda``/``npu``,
``gpu``/``npu``) is another file of the same folder; formats/python.py keeps such a file as it is
with one note. Other backends' files beside the NPU one (``cpu_accelerator.py``,
``hpu_accelerator.py`` and ``npu_accelerator.py`` in one folder) are what those hosts run: kept
the same way.
"""

from __future__ import annotations

import re

_OTHERS = ("cpu", "hpu", "mps", "xpu", "rocm", "hip", "mlu", "musa", "xla", "tpu")
_WORD = re.compile(r"(?<![a-z])(nccl|cuda|gpu|nvtx|%s)(?![a-z])" % "|".join(_OTHERS), re.IGNORECASE)
# nvtx -> mstx: Ascend's MindStudio Tools Extension is the NPU's counterpart of NVIDIA's NVTX markers
_TWIN = {"nccl": "hccl", "cuda": "npu", "gpu": "npu", "nvtx": "mstx", **{word: "npu" for word in _OTHERS}}


def twins(paths: list[str]) -> tuple[tuple[str, str], ...]:
    """(CUDA file, its NPU twin) for the Python files of ``paths`` (relative, with "/")."""
    present = set(paths)
    found = []
    for rel in paths:
        folder, _, name = rel.rpartition("/")
        if not name.endswith(".py") or _WORD.search(name) is None:
            continue
        twin = _WORD.sub(lambda m: _swap(m.group(1)), name)
        other = f"{folder}/{twin}" if folder else twin
        if other != rel and other in present:
            found.append((rel, other))
    return tuple(sorted(found))


def backend(path: str) -> str:
    """The backend word of a twin's file name, upper-case ("CUDA", "NCCL", "HPU"), or ""."""
    found = _WORD.search(path.rpartition("/")[2])
    return found.group(1).upper() if found else ""


def _swap(word: str) -> str:
    new = _TWIN[word.lower()]
    return new.upper() if word.isupper() else new


def npu_name(name: str) -> str:
    """``name`` with its backend word swapped (``requirements-cuda.txt`` -> ``requirements-npu.txt``),
    or "" when it has none."""
    if _WORD.search(name) is None:
        return ""
    return _WORD.sub(lambda m: _swap(m.group(1)), name)
