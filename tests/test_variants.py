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


def test_a_packages_other_backends_beside_its_npu_folder_are_notes(rows: list[tuple]):
    ops = {(r[0], r[4]): r for r in rows if r[0].startswith("ops/")}
    # ops/npu/builder.py repeats ops/builder.py: that module is the CUDA version, ops/xpu/ the XPU one
    for key in [("ops/builder.py", "torch.utils.cpp_extension.CUDAExtension"), ("ops/builder.py", "nvcc")]:
        assert ops[key][5] == "note" and "the version for CUDA" in ops[key][6] and "ops/npu/" in ops[key][6]
    xpu = [r for r in rows if r[0] == "ops/xpu/builder.py"]
    assert {r[4] for r in xpu} >= {"torch.utils.cpp_extension.CUDA_HOME", "torch.cuda.nccl"}
    assert all(r[5] == "note" for r in xpu)
    assert "the version for XPU" in {r[4]: r for r in xpu}["torch.utils.cpp_extension.CUDA_HOME"][6]
    # a module npu/ does not repeat: its ROCm-beside-CUDA helper asks for no NPU arm, its CUDA_HOME stays
    helper = ops[("ops/fused_scale.py", "torch.cuda.is_available")]
    assert helper[5] == "note" and "NPU versions of this package's modules in ops/npu/" in helper[6]
    assert ops[("ops/quantizer.py", "torch.utils.cpp_extension.CUDA_HOME")][5] == "warning"


def test_without_the_npu_folder_the_packages_findings_stay(tmp_path: Path):
    src = tmp_path / "proj"
    shutil.copytree(PROJECT, src)
    shutil.rmtree(src / "ops" / "npu")
    (src / "npu_check.py").write_text("try:\n    import torch_npu\nexcept ImportError:\n    torch_npu = None\n")
    found = sheet(convert_project(src, tmp_path / "out"), "Unsupported")
    ops = {(r[0], r[4]): r for r in found if r[0].startswith("ops/")}
    assert ops[("ops/builder.py", "nvcc")][5] == "warning"
    assert ops[("ops/fused_scale.py", "torch.cuda.is_available")][5] == "warning"  # add an NPU arm
    assert ops[("ops/xpu/builder.py", "torch.utils.cpp_extension.CUDA_HOME")][5] == "warning"


def test_backend_folders_need_a_repeated_module_and_a_backend_name():
    from transplant.project.variants import backend_folders

    paths = {"a/x.py", "a/y.py", "a/npu/x.py", "a/xpu/x.py", "a/xpu/z.py", "a/utils/x.py", "b/b.py", "b/npu/c.py"}
    found = backend_folders(paths)
    assert found["a/x.py"] == ("the version for CUDA", "a/npu")
    assert found["a/y.py"] == ("helper", "a/npu")
    assert found["a/xpu/z.py"] == ("the version for XPU", "a/npu")
    assert "a/utils/x.py" not in found  # not named for a backend
    assert not {"b/b.py", "b/npu/c.py"} & set(found)  # b/npu/ repeats nothing of b/
    assert "a/npu/x.py" not in found


def test_cuda_sources_of_an_operator_the_project_builds_for_npu_are_notes(rows: list[tuple]):
    sources = {r[0]: r for r in rows if r[0].startswith("csrc/")}
    # ops/softmax.py names softmax.cu; ops/npu/softmax_ops.py declares the same NAME = "softmax"
    for rel in ("csrc/softmax/softmax.cu", "csrc/softmax/softmax_utils.cuh"):  # the header it includes too
        assert sources[rel][5] == "note" and "CUDA source of ops/softmax.py" in sources[rel][6], rel
    # ops/quantizer.py's NAME = "quant" has no NPU builder: its kernel stays a warning
    assert sources["csrc/quant/quant.cu"][5] == "warning"


def test_without_the_npu_builder_its_cuda_sources_stay_warnings(tmp_path: Path):
    src = tmp_path / "proj"
    shutil.copytree(PROJECT, src)
    (src / "ops" / "npu" / "softmax_ops.py").unlink()
    found = sheet(convert_project(src, tmp_path / "out"), "Unsupported")
    cuda = [r for r in found if r[0].startswith("csrc/softmax/")]
    assert len(cuda) == 2 and all(r[5] == "warning" for r in cuda)
