"""A file converted on its own decides as repository mode on its project does (roots.py, issue 31)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from transplant import filemodes
from transplant.config import RuleOptions
from transplant.filetypes import file_kind
from transplant.project import NO_FACTS
from transplant.roots import npu_support_at, project_root, with_project_fact

MULTI = FIXTURES / "projects" / "multibackend"


def _alone(path: Path) -> filemodes.Outcome:
    """--check / --diff of one file: the file modes' conversion of that file alone."""
    target = filemodes.Target(str(path), str(path), file_kind(path.name))
    (outcome,) = filemodes.convert_targets([target], RuleOptions(), jobs=1, prefilter=True, after=False)
    return outcome


def _rows(records) -> list[tuple[int, str, str]]:
    return sorted((r.line, r.code, r.level) for r in records)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    shutil.copytree(MULTI, src)
    (src / ".git").mkdir()  # its root, as a clone has it
    return src


def test_each_file_alone_converts_as_in_its_repository(project: Path, tmp_path: Path):
    from test_project import convert_project

    result = convert_project(project, tmp_path / "out")
    files = sorted(p for p in project.rglob("*.py"))
    assert len(files) == 8
    for path in files:
        rel = path.relative_to(project)
        outcome = _alone(path)
        assert outcome.error is None, rel
        got = outcome.new if outcome.new is not None else path.read_bytes()
        assert got == (result / rel).read_bytes(), rel
    # what repository mode keeps for the project's sake is kept alone too, said the same way
    device = _alone(project / "pkg" / "device.py")
    assert device.new is None
    notes = [r.message for r in device.records if "a helper that already chooses among backends" in r.message]
    assert len(notes) == 3 and all("in a project that runs on NPU (pkg/" in n for n in notes)
    engine = _alone(project / "pkg" / "engines" / "nccl_engine.py")
    assert engine.new is None and any("hccl_engine.py" in r.message for r in engine.records)


def test_the_same_file_in_a_project_without_npu_converts(project: Path):
    """The look-alike: the same project with CUDA and ROCm helpers and no sign of NPU; memory.py alone
    converts its allocator call as repository mode does there."""
    from test_decisions import LOOK_ALIKE_DEVICE

    (project / "pkg" / "device.py").write_text(LOOK_ALIKE_DEVICE)
    outcome = _alone(project / "pkg" / "memory.py")
    assert outcome.new is not None and b"torch_npu.npu.memory._set_allocator_settings(" in outcome.new


def test_the_root_is_the_nearest_folder_with_a_marker(tmp_path: Path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "requirements-dev.txt").write_text("pytest\n")
    (tmp_path / "a" / "b" / "c" / "x.py").write_text("import torch\n")
    assert project_root(str(tmp_path / "a" / "b" / "c" / "x.py")) == str((tmp_path / "a").resolve())
    (tmp_path / "a" / "b" / "pyproject.toml").write_text("")
    assert project_root(str(tmp_path / "a" / "b" / "c" / "x.py")) == str((tmp_path / "a" / "b").resolve())


def test_nothing_outside_the_root_counts(tmp_path: Path):
    """A sign of NPU above the project root (a monorepo's other project) is not this project's."""
    (tmp_path / "other").mkdir()
    (tmp_path / "requirements.txt").write_text("torch-npu==2.6.0\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    (inner / "m.py").write_text("import torch\n")
    assert npu_support_at(str(inner.resolve())) == ""
    assert with_project_fact(NO_FACTS, str(inner / "m.py")) is NO_FACTS
    assert npu_support_at(str(tmp_path.resolve())) == "requirements.txt:1: ships NPU requirements (torch_npu)"
    (tmp_path / "m.py").write_text("import torch\n")
    facts = with_project_fact(NO_FACTS, str(tmp_path / "m.py"))
    assert facts.npu_support.startswith("requirements.txt:1:")
    assert with_project_fact(NO_FACTS, str(tmp_path / "m.py")) is facts  # one object per fact


def test_standard_input_with_a_file_name_uses_its_project(project: Path):
    from test_filemodes import run_module

    data = (project / "pkg" / "device.py").read_bytes()
    named = run_module("--stdin-filename", str(project / "pkg" / "device.py"), "-", input=data)
    assert named.stdout == data  # kept as repository mode keeps it
    unnamed = run_module("-", input=data)
    assert unnamed.stdout != data


def test_the_language_server_converts_a_document_with_its_projects_fact(project: Path):
    pytest.importorskip("pygls")
    from transplant.lsp.server import build_server

    server = build_server()
    path = project / "train.py"
    facts = server.session_for(path.as_uri()).facts
    assert facts.npu_support.startswith("pkg/device.py:")
    loose = project.parent / "loose.py"  # outside the project: no root of its own above it
    loose.write_text("import torch\n")
    if not project_root(str(loose)):
        assert server.session_for(loose.as_uri()).facts.npu_support == ""
