"""The project a single file belongs to, for the modes that convert files one by one (issue 31).

Repository mode sees the whole project, so a project-wide fact such as "this project already runs on
NPU" (project/npu_support.py) decides how its multi-backend helpers are converted. ``--check``,
``--diff``, ``--in-place``, standard input with ``--stdin-filename`` and the language server see one
file; without the fact they would convert the same file differently. The same holds for a CUDA file
beside its NPU twin (project/twins.py), found from the root's file names. Owns finding the file's project
root (the nearest folder, from the file's own up, that holds ``pyproject.toml``, ``setup.py``,
``setup.cfg``, a ``requirements*.txt`` or ``.git``; at most ``MAX_UP`` folders up) and the fact of that
root, computed once per process from the files repository mode would convert there (the same walk and
the same test of each file, ``npu_support.evidence``, until the first sign), so that the evidence, and
the decision, are the ones ``transplant -i ROOT`` makes. Nothing outside the root is read; at most
``MAX_FILES`` files are. A twin is always in its file's folder: that folder is listed.
"""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache
from pathlib import Path

from .filekinds import small_enough
from .filetypes import file_kind
from .project import MAX_SCAN_BYTES, ProjectFacts, read_head
from .project.npu_support import evidence
from .project import twins as _twins
from .project.twins import twins
from .walk import walk

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_UP = 16  # folders above the file's own
MAX_FILES = 20_000  # files looked at below a root


def project_root(path: str) -> str:
    """The project root of the file (or folder) ``path``, or "" when no folder up to ``MAX_UP`` above it
    has a marker."""
    folder = os.path.realpath(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    for _ in range(MAX_UP + 1):
        try:
            names = os.listdir(folder)
        except OSError:
            return ""
        if any(name in MARKERS or name.startswith("requirements") and name.endswith(".txt") for name in names):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return ""
        folder = parent
    return ""


@lru_cache(maxsize=64)
def npu_support_at(root: str) -> str:
    """Where the project at ``root`` shows that it runs on NPU ("file:line: why", the file relative to
    ``root``), or "": the files repository mode would convert there, in its order, read until the first
    sign."""
    for count, entry in enumerate(walk(Path(root), lambda message: None, vendored_too=False)):
        if count >= MAX_FILES:
            break
        if entry.kind != "file" or not entry.convert:
            continue
        path = os.path.join(root, entry.rel)
        if small_enough(file_kind(entry.rel), path):
            found = evidence(entry.rel, read_head(path, MAX_SCAN_BYTES))
            if found:
                return found
    return ""


def twin_in_folder(path: str) -> str:
    """The name of the NPU twin of the Python file ``path`` in its own folder (project/twins.py: a twin
    is always beside its file), or ""."""
    folder, name = os.path.split(os.path.realpath(path))
    try:
        names = [n for n in os.listdir(folder) if n.lower().endswith((".py", ".pyw"))]
    except OSError:
        return ""
    return next((twin for cuda, twin in twins(names) if cuda == name), "")


def with_project_fact(facts: ProjectFacts, path: str) -> ProjectFacts:
    """``facts`` for the file ``path`` (as the mode names it) converted on its own: the project-wide NPU
    fact of its project root, and its NPU twin beside it, where a root is found (what repository mode on
    that root decides with), else ``facts`` as they are."""
    if not path or not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        return facts
    root = project_root(path)
    if not root:
        return facts
    found = npu_support_at(root)
    named = path.replace("\\", "/")
    twin = twin_in_folder(path) if _twins.backend(named) else ""
    pair = None  # (this file, its twin) as the mode names them
    if twin:
        folder = named.rpartition("/")[0]
        pair = (named, f"{folder}/{twin}" if folder else twin)
    if found == facts.npu_support and (pair is None or pair in facts.twins):
        return facts
    key = (id(facts), found, pair)
    kept = _REPLACED.get(key)
    if kept is None or kept[0] is not facts:  # one object per (facts, facts added): the guards' caches key on it
        more = dataclasses.replace(facts, npu_support=found)
        if pair is not None and pair not in facts.twins:
            more = dataclasses.replace(more, twins=tuple(sorted((*facts.twins, pair))))
        kept = _REPLACED[key] = (facts, more)
    return kept[1]


_REPLACED: dict[tuple[int, str, tuple[str, str] | None], tuple[ProjectFacts, ProjectFacts]] = {}
