"""Facts gathered once per run, before files are converted, from the project as a whole.

Today: the custom C++/CUDA operators a project builds (kind 4 of issue 11). ``gather`` reads the C,
C++ and CUDA sources (any encoding: bytes only) and the Python files that mention
``cpp_extension``, and returns a small, picklable :class:`ProjectFacts`: which extension modules
and ``torch.ops`` namespaces exist, their operators, and whether they need CUDA. Workers receive
it with their rules and use it to flag the Python calls that reach those operators
(:mod:`transplant.project.calls`). Nothing here writes a file or converts code.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from . import backends, cpp_ops, passed
from . import npu_support as npu_support_of
from .registries import npu_registrations
from ..rules import words_of
from .stars import provided, star_targets

if TYPE_CHECKING:
    import ast

# Python files that declare builds mention this (every import form of torch.utils.cpp_extension)
BUILD_WORD = b"cpp_extension"
# words that make a Python file worth the project scan even without project facts: builds and
# their flags (see builds.py), and setup() dependencies (packages.py)
STATIC_WORDS = (
    BUILD_WORD,
    b"nvcc",
    b"install_requires",
    b"triton",
    b".cu'",
    b'.cu"',
    b".cuh",
    b"extra_cuda_cflags",
    b"cuda_sources",  # the five before: builds through a project's own helper (builds.HELPER_WORDS)
    b"attn_implementation",  # frameworks.WORDS: these three, and the paired ones below
    b"use_flash_attention_2",
    b"load_in_8bit",
    b"load_in_4bit",
)
# words that count only beside another, which every finding they lead to needs too: Ray's settings
# (``num_gpus=``, ``{"GPU": 1}``) and Lightning's (``gpus=``, ``accelerator=``) in a file that imports
# it (frameworks.py), ``pip`` in a command that installs (installs.py): alone they are common words
PAIRED_WORDS = (
    (b"num_gpus", b"ray"),
    (b"GPU", b"ray"),
    (b"gpus", b"lightning"),
    (b"accelerator", b"lightning"),
    (b"pip", b"install"),
)
MAX_SCAN_BYTES = 16 << 20  # a larger "source" is data, not code
_PYBIND_MACRO = re.compile(r"^[A-Z][A-Z0-9_]*$")  # TORCH_EXTENSION_NAME and the like


@dataclass(frozen=True)
class OpSource:
    """An extension module (``name`` dotted) or a ``torch.ops`` namespace that Python can reach."""

    name: str
    cuda: bool
    ops: tuple[str, ...]
    where: str  # "setup.py:12", "csrc/ops.cpp:30"


@dataclass(frozen=True)
class ProjectFacts:
    modules: tuple[OpSource, ...] = ()
    namespaces: tuple[OpSource, ...] = ()
    file_module: tuple[tuple[str, str], ...] = ()  # C++ file -> the module a build makes of it
    cuda_files: frozenset[str] = frozenset()  # C++ files compiled into a CUDA build
    words: tuple[bytes, ...] = STATIC_WORDS
    # files that star-import project modules: (file, ((name, qualified), ...), (modules found, ...))
    stars: tuple[tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]], ...] = ()
    # Triton (triton.py): files that define CUDA Triton kernels -> their names; kernel files already on NPU
    triton_kernels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    triton_ready: frozenset[str] = frozenset()
    triton_ready_dirs: tuple[str, ...] = ()  # folders whose Triton code already runs on NPU ("" = the root)
    # CUDA build files (Makefile, CMakeLists.txt: formats/buildfiles.py) -> the CUDA sources under their folder
    cuda_programs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    own_packages: frozenset[str] = frozenset()  # the project's top-level packages (library_context.py)
    npu_registries: frozenset[str] = frozenset()  # functions the project calls with device="npu" (registries.py)
    hccl_choosers: tuple[tuple[str, str], ...] = ()  # functions that return "hccl" -> "file:line" (backends.py)
    # (option, value) -> where the project's scripts and configs pass it, kept there (passed.py)
    passed_values: tuple[tuple[tuple[str, str], str], ...] = ()
    twins: tuple[tuple[str, str], ...] = ()  # CUDA Python files beside their NPU twin (twins.py)
    # where the project shows that it already runs on NPU ("file:line: why"), or "" (npu_support.py)
    npu_support: str = ""
    # the input folder in repository mode ("" in the file modes: paths are as the user gave them); the
    # project's own modules are found from it on disk when a guard needs them (modules.py)
    root: str = ""
    # the names of the project's CUDA Triton kernels: a file that imports or launches one spells it as
    # a word (``_fwd_kernel`` in ``_fwd_kernel_size`` is none)
    kernel_words: frozenset[bytes] = frozenset()

    def may_match(self, data: bytes) -> bool:
        """Can the project scan of a Python file find anything in ``data``? (sound: every finding
        needs one of ``words`` spelled in the file: an import of the module, the namespace, ...; or
        both words of a pair of PAIRED_WORDS; or a kernel's name as a word)"""
        return (
            any(word in data for word in self.words)
            or any(word in data and also in data for word, also in PAIRED_WORDS)
            or bool(self.kernel_words)
            and not self.kernel_words.isdisjoint(words_of(data))
        )

    def star_names(self, path: str) -> tuple[dict[str, str], tuple[str, ...]]:
        """What the star imports of ``path`` provide (name -> qualified name), and which of its
        star-imported modules are the project's own (see stars.py)."""
        for file, names, found in self.stars:
            if file == path:
                return dict(names), found
        return {}, ()

    def twin_of(self, path: str) -> str:
        """The NPU twin of the CUDA Python file ``path`` (twins.py), or ""."""
        return next((twin for rel, twin in self.twins if rel == path), "")

    def kernel_files(self) -> dict[str, tuple[str, ...]]:
        return dict(self.triton_kernels)

    def module(self, name: str) -> OpSource | None:
        return next((m for m in self.modules if m.name == name), None)

    def namespace(self, name: str) -> OpSource | None:
        return next((n for n in self.namespaces if n.name == name), None)

    def module_of_file(self, path: str) -> str:
        return dict(self.file_module).get(path, "")

    def cuda_sources_of(self, build_file: str) -> tuple[str, ...]:
        return dict(self.cuda_programs).get(build_file, ())

    def cuda_owner(self, path: str) -> str:
        """The CUDA Makefile or CMakeLists.txt above the CUDA source ``path`` that names it once for all
        its files, or "" (a source of an extension build is named file by file, with its kernels)."""
        return next((build for build, sources in self.cuda_programs if path in sources), "")


NO_FACTS = ProjectFacts()


def _matches(rel: str, source: str, base: str) -> bool:
    """Does the build source ``source`` (written in ``base``'s folder) name the file ``rel``?"""
    source = source.replace("\\", "/").split("../")[-1]
    while source.startswith("./"):
        source = source[2:]
    if not source:
        return False
    for candidate in (f"{base}/{source}" if base else source, source):
        if fnmatch.fnmatchcase(rel, candidate) or fnmatch.fnmatchcase(rel, "*/" + candidate):
            return True
    return False


def gather(files: Iterable[tuple[str, str]]) -> ProjectFacts:
    """Facts of the files given as (relative path with "/", path to read). Unreadable files are
    skipped (the conversion reports them)."""
    from . import triton
    from .builds import HELPER_WORDS, find_builds
    from .pynames import bindings, parse

    scans: dict[str, cpp_ops.CppScan] = {}
    builds: list[tuple[str, object]] = []
    python_files: dict[str, str] = {}
    importers: dict[str, list[tuple[int, str]]] = {}
    kernel_files: dict[str, tuple[str, ...]] = {}
    npu_marked: set[str] = set()  # files that name triton-ascend or torch_npu
    npu_loaders: dict[str, ast.Module | bytes] = {}  # files that may import kernels behind an NPU test
    dependency_dirs: set[str] = set()  # folders whose dependency file lists triton-ascend
    build_files: list[str] = []  # CUDA Makefiles / CMakeLists.txt (formats/buildfiles.py)
    cuda_sources: list[str] = []
    registries: set[str] = set()  # functions called with device="npu" (registries.py)
    passing: dict[tuple[str, str], str] = {}  # (option, value) -> "file:line" (passed.py)
    npu_support = ""  # the first sign that the project already runs on NPU (npu_support.py)
    choosers: dict[str, str] = {}  # functions that return "hccl" -> "file:line" (backends.py)
    for rel, path in files:
        is_py = rel.lower().endswith((".py", ".pyw"))
        if cpp_ops.is_cuda(rel):
            cuda_sources.append(rel)
        elif _is_cuda_build_file(rel, path):
            build_files.append(rel)
            continue
        if not is_py and not cpp_ops.is_cpp(rel):
            if passed.is_candidate(rel):
                _passed(rel, path, passing)
            if triton.is_dependency_file(rel):
                words = read_head(path, MAX_SCAN_BYTES)
                if b"triton-ascend" in words or b"triton_ascend" in words:
                    dependency_dirs.add(rel.rsplit("/", 1)[0] if "/" in rel else "")
                npu_support = npu_support or npu_support_of.evidence(rel, words)
            continue
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_SCAN_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_SCAN_BYTES:
            continue
        if is_py:
            python_files[rel] = path
            targets = star_targets(data)
            if targets:
                importers[rel] = targets
            tree = None
            if BUILD_WORD in data or any(w in data for w in HELPER_WORDS):
                tree = parse(data)
                if tree is not None:
                    builds += [(rel, b) for b in find_builds(tree, bindings(tree))]
            if triton.npu_marked(data):
                npu_marked.add(rel)
            if triton.WORD in data and b"jit" in data:
                tree = tree or parse(data)
                found = triton.scan_kernels(tree) if tree is not None else ()
                if found:
                    kernel_files[rel] = found
            if (b"npu" in data or b"NPU" in data) and b"import" in data:
                npu_loaders[rel] = tree or data
            if b"npu" in data:
                registries |= npu_registrations(data)
                npu_support = npu_support or npu_support_of.evidence(rel, data)
            if any(w in data for w in backends.WORDS) and b"return" in data:
                tree = tree or parse(data)
                if tree is not None:
                    for name, line in backends.hccl_choosers(tree).items():
                        choosers.setdefault(name, f"{rel}:{line}")
        else:
            scan = cpp_ops.scan(data)
            if scan.registrations or scan.kernels:
                scans[rel] = scan
    facts = _facts(scans, builds)
    from .library_context import own_packages

    if python_files:
        facts = dataclasses.replace(facts, own_packages=own_packages(python_files))
    if registries:
        facts = dataclasses.replace(facts, npu_registries=frozenset(registries))
    if npu_support:
        facts = dataclasses.replace(facts, npu_support=npu_support)
    if choosers:
        facts = dataclasses.replace(facts, hccl_choosers=tuple(sorted(choosers.items())))
    if passing:
        facts = dataclasses.replace(facts, passed_values=tuple(sorted(passing.items())))
    if python_files:
        from .twins import twins

        found_twins = twins(list(python_files))
        if found_twins:
            facts = dataclasses.replace(facts, twins=found_twins)
    if build_files:
        from .cuda_programs import group_sources

        facts = dataclasses.replace(facts, cuda_programs=group_sources(build_files, cuda_sources))
    if importers:
        facts = dataclasses.replace(facts, stars=_stars(importers, python_files))
    if kernel_files or dependency_dirs:
        facts = _triton_facts(facts, kernel_files, npu_marked, npu_loaders, dependency_dirs)
    return facts


def _passed(rel: str, path: str, passing: dict[tuple[str, str], str]) -> None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(passed.MAX_BYTES + 1)
    except OSError:
        return
    if len(data) <= passed.MAX_BYTES:
        for name, value, line in passed.passed_values(data):
            passing.setdefault((name, value), f"{rel}:{line}")


def _is_cuda_build_file(rel: str, path: str) -> bool:
    from .cuda_programs import SIZE_LIMIT, is_build_file, is_cuda_build

    if not is_build_file(rel):
        return False
    data = read_head(path, SIZE_LIMIT + 1)  # (b"" when unreadable: no build)
    return bool(data) and len(data) <= SIZE_LIMIT and is_cuda_build(data)


def read_head(path: str, limit: int) -> bytes:
    """The first ``limit`` bytes of the file ``path`` (b"" when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""


def _triton_facts(
    facts: ProjectFacts,
    kernel_files: dict[str, tuple[str, ...]],
    marked: set[str],
    loaders: dict[str, ast.Module | bytes],
    dependency_dirs: set[str],
) -> ProjectFacts:
    from . import triton
    from .pynames import parse

    loaded: set[str] = set()
    # an import reaches the kernel file a/b/name.py only where it spells "name" (stars.resolve); a
    # package's __init__.py can be reached by ``from . import x``, which does not spell it
    stems = [posixpath.basename(rel).removesuffix(".py").encode() for rel in kernel_files]
    if b"__init__" in stems:
        stems = [b""]
    for rel, loader in loaders.items():
        if isinstance(loader, bytes) and not any(
            stem in text for text in triton.nested_imports(loader) for stem in stems
        ):
            continue  # no import in a block's body spells a kernel file: not parsed
        tree = parse(loader) if isinstance(loader, bytes) else loader
        if tree is not None:
            loaded |= triton.npu_loaded(rel, tree, kernel_files.__contains__)
    ready_dirs = triton.npu_ready_dirs(marked, dependency_dirs)
    ready = triton.npu_ready_files(set(kernel_files), marked, ready_dirs, loaded)
    cuda = {rel: names for rel, names in kernel_files.items() if rel not in ready}
    return dataclasses.replace(
        facts,
        triton_kernels=tuple(sorted(cuda.items())),
        triton_ready=ready,
        triton_ready_dirs=tuple(sorted(ready_dirs)),
        kernel_words=frozenset(name.encode() for names in cuda.values() for name in names),
    )


def _stars(importers: dict[str, list[tuple[int, str]]], python_files: dict[str, str]):
    def read(rel: str) -> bytes | None:
        try:
            with open(python_files[rel], "rb") as fh:
                return fh.read(MAX_SCAN_BYTES)
        except OSError:
            return None

    out = []
    known: dict[str, tuple | None] = {}  # what each module exports, read once for all its importers
    for rel, targets in sorted(importers.items()):
        names, found = provided(rel, targets, read, python_files.__contains__, known)
        if found:
            out.append((rel, tuple(sorted(names.items())), found))
    return tuple(out)


def _facts(scans: dict[str, cpp_ops.CppScan], builds: list) -> ProjectFacts:
    file_module: dict[str, str] = {}
    cuda_files: set[str] = set()
    modules: dict[str, dict] = {}

    def module(name: str, where: str) -> dict:
        return modules.setdefault(name, {"cuda": False, "ops": [], "where": where})

    for rel, build in builds:
        base = rel.rsplit("/", 1)[0] if "/" in rel else ""
        name = build.name or build.variable
        if not name:
            continue
        entry = module(name, f"{rel}:{build.line}")
        entry["cuda"] |= build.cuda
        entry["ops"] += build.functions
        for cpp in scans:
            if any(_matches(cpp, s, base) for s in build.sources):
                file_module.setdefault(cpp, name)
                if build.cuda:
                    cuda_files.add(cpp)
    namespaces: dict[str, dict] = {}
    for cpp, scan in scans.items():
        cuda = cpp in cuda_files or cpp_ops.is_cuda(cpp)
        for reg in scan.registrations:
            name = reg.module
            if _PYBIND_MACRO.match(name) and cpp in file_module:
                name = file_module[cpp]
            where = f"{cpp}:{reg.line}"
            table = modules if reg.macro == "PYBIND11_MODULE" else namespaces
            entry = table.setdefault(name, {"cuda": False, "ops": [], "where": where})
            entry["cuda"] |= cuda or reg.key == "CUDA"
            entry["ops"].append(reg.op)
    words = set(STATIC_WORDS)
    words.update(n.rsplit(".", 1)[-1].encode() for n in modules)
    words.update(n.encode() for n in namespaces)

    def sources(table: dict[str, dict]) -> tuple[OpSource, ...]:
        return tuple(
            OpSource(n, e["cuda"], tuple(dict.fromkeys(e["ops"])), e["where"]) for n, e in sorted(table.items())
        )

    return ProjectFacts(
        sources(modules),
        sources(namespaces),
        tuple(sorted(file_module.items())),
        frozenset(cuda_files),
        tuple(sorted(words)),
    )
