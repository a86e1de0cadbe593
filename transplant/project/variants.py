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
* **A package's other backends.** A package whose subfolder ``npu/`` (or ``ascend/``) repeats one of
  its modules (DeepSpeed's ``op_builder/npu/builder.py`` beside ``op_builder/builder.py``) keeps one
  version of its modules per backend, and the project picks the folder by backend: on an NPU it loads
  ``npu/``. The sibling subfolders named for other accelerators that repeat a module too
  (``op_builder/xpu/``, ``op_builder/hpu/``) are what those hosts load; a module of the package that
  ``npu/`` repeats is the CUDA version. Their findings are notes that name the NPU folder. A module
  that ``npu/`` does not repeat stays as it is, but a helper there kept with "add an NPU arm"
  (engine/multi_backend.py) gets none: the project adds NPU versions as modules of ``npu/``.
  A module is repeated by its file name or by the ``NAME = "..."`` its builder class declares
  (DeepSpeed's ``op_builder/transformer_inference.py`` and ``op_builder/npu/inference.py`` both
  build ``transformer_inference``). A CUDA source (``.cu``/``.cuh``) that only such CUDA versions
  name, or a header one of those sources includes, is the CUDA build of an operator the project
  also builds for the NPU: its "compiled by nvcc only" finding is a note naming the builder.
* **Continuous integration.** Files under ``.github/`` (GitHub Actions workflows and the scripts they
  run) set up the project's CI runners, not the program: a ``cuda`` matrix entry or an
  ``nvidia-smi`` there asks nothing of a port to an NPU.

Only errors and warnings change (to notes, with the reason); the changes made to these files stay.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from ..records import Record
from .npu_support import NO_NPU_ARM
from .twins import npu_name

_ASCEND = re.compile(r"(?i)ascend|(?<![a-z])(?:npu|cann)(?![a-z])")
_CI = ".github/"
_NPU_FOLDERS = ("npu", "ascend")
_NAME = re.compile(rb"""(?m)^[ \t]+NAME[ \t]*=[ \t]*["']([\w.-]+)["']""")
_SOURCE = re.compile(rb"""["']([\w./-]+\.cuh?)["']""")
_INCLUDE = re.compile(rb'(?m)^[ \t]*#[ \t]*include[ \t]*"([\w.-]+\.cuh?)"')
CUDA_SOURCE = (".cu", ".cuh")
_NVCC_ONLY = "compiled by nvcc only"
# subfolders named for another accelerator than the NPU (and CUDA's own, where a project names it)
_OTHER_FOLDERS = frozenset(
    "cpu cuda gpu rocm hip xpu hpu mlu mps musa sdaa supa gcu dcu tpu ipu xla nvidia amd intel".split()
)


def is_dockerfile(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return (
        name in ("dockerfile", "containerfile")
        or name.startswith(("dockerfile.", "dockerfile_", "dockerfile-"))
        or name.endswith(".dockerfile")
    )


def settle_variants(
    items: Sequence[Any], path: Callable[[Any], str], read: Callable[[str], bytes] | None = None
) -> None:
    """The findings of the files above made notes, in place (``items`` hold ``records``; ``read``
    gives a file's bytes by its path, for the builders' names and sources)."""
    dockerfiles = [path(item) for item in items if is_dockerfile(path(item))]
    ascend = sorted(p for p in dockerfiles if _ASCEND.search(p))
    present = {path(item) for item in items}
    folders = backend_folders(present, read)
    built = npu_built_sources(present, folders, read) if folders and read is not None else {}
    for item in items:
        where = path(item)
        twin = _twin(where, present)
        other = folders.get(where)
        if where in built:
            _demote(
                item.records,
                f"CUDA source of {built[where]}, whose NPU version the project keeps in "
                f"{folders[built[where]][1]}/: an NPU run builds that one",
                _NVCC_ONLY,
            )
        elif other is not None:
            kind, npu = other
            if kind == "helper":
                _demote(
                    item.records, f"the project keeps its NPU versions of this package's modules in {npu}/", NO_NPU_ARM
                )
            else:
                _demote(item.records, f"{kind}: the project keeps the NPU versions in {npu}/, which an NPU run loads")
        elif where.startswith(_CI) or f"/{_CI}" in where:
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


def _declared_names(rel: str, read: Callable[[str], bytes] | None) -> set[str]:
    if read is None:
        return set()
    try:
        return {m.decode("utf-8", "replace") for m in _NAME.findall(read(rel))}
    except OSError:
        return set()


def backend_folders(paths: set[str], read: Callable[[str], bytes] | None = None) -> dict[str, tuple[str, str]]:
    """Python modules of a package that keeps one version of its modules per backend -> (what they
    are, the NPU folder): ("the version for CUDA" | "the version for XPU" | "helper", folder). With
    ``read``, a module whose ``NAME = "..."`` a module of the NPU folder declares too is repeated."""
    modules: dict[str, set[str]] = {}
    for rel in paths:
        folder, _, name = rel.rpartition("/")
        if name.endswith(".py") and name != "__init__.py":
            modules.setdefault(folder, set()).add(name)
    found: dict[str, tuple[str, str]] = {}
    for npu, names in sorted(modules.items()):
        parent, _, base = npu.rpartition("/")
        own = modules.get(parent, set())
        if base.lower() not in _NPU_FOLDERS or not names & own:
            continue
        prefix = f"{parent}/" if parent else ""
        declared = set().union(*(_declared_names(f"{npu}/{name}", read) for name in names))
        for name in own:
            repeated = name in names or bool(declared & _declared_names(prefix + name, read))
            found[prefix + name] = ("the version for CUDA", npu) if repeated else ("helper", npu)
        for sibling, theirs in modules.items():
            above, _, word = sibling.rpartition("/")
            if above == parent and word.lower() in _OTHER_FOLDERS and theirs & own:
                for rel in paths:
                    if rel.startswith(f"{sibling}/"):
                        found[rel] = (f"the version for {word.upper()}", npu)
    return found


def npu_built_sources(
    paths: set[str], folders: dict[str, tuple[str, str]], read: Callable[[str], bytes]
) -> dict[str, str]:
    """CUDA source -> the CUDA version of a builder that names it, for the sources that only such
    builders name (a header counts as named by the sources that include it, in its folder)."""
    cuda = {rel for rel in paths if rel.endswith(CUDA_SOURCE)}
    if not cuda:
        return {}
    owners: dict[str, set[str]] = {}
    for rel in sorted(p for p in paths if p.endswith(".py")):
        try:
            text = read(rel)
        except OSError:
            continue
        if b".cu" not in text:
            continue
        for literal in _SOURCE.findall(text):
            named = literal.decode("utf-8", "replace").lstrip("./")
            for source in cuda:
                if source == named or source.endswith("/" + named):
                    owners.setdefault(source, set()).add(rel)
    for source in sorted(owners):  # a header the named sources include, beside them
        folder = source.rpartition("/")[0]
        try:
            text = read(source)
        except OSError:
            continue
        for header in _INCLUDE.findall(text):
            included = f"{folder}/{header.decode('utf-8', 'replace')}" if folder else header.decode("utf-8", "replace")
            if included in cuda and included not in owners:
                owners.setdefault(included, set()).update(owners[source])
    return {
        source: sorted(named)[0]
        for source, named in owners.items()
        if all(folders.get(rel, ("",))[0] == "the version for CUDA" for rel in named)
    }


def _demote(records: list[Record], why: str, only: str = "") -> None:
    """Errors and warnings made notes that say ``why`` (only those whose message ends with ``only``)."""
    for r in records:
        if r.level in ("error", "warning") and r.message.endswith(only):
            r.level = "note"
            r.message += f" ({why})"
