"""The registry of file kinds: every kind of file transplant converts, and everything the modes need
to know about it. Repository mode (runner.py, pool.py), the file modes (filemodes.py), the language
server (lsp/analysis.py) and the pre-commit hooks (.pre-commit-hooks.yaml, checked against
``precommit_files``/``precommit_types`` by tests/test_filekinds.py) all take it from here.

Adding a format:

1. Write ``transplant/formats/NAME.py`` with two functions, both given the path (relative, "/"
   separators), the file's bytes and the run's :class:`transplant.session.Session`:
   ``may_convert(path, data, session) -> bool``, a cheap pre-check (substring searches: True when
   the converter may change or report anything), and ``convert(path, data, session) -> Conversion``
   (byte-faithful, idempotent; raise records.SourceError for input it cannot read).
2. Add a :class:`FileKind` to ``KINDS`` below: how a path matches (suffixes, exact names,
   name prefixes, or a regular expression), its size limit, the functions as "module:function",
   its editor language ids and its pre-commit tags (identify's; only tags whose every file this
   kind matches, or the hooks would hand transplant files it refuses).
3. Add fixtures (tests/fixtures/surface/input and expected) and a README line.

The converters are named, not imported: a format's module (and libcst, for the engine's kinds) is
loaded when the first file of its kind needs it, which keeps ``transplant --check`` quick to start.
The first kind whose match accepts a path is its kind (order matters: ``setup.cfg`` is a config).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Callable

from .project.cpp_ops import CPP_SUFFIXES

if TYPE_CHECKING:
    from .records import Conversion
    from .session import Session

OTHER = "other"  # the kind of a file transplant copies without a look


@dataclass(frozen=True)
class FileKind:
    name: str
    label: str  # for messages: "Python", "shell script", ...
    suffixes: tuple[str, ...] = ()  # lower case, with the dot
    names: tuple[str, ...] = ()  # exact file names, lower case
    prefixes: tuple[str, ...] = ()  # file name prefixes, lower case ("dockerfile.")
    pattern: str = ""  # when given, a path with one of the suffixes must match it too (searched in the
    # lower-case "/"-separated path)
    size_limit: int | None = None  # bytes; a larger file is data: copied without a look, not walked into
    may_convert: str = ""  # "module:function", the cheap pre-check (see the module docstring)
    convert: str = ""  # "module:function", the converter
    language_ids: tuple[str, ...] = ()  # editors' language ids of a buffer of this kind
    stand_in: str = ""  # name to convert content under whose kind was found otherwise (#! line, language id)
    interpreters: str = ""  # a regular expression of the #! programs whose scripts are of this kind
    named_suffixes: tuple[str, ...] = ()  # further suffixes, taken only for a file named on the command line
    precommit_types: tuple[str, ...] = ()  # identify's tags that pre-commit selects files of this kind by
    program: bool = False  # a program's source: no size limit, may be given alone to repository mode

    def matches(self, path: str, base: str) -> bool:
        """``path``: lower case with "/" separators; ``base``: its last part."""
        if path.endswith(self.suffixes):
            return self.pattern == "" or _compiled(self.pattern).search(path) is not None
        return base in self.names or base.startswith(self.prefixes)


KINDS: tuple[FileKind, ...] = (
    FileKind(
        "python",
        "Python",
        suffixes=(".py", ".pyw", ".pyi"),
        may_convert="transplant.formats.python:may_convert",
        convert="transplant.formats.python:convert",
        language_ids=("python",),
        stand_in="source.py",
        interpreters=r"python[\d.]*",
        precommit_types=("python", "pyi"),
        program=True,
    ),
    FileKind(
        "notebook",
        "notebook",
        suffixes=(".ipynb",),
        may_convert="transplant.formats.python:may_convert_cells",
        convert="transplant.formats.notebooks:convert",
        language_ids=("jupyter", "ipynb"),
        stand_in="source.ipynb",
        precommit_types=("jupyter",),
        program=True,
    ),
    FileKind(
        "shell",
        "shell script",
        suffixes=(".sh", ".bash"),
        may_convert="transplant.formats.shell:may_convert",
        convert="transplant.formats.shell:convert",
        language_ids=("shellscript", "sh", "bash"),
        stand_in="source.sh",
        interpreters=r"(?:ba|z|k|mk|da|a|c|tc)?sh",
        named_suffixes=(".zsh", ".ksh", ".dash", ".csh", ".tcsh"),
        precommit_types=("shell",),
        program=True,
    ),
    FileKind(
        "cpp",
        "C/C++/CUDA source",
        suffixes=CPP_SUFFIXES,
        size_limit=16 << 20,
        may_convert="transplant.formats.cpp:may_convert",
        convert="transplant.formats.cpp:convert",
        precommit_types=("c", "c++", "cuda"),
    ),
    FileKind(
        "requirements",
        "requirements",
        suffixes=(".txt",),
        pattern=r"(?:^|/)(?:[^/]*requirements[^/]*|constraints[^/]*|requirements/.*)\.txt$",
        size_limit=1 << 20,
        may_convert="transplant.formats.requirements:may_convert",
        convert="transplant.formats.requirements:convert",
        precommit_types=("plain-text",),
    ),
    FileKind(
        "build",
        "build file",
        suffixes=(".mk", ".make", ".cmake"),
        names=("makefile", "gnumakefile", "cmakelists.txt"),
        size_limit=1 << 20,
        may_convert="transplant.formats.buildfiles:may_convert",
        convert="transplant.formats.buildfiles:convert",
        precommit_types=("makefile", "cmake"),
    ),
    FileKind(
        "config",
        "configuration file",
        suffixes=(".yaml", ".yml", ".json", ".toml", ".ini", ".cfg"),
        size_limit=1 << 20,
        may_convert="transplant.formats.configs:may_convert",
        convert="transplant.formats.configs:convert",
        precommit_types=("yaml", "json", "toml", "ini"),
    ),
    FileKind(
        "dockerfile",
        "Dockerfile",
        suffixes=(".dockerfile",),
        names=("dockerfile", "containerfile"),
        prefixes=("dockerfile.",),
        size_limit=1 << 20,
        may_convert="transplant.formats.dockerfile:may_convert",
        convert="transplant.formats.dockerfile:convert",
        language_ids=("dockerfile",),
        stand_in="Dockerfile",
        precommit_types=("dockerfile",),
    ),
)
BY_NAME = {kind.name: kind for kind in KINDS}
PROGRAM_KINDS = frozenset(kind.name for kind in KINDS if kind.program)
LANGUAGE_KINDS = {language: kind.name for kind in KINDS for language in kind.language_ids}

_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    return compiled


def file_kind(path: str | os.PathLike[str]) -> str:
    """The name of the kind of ``path`` (by its name only), or OTHER."""
    name = str(path).replace("\\", "/").lower()
    base = name.rsplit("/", 1)[-1]
    for kind in KINDS:
        if kind.matches(name, base):
            return kind.name
    return OTHER


def named_kind(path: str) -> str | None:
    """The kind of a file named on the command line, by its name (with the suffixes taken only
    there), or None."""
    kind = file_kind(path)
    if kind != OTHER:
        return kind
    lower = path.lower()
    return next((k.name for k in KINDS if k.named_suffixes and lower.endswith(k.named_suffixes)), None)


_SHEBANG = re.compile(rb"^#!\s*(\S+)(?:[ \t]+(\S+))?")


def shebang_kind(head: bytes) -> str | None:
    """The kind a ``#!`` line names (``#!/usr/bin/env python3``, ``#!/bin/bash``), else None."""
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = os.path.basename(match.group(1)).decode("ascii", "replace")
    if program == "env" and match.group(2):
        program = os.path.basename(match.group(2)).decode("ascii", "replace")
    return next((k.name for k in KINDS if k.interpreters and re.fullmatch(k.interpreters, program)), None)


