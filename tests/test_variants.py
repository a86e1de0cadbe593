"""Files that are not the program an NPU runs (issue 36): their findings are notes that say why
(transplant/project/variants.py, formats/configs.py). The fixture project ``not_the_program`` and
its golden report ``tests/fixtures/reports/not_the_program.tsv``: Dockerfiles for CUDA beside the
project's own Ascend Dockerfile, GitHub CI files, an Nsight Systems trace list; look-alikes: the same
Dockerfiles in a project without Ascend images, a ``cuda,cpu`` list that is no trace list. And vllm
where the project installs vllm-ascend (project/plugins.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from goldens import check_text
from test_project import convert_project
from test_reports import as_tsv, sheet

PROJECT = FIXTURES / "projects" / "not_the_program"


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[tuple]:
    return sheet(convert_project(PROJECT, tmp_path_factory.mktemp("variants")), "Unsupported")


def test_report_matches_golden(rows: list[tuple]):
    check_text(FIXTURES / "reports" / "not_the_program.tsv", as_tsv(rows))


def test_cuda_images_beside_the_projects_ascend_images_are_notes(rows: list[tuple]):
    images = [r for r in rows if r[0] in ("Dockerfile", "docker/cu124/Dockerfile.base")]
    assert {(r[0], r[1]) for r in images} >= {("Dockerfile", 1), ("docker/cu124/Dockerfile.base", 1)}
    assert {r[4] for r in images} >= {"flash_attn", "pynvml", "apex"}  # packages, git URL included
    for r in images:
        assert r[5] == "note" and "docker/ascend/Dockerfile.ascend_a2" in r[6], r


def test_ci_files_are_notes(rows: list[tuple]):
    ci = [r for r in rows if r[0].startswith(".github/")]
    assert {r[0] for r in ci} == {".github/workflows/gpu_tests.yaml", ".github/scripts/check_driver.sh"}
    assert all(r[5] == "note" and "CI configuration" in r[6] for r in ci)


def test_nsight_trace_list_is_a_note_and_other_lists_stay(rows: list[tuple]):
    profile = {r[1]: r for r in rows if r[0] == "configs/profile.yaml"}
    assert profile[4][5] == "note" and "Nsight Systems" in profile[4][6] and profile[4][9] == "4, 5"
    assert profile[7][5] == "warning"  # backends: cuda,cpu


def test_without_ascend_images_the_cuda_images_stay_warnings(tmp_path: Path):
    src = tmp_path / "proj"
    shutil.copytree(PROJECT, src)
    shutil.rmtree(src / "docker" / "ascend")
    found = sheet(convert_project(src, tmp_path / "out"), "Unsupported")
    images = [r for r in found if r[0] in ("Dockerfile", "docker/cu124/Dockerfile.base")]
    assert images and all(r[5] == "warning" for r in images)


def test_vllm_where_the_project_installs_vllm_ascend_is_a_note(rows: list[tuple]):
    serve = {r[1]: r for r in rows if r[0] == "serve.py"}
    assert serve[1][5] == "note" and "installs vllm-ascend" in serve[1][6]  # from vllm import LLM
    assert serve[2][5] == "warning"  # vllm._custom_ops: CUDA ops the plugin does not provide


def test_without_vllm_ascend_vllm_stays_a_warning(tmp_path: Path):
    src = tmp_path / "proj"
    shutil.copytree(PROJECT, src)
    shutil.rmtree(src / "docker" / "ascend")
    found = sheet(convert_project(src, tmp_path / "out"), "Unsupported")
    serve = [r for r in found if r[0] == "serve.py"]  # one row: the two uses differ only in the name
    assert serve and all(r[5] == "warning" and "vllm-ascend" not in r[6] for r in serve)


def test_a_project_file_beside_its_npu_twin_is_a_note(rows: list[tuple]):
    twin = [r for r in rows if r[0] == "requirements-cuda.txt"]
    assert twin and all(r[5] == "note" and "requirements-npu.txt" in r[6] for r in twin)
    lone = [r for r in rows if r[0] == "requirements-gpu-extra.txt" and r[4] == "xformers"]
    assert [r[5] for r in lone] == ["warning"]  # requirements-npu-extra.txt does not exist
