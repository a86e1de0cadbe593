"""The registry of file kinds (transplant/filekinds.py): what each kind matches, and that everything
derived from it (the pre-commit hooks, the editors' language ids, the converters it names) agrees."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from transplant import filekinds
from transplant.filekinds import KINDS, LANGUAGE_KINDS, detect_kind, file_kind, named_kind, shebang_kind, small_enough

yaml = pytest.importorskip("yaml")


@pytest.mark.parametrize(
    "path, kind",
    [
        ("a/b.py", "python"),
        ("B.PYW", "python"),
        ("stubs/x.pyi", "python"),
        ("nb.ipynb", "notebook"),
        ("run.sh", "shell"),
        ("x\\y.bash", "shell"),
        ("k.cu", "cpp"),
        ("k.cuh", "cpp"),
        ("ops.c++", "cpp"),
        ("inc/x.h", "cpp"),
        ("requirements.txt", "requirements"),
        ("dev-requirements.txt", "requirements"),
        ("constraints-gpu.txt", "requirements"),
        ("requirements/base.txt", "requirements"),
        ("a/requirements/sub/x.txt", "requirements"),
        ("notes.txt", "other"),
        ("a/requirements.txt.bak", "other"),
        ("setup.cfg", "config"),
        ("c.YAML", "config"),
        ("pyproject.toml", "config"),
        ("Dockerfile", "dockerfile"),
        ("ci/Containerfile", "dockerfile"),
        ("Dockerfile.gpu", "dockerfile"),
        ("gpu.dockerfile", "dockerfile"),
        ("Dockerfile.yaml", "config"),
        ("mydockerfile", "other"),
        ("run.zsh", "other"),
        ("README.md", "other"),
        ("Makefile", "build"),
        ("CMakeLists.txt", "build"),
        ("rules.mk", "build"),
        ("Makefile.am", "other"),
    ],
)
def test_file_kind(path, kind):
    assert file_kind(path) == kind


def test_names_given_on_the_command_line_and_shebangs():
    assert named_kind("x.zsh") == named_kind("x.TCSH") == "shell"
    assert named_kind("notes.md") is None
    for line, kind in [
        (b"#!/usr/bin/env python3", "python"),
        (b"#!/usr/bin/python3.11 -u", "python"),
        (b"#! /bin/bash", "shell"),
        (b"#!/usr/bin/env mksh", "shell"),
        (b"#!/bin/sh -e", "shell"),
        (b"#!/usr/bin/env node", None),
        (b"#!/bin/fish", None),
        (b"import os", None),
    ]:
        assert shebang_kind(line + b"\n") == kind, line
    assert detect_kind("tool", b"#!/bin/bash\n") == "shell"
    assert detect_kind("tool.py", b"#!/bin/bash\n") == "python"  # the name decides first


def test_size_limits(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * ((1 << 20) + 1))
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    script = tmp_path / "big.py"
    script.write_bytes(b" " * ((1 << 20) + 1))
    assert not small_enough("config", big) and small_enough("config", small)
    assert small_enough("python", script)  # programs have no limit
    assert not small_enough("other", small)
    assert small_enough("cpp", tmp_path / "missing.cu")  # reading it reports the problem


def test_each_kind_names_converters_that_exist_and_stand_ins_of_its_own():
    for kind in KINDS:
        for reference in (kind.may_convert, kind.convert):
            module, name = reference.split(":")
            assert callable(getattr(__import__(module, fromlist=[name]), name)), reference
        if kind.stand_in:
            assert file_kind(kind.stand_in) == kind.name
        if kind.language_ids or kind.interpreters:
            assert kind.stand_in, kind.name  # content found by language or #! is converted under it
    assert len(LANGUAGE_KINDS) == sum(len(k.language_ids) for k in KINDS)  # no language id in two kinds
    assert {k.name for k in KINDS if k.program} == {"python", "notebook", "shell"}


def test_a_language_id_alone_picks_the_kind():
    from transplant.lsp.analysis import document_kind

    assert document_kind("untitled:Untitled-1", "FROM x\n", "dockerfile") == "dockerfile"
    assert document_kind("untitled:Untitled-2", "echo\n", "shellscript") == "shell"
    assert document_kind("file:///w/setup.cfg", "", "ini") == "config"  # the name decides first


def _hooks() -> list[dict]:
    return yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


def test_pre_commit_hooks_select_by_the_registry():
    for hook in _hooks():
        assert hook["files"] == filekinds.precommit_files()
        assert hook["types_or"] == filekinds.precommit_types()


def test_every_file_the_hooks_hand_over_is_one_transplant_converts():
    """A file pre-commit passes (its name matches ``files`` and identify gives it one of ``types_or``)
    must be one ``transplant --check`` accepts, or it would fail the hook with "not a file type".
    A name without a suffix counts only with a #! line (identify tags such files by it)."""
    identify = pytest.importorskip("identify.identify")
    files = re.compile(filekinds.precommit_files())
    types = set(filekinds.precommit_types())
    names = [f"x.{ext}" for ext in identify.extensions.EXTENSIONS] + list(identify.extensions.NAMES)
    handed = [n for n in names if files.search(n) and identify.tags_from_filename(n) & types]
    assert {"x.py", "x.ipynb", "x.cu", "x.yaml", "setup.cfg", "Dockerfile", "x.zsh"} <= set(handed)
    refused = [n for n in handed if detect_kind(n, b"") is None and "." in n]
    assert refused == []
    for tag in types:  # each tag selects some file of the registry's
        assert any(tag in identify.tags_from_filename(n) for n in handed), tag


def test_the_project_pass_finds_build_files_as_the_registry_does():
    # project/cuda_programs.py keeps its own copy of the build kind's names (importing filekinds
    # there would make a cycle through project/): the two must agree, name by name
    from transplant.filekinds import BY_NAME
    from transplant.project import cuda_programs

    build = BY_NAME["build"]
    assert cuda_programs.SIZE_LIMIT == build.size_limit
    samples = [*build.names, *(f"sub/x{s}" for s in build.suffixes), "Makefile", "CMakeLists.txt", "rules.mk"]
    for name in samples:
        lower = name.lower()
        assert cuda_programs.is_build_file(name) and build.matches(lower, lower.rsplit("/", 1)[-1]), name
    for name in ["makefile.py", "cmakelists.txt.in", "notes.md", "x.cmake.bak"]:
        assert not cuda_programs.is_build_file(name) and not build.matches(name, name), name