def detect_kind(name: str, head: bytes) -> str | None:
    """The kind of a file named on the command line, --stdin-filename or an editor's buffer: by its
    name, else by the ``#!`` line that starts ``head``; None when transplant does not convert it."""
    return named_kind(name) or shebang_kind(head)


def within_limits(kind: str, size: int) -> bool:
    limit = BY_NAME[kind].size_limit if kind in BY_NAME else None
    return limit is None or size <= limit


def small_enough(kind: str, path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is one of a kind transplant converts, small enough to be a project
    file of its kind (a larger one is data: copied unchanged, not walked into); looks at the file only
    for kinds with a limit. A file that cannot be looked at counts as small: reading it reports the
    problem."""
    found = BY_NAME.get(kind)
    if found is None or found.size_limit is None:
        return found is not None
    try:
        return os.path.getsize(path) <= found.size_limit
    except OSError:
        return True


def labels() -> str:
    """The kinds, for a message: "Python, notebook, ..."."""
    return ", ".join(kind.label for kind in KINDS)


_LOADED: dict[str, Callable] = {}


def _load(reference: str) -> Callable:
    function = _LOADED.get(reference)
    if function is None:
        module, name = reference.split(":")
        function = _LOADED[reference] = getattr(import_module(module), name)
    return function


def may_convert(kind: str, path: str, data: bytes, session: Session) -> bool:
    """The kind's pre-check: can its converter change or report anything in ``data``?"""
    return bool(_load(BY_NAME[kind].may_convert)(path, data, session))


def convert(kind: str, path: str, data: bytes, session: Session) -> Conversion:
    return _load(BY_NAME[kind].convert)(path, data, session)


def precommit_files() -> str:
    """The ``files`` pattern of the pre-commit hooks: every path a kind matches by name, and files
    without a suffix (scripts that a ``#!`` line makes Python or shell)."""
    parts = []
    for kind in KINDS:
        suffixes = kind.suffixes + kind.named_suffixes
        if kind.pattern:
            parts.append(kind.pattern)
        elif suffixes:
            parts.append(r"\.(?:" + "|".join(re.escape(s[1:]) for s in suffixes) + ")$")
        if kind.names:
            parts.append(r"(?:^|/)(?:" + "|".join(re.escape(n) for n in kind.names) + ")$")
        if kind.prefixes:
            parts.append(r"(?:^|/)(?:" + "|".join(re.escape(p) for p in kind.prefixes) + ")[^/]*$")
    parts.append(r"(?:^|/)[^/.]+$")
    return "(?i)" + "|".join(parts)


def precommit_types() -> list[str]:
    return sorted({tag for kind in KINDS for tag in kind.precommit_types})
