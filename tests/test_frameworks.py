"""Frameworks, CUDA programs, build files and conda environments (issue 20).

Golden reports (the Unsupported sheet's rows as File, Line, Level, API, Message, Count, Lines) of
the fixture projects ``frameworks_mixed`` (transformers' attention implementation, accelerate's
config files, Lightning's accelerator, DeepSpeed's accelerator interface) and ``cuda_programs``
(Makefile / CMake CUDA programs, an extension of template instantiations and headers, loose .cu
files, a conda environment) and ``library_context`` (a library's uses in one file as one row, optional
imports, the project's own package, an extension the project builds, pyproject metadata) are
``tests/fixtures/reports/<name>.tsv``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from test_project import convert_project
from test_reports import as_tsv, sheet
from transplant.filetypes import convert_file, file_kind
from transplant.formats.buildfiles import convert_build_file
from transplant.formats.conda import environment_records, is_environment
from transplant.formats.framework_configs import framework_config
from transplant.project.calls import python_findings

CONTEXT = FIXTURES / "projects" / "library_context"
FRAMEWORKS = FIXTURES / "projects" / "frameworks_mixed"
PROGRAMS = FIXTURES / "projects" / "cuda_programs"


@pytest.fixture(scope="module")
def frameworks_result(tmp_path_factory) -> Path:
    return convert_project(FRAMEWORKS, tmp_path_factory.mktemp("frameworks"))


@pytest.fixture(scope="module")
def programs_result(tmp_path_factory) -> Path:
    return convert_project(PROGRAMS, tmp_path_factory.mktemp("programs"))


def test_frameworks_report_matches_golden(frameworks_result: Path):
    expected = (FIXTURES / "reports" / "frameworks_mixed.tsv").read_text(encoding="utf-8")
    assert as_tsv(sheet(frameworks_result, "Unsupported")) == expected


def test_cuda_programs_report_matches_golden(programs_result: Path):
    expected = (FIXTURES / "reports" / "cuda_programs.tsv").read_text(encoding="utf-8")
    assert as_tsv(sheet(programs_result, "Unsupported")) == expected


def test_accelerate_configs_change_only_the_distributed_type(frameworks_result: Path):
    for rel in ("configs/accelerate_multi.yaml", "configs/accelerate.json"):
        before = (FRAMEWORKS / rel).read_bytes()
        after = (frameworks_result / rel).read_bytes()
        assert after == before.replace(b"MULTI_GPU", b"MULTI_NPU"), rel
    assert b"\r\n" in (frameworks_result / "configs/accelerate.json").read_bytes()  # line ends kept
    # not accelerate's file, or not a GPU type: left as they are
    for rel in ("configs/not_accelerate.yaml", "configs/fsdp.yaml", "configs/lightning.yaml", "model/config.json"):
        assert (frameworks_result / rel).read_bytes() == (FRAMEWORKS / rel).read_bytes(), rel


def test_accelerate_conversion_is_idempotent(rules):
    data = (FRAMEWORKS / "configs/accelerate_multi.yaml").read_bytes()
    first = convert_file("configs/default_config.yaml", data, rules)
    assert [r.code for r in first.records] == ["TP103"]
    second = convert_file("configs/default_config.yaml", first.new, rules)
    assert second.new is None and second.records == []


def test_deepspeed_accelerator_code_needs_nothing(frameworks_result: Path):
    rel = "train_deepspeed.py"
    assert (frameworks_result / rel).read_bytes() == (FRAMEWORKS / rel).read_bytes()
    assert not [r for r in sheet(frameworks_result, "Unsupported") if r[0] == rel]


def test_lightning_and_attention_are_reported_not_rewritten(frameworks_result: Path):
    for rel in ("train_hf.py", "train_lightning.py"):
        assert (frameworks_result / rel).read_bytes() == (FRAMEWORKS / rel).read_bytes()


def test_lightning_accelerator_needs_a_lightning_import():
    lookalike = b'from mylib import Trainer\nTrainer(accelerator="gpu")\n'
    assert python_findings(lookalike) == []
    aliased = b'from lightning import Trainer as T\nT(max_epochs=1, accelerator="gpu")\n'
    assert [(r.line, r.code, r.api) for r in python_findings(aliased)] == [(2, "TP207", "lightning accelerator")]


def test_attention_keyword_styles():
    source = (
        b"import transformers as tf\n"
        b"cfg = {}\n"
        b'cfg["attn_implementation"] = "flash_attention_2"\n'
        b'm = tf.AutoModel.from_config(c, attn_implementation="eager")\n'
        b'c = dict(attn_implementation="flash_attention_2")\n'
        b'x: str = "flash_attention_2"  # a plain variable is not a setting\n'
    )
    assert [(r.line, r.api, r.level) for r in python_findings(source)] == [
        (3, "flash_attention_2", "warning"),
        (5, "flash_attention_2", "warning"),
    ]


def test_framework_config_lookalikes():
    assert framework_config("x.yaml", b"training:\n  distributed_type: MULTI_GPU\n").new is None
    quoted = framework_config("a.yaml", b"compute_environment: LOCAL_MACHINE\ndistributed_type: 'MULTI_GPU'\n")
    assert quoted.new == b"compute_environment: LOCAL_MACHINE\ndistributed_type: 'MULTI_NPU'\n"
    # a comment that names the words is no setting
    assert framework_config("b.yaml", b"# accelerator: gpu\nmodel: x\n").records == []


def test_conda_environment_detection_and_lookalikes():
    env = b"name: e\nchannels: [pytorch, nvidia]\ndependencies:\n  - libcurl\n  - cuda-python\n  - pytorch::pytorch\n"
    assert is_environment("envs/dev.yml", env)
    assert not is_environment("ci.yml", b"jobs:\n  dependencies:\n    - nccl\n")
    found = [(r.line, r.api) for r in environment_records(env)]
    # the nvidia channel in a flow list; cuda-python is packages.json's, not a cuda-* toolkit piece; libcurl is nothing
    assert found == [(2, "nvidia"), (5, "cuda"), (6, "torch_npu")]
    with_npu = env + b"  - pip:\n    - torch_npu==2.1.0\n"
    assert "torch_npu" not in [r.api for r in environment_records(with_npu)]


def test_build_files():
    assert file_kind("native/CMakeLists.txt") == "build" and file_kind("Makefile") == "build"
    assert file_kind("cmake/FindNCCL.cmake") == "build" and file_kind("notes.txt") == "other"
    ext = b"find_package(Torch REQUIRED)\nenable_language(CUDA)\nadd_library(ops SHARED ops.cu)\n"
    (record,) = convert_build_file("CMakeLists.txt", ext).records
    assert record.line == 2 and record.api == "CUDA build" and "NpuExtension" in record.suggestion
    assert convert_build_file("Makefile", b"# nvcc is not used here\nall:\n\tgcc -o a a.c\n").records == []
    (program,) = convert_build_file("Makefile", b"all:\n\tnvcc -o a a.cu -lnccl\n").records
    assert program.api == "CUDA program" and "Ascend C" in program.suggestion and "(nvcc, NCCL)" in program.message


def test_dependency_routes_fit_the_use():
    from transplant.formats.requirements import convert_requirements

    text = (
        b"bitsandbytes\nxformers\nflash-attn-triton\ncausal-conv1d>=1.2\nmamba-ssm\nnvidia-cutlass-dsl\n"
        b"nvidia-cublas-cu12\nonnxruntime-gpu\nvllm\n"
    )
    routes = {r.api: r.suggestion for r in convert_requirements(text).records}
    assert "unquantised" in routes["bitsandbytes"] and "NpuFusedAdamW" in routes["bitsandbytes"]  # loading, optimisers
    assert "npu_swiglu" in routes["xformers"] and "scaled_dot_product_attention" in routes["xformers"]
    assert "npu_fusion_attention" in routes["flash_attn"]
    assert "selective_scan_ref" in routes["mamba_ssm"] and "conv1d" in routes["causal_conv1d"]
    assert "Ascend C" in routes["cutlass"]  # not the nvidia-* wheels' "not needed"
    assert "not needed" in routes["nvidia CUDA wheels"]
    assert "CANN" in routes["onnxruntime"] and "vllm-ascend" in routes["vllm"]


def test_library_context_report_matches_golden(tmp_path):
    result = convert_project(CONTEXT, tmp_path)
    rows = sheet(result, "Unsupported")
    assert as_tsv(rows) == (FIXTURES / "reports" / "library_context.tsv").read_text(encoding="utf-8")
    # one row for the CuTe DSL kernel file, naming what it uses; never one row per name
    cute = [r for r in rows if r[0] == "kernels/cute_kernel.py"]
    assert len(cute) == 1 and "cutlass.cute.Tensor" in cute[0][6] and cute[0][8] == 11
    # the library rule of an extension the project builds leaves it to the project's own findings
    assert not [r for r in rows if r[4] == "selective_scan_cuda" and r[5] != "note"]
    # an import whose except clause only passes, with every use inside the try's body: notes
    optional = [r for r in rows if r[0] == "models/optimizers.py"]
    assert optional and all(r[5] == "note" for r in optional)
    assert any("in the try body of its optional import" in r[6] for r in optional)
    # the same clause where the name is read after the try: the import stays an error
    required = {r[1]: r for r in rows if r[0] == "models/fused_optimizers.py"}
    assert required[2][5] == "error"


def test_pinned_requirements_in_a_pyproject_array_are_all_read():
    from transplant.formats.requirements import pyproject_items

    text = '[project]\ndependencies = [\n  "tilelang==0.1.8",\n  "flash-attn>=2",\n]\n"quoted" = ["x"]\n'
    assert [t for _, _, t in pyproject_items(text)] == ["tilelang==0.1.8", "flash-attn>=2"]


def test_optional_import_lines():
    import ast

    from transplant.project.library_context import optional_import_lines

    tree = ast.parse(
        "try:\n    import a\nexcept ImportError:\n    a = None\n"
        "try:\n    import b\nexcept KeyError:\n    pass\n"
        "try:\n    x = 1\nexcept ImportError:\n    pass\n"
        "try:\n    import c\nexcept ImportError as e:\n    print(e)\n    sys.exit(-1)\n"
        "try:\n    import d\nexcept ImportError:\n    logging.error('install d')\n"
        "try:\n    import e\nexcept ImportError:\n    HAS_E = False\n"
        "try:\n    import f\n    OPTIMIZERS.append(f.Adam)\nexcept ImportError:\n    pass\n"
        "d.run()\n"
    )
    # a clause that exits, raises or only logs makes the import required where the name is read
    # after the try (d); one that only passes is enough where the try's body holds every use (f)
    imports, handlers, bodies = optional_import_lines(tree)
    assert (imports, handlers) == ({2, 23, 27}, {3, 4, 24, 25, 29, 30})
    assert bodies == {2, 23, 27, 28}


def test_words_that_describe_a_project_are_not_settings():
    from transplant.formats.configs import convert_config

    data = (
        b'[project]\nkeywords = ["cuda", "pytorch"]\nclassifiers = ["Environment :: GPU :: NVIDIA CUDA"]\n'
        b'[tool.run]\nname = "cuda"\n'
    )
    assert [r.line for r in convert_config("pyproject.toml", data).records] == [5]


def test_a_helper_build_with_function_local_sources_names_its_operators(tmp_path):
    root = tmp_path / "p"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "act.py").write_text(
        "import os\nfrom . import custom_ops\nSOURCES = ['unrelated.cpp']\n\n\ndef _init():\n"
        "    sources = ['act.cpp', 'act.cu']\n"
        "    sources = [os.path.join(os.path.dirname(__file__), s) for s in sources]\n"
        "    return custom_ops.get_plugin('act_plugin', sources=sources, extra_cuda_cflags=['--use_fast_math'])\n"
    )
    (root / "ops" / "act.cpp").write_text(
        '#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n  m.def("act", &act);\n}\n'
    )
    (root / "ops" / "act.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    rows = sheet(convert_project(root, tmp_path / "out"), "Unsupported")
    registered = [r for r in rows if r[0] == "ops/act.cpp"]
    assert [(r[4], r[5]) for r in registered] == [("act_plugin.act", "warning")]  # not TORCH_EXTENSION_NAME.act
    (build,) = [r for r in rows if r[0] == "ops/act.py"]
    assert "(act.cpp, act.cu)" in build[6]
