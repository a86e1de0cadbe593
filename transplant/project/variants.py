"""Files that are not the program an NPU runs: findings there are notes, settled once every file is
converted (reminders.settle calls this pass).

* **Images for another accelerator.** A project that already builds images for Ascend (a Dockerfile
  whose path names ascend, npu or cann: ``docker/ascend/Dockerfile.ascend_8.3.rc1_a2``) keeps its
  other Dockerfiles for CUDA or ROCm hosts, as it keeps ``nccl_engine.py`` beside ``hccl_engine.py``
  (twins.py): their CUDA base images, CUDA packages and builds are what those hosts need, and the
  NPU route is the project's own Ascend Dockerfile, which the note names.
* **The CUDA twin of a project file.** ``requirements-cuda.txt`` beside ``requirements-npu.txt``
  (the name with its backend word swapped, as twins.py pairs Python files): the project lists its
  NPU dependencies in the twin, and the CUDA file is what CUDA hosts install.
* **Continuous integration.** Files under ``.github/`` (GitHub Actions workflows and the scripts they
  run) set up the project's CI runners, not the program: a ``cuda`` matrix entry or an
  ``nvidia-smi`` there asks nothing of a port to an NPU.

Only errors and warnings change (to notes, with the reason); the changes made to these files stay.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from ..records import Record
from .twins import npu_name

_ASCEND = re.compile(r"(?i)ascend|(?<![a-z])(?:npu|cann)(?![a-z])")
_CI = ".github/"


def is_dockerfile(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return (
        name in ("dockerfile", "containerfile")
        or name.startswith(("dockerfile.", "dockerfile_", "dockerfile-"))
        or name.endswith(".dockerfile")
    )


def settle_variants(items: Sequence[Any], path: Callable[[Any], str]) -> None:
    """The findings of the files above made notes, in place (``items`` hold ``records``)."""
    dockerfiles = [path(item) for item in items if is_dockerfile(path(item))]
    ascend = sorted(p for p in dockerfiles if _ASCEND.search(p))
    present = {path(item) for item in items}
    for item in items:
        where = path(item)
        twin = _twin(where, present)
        if where.startswith(_CI) or f"/{_CI}" in where:
            _demote(
                item.records, "in the project's CI configuration (.github/): it sets up CI runners, not the program"
            )
        elif twin:
            _demote(item.records, f"the CUDA version of {twin}, the project's own NPU version of this file")
        elif ascend and is_dockerfile(where) and where not in ascend:
            more = f" and {len(ascend) - 1} more" if len(ascend) > 1 else ""
            _demote(
                item.records,
                f"an image for another accelerator: the project builds its Ascend images itself ({ascend[0]}{more})",
            )


def _twin(rel: str, present: set[str]) -> str:
    """The project's NPU version of a non-Python file named for CUDA (``requirements-cuda.txt`` ->
    ``requirements-npu.txt``), or ""."""
    if rel.endswith((".py", ".ipynb")):
        return ""  # Python twins are kept whole by the conversion itself (twins.py)
    folder, _, name = rel.rpartition("/")
    other = npu_name(name)
    if not other:
        return ""
    other = f"{folder}/{other}" if folder else other
    return other if other != rel and other in present else ""


def _demote(records: list[Record], why: str) -> None:
    for r in records:
        if r.level in ("error", "warning"):
            r.level = "note"
            r.message += f" ({why})"
