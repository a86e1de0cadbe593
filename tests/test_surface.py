"""Issue 11, kinds 4 and 6: custom CUDA/C++ operators and project files that are not Python.

A multi-file project (tests/fixtures/projects/custom_ops_cuda: a GBK-encoded .cu, a pybind11 and a
TORCH_LIBRARY .cpp, setup.py with CUDAExtension and nvcc flags, load_inline, calls through
``ext.op`` and ``torch.ops.ns.op``, requirements, YAML/JSON configs, a Dockerfile, a shell script
with nvidia-smi; and, for the Python kinds of the same issue, a script that gets torch through
``from models import *``, uses a torch.cuda name the tables lack, a device in a variable, a backend
default of getattr, flash_attn, and a device-to-backend mapping that must stay) converted to its
expected tree and reports; then each piece on its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import openpyxl
import pytest

from conftest import FIXTURES, REPO, cached_ruleset
from goldens import check_tree
from test_project import REPORTS, check_change_list, convert_project, read_change_list, tree
from transplant.filetypes import FileResult, convert_file, file_kind
from transplant.formats.configs import convert_config
from transplant.formats.requirements import pyproject_items, requirement_records, setup_cfg_items
from transplant.reports.linemap import new_lines
from transplant.project import gather
from transplant.project.cpp_ops import scan
from transplant.records import Record
from transplant.reports.sheets import library_rows, operator_rows

SOURCE = FIXTURES / "projects" / "custom_ops_cuda"
EXPECTED = FIXTURES / "projects" / "custom_ops_cuda_msft"


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return convert_project(SOURCE, tmp_path_factory.mktemp("surface"))


@pytest.fixture(scope="module")
def workbook(result):
    return openpyxl.load_workbook(result / "unsupported_op.xlsx")


def rows(ws) -> list[tuple]:
    return list(ws.iter_rows(min_row=2, values_only=True))


def places(ws) -> list[tuple]:
    """The Unsupported sheet's rows, one per finding: a row that counts several identical findings
    (Count, Lines) stands for each of its lines."""
    out = []
    for row in rows(ws):
        lines = [int(n) for n in row[9].split(", ")] if row[9] else [row[1]]
        out += [(row[0], line, *row[2:]) for line in lines]
    return out


def test_tree_matches_expected_byte_for_byte(result):
    check_tree(EXPECTED, result, ignore=REPORTS)
    # C++ and CUDA sources are copied byte for byte, the GBK comment included
    for name in (
        "csrc/fused_add_kernel.cu",
        "csrc/fused_add.cpp",
        "csrc/scale_ops.cpp",
        "setup.py",
        "requirements.txt",
        "fused/__init__.py",
    ):
        assert (result / name).read_bytes() == (SOURCE / name).read_bytes(), name
    assert "融合加法".encode("gbk") in (result / "csrc/fused_add_kernel.cu").read_bytes()


def test_change_list(result):
    check_change_list(EXPECTED, result)
    _, got = read_change_list(result)
    changes = {(r["File"], r["Start Line"], r["Code"]) for r in got}
    assert {
        ("configs/train.yaml", "2", "TP104"),
        ("configs/train.yaml", "3", "TP103"),
        ("configs/eval.json", "2", "TP104"),
        ("configs/eval.json", "3", "TP103"),
        ("Dockerfile", "2", "TP105"),
        ("Dockerfile", "5", "TP107"),
        ("scripts/check_gpu.sh", "3", "TP107"),
        ("scripts/check_gpu.sh", "6", "TP105"),
    } <= changes


def test_custom_operators_sheet(workbook):
    assert workbook.sheetnames == ["Unsupported", "NPU paths", "API counts", "Custom operators", "Libraries", "Summary"]
    ws = workbook["Custom operators"]
    assert [c.value for c in ws[1]] == ["File", "Operator", "Registration line", "Calls found"]
    assert rows(ws) == [
        ("csrc/fused_add.cpp", "fused._C.fused_add", 11, "fused/__init__.py:6"),
        ("csrc/fused_add.cpp", "fused._C.fused_add_inplace", 12, "train.py:14 (converted: 15)"),
        ("csrc/fused_add_kernel.cu", "(CUDA kernels, no operator registered)", None, None),
        ("csrc/scale_ops.cpp", "torch.ops.myops.scale", 8, "train.py:15 (converted: 16)"),
        ("csrc/scale_ops.cpp", "torch.ops.myops.scale", 12, "train.py:15 (converted: 16)"),
        (None, "relu_ext.relu", None, "fused/jit.py:11 (converted: 12)"),
    ]


def test_libraries_sheet(workbook):
    ws = workbook["Libraries"]
    assert [c.value for c in ws[1]] == ["Library", "Uses", "Where", "NPU route"]
    got = {r[0]: r[1:3] for r in rows(ws)}
    assert got == {
        "apex": (1, "setup.py:11"),
        "flash_attn": (4, "Dockerfile:4, evaluate.py (2), requirements.txt:4"),
        "pynvml": (1, "requirements.txt:6"),
    }
    assert "torch_npu.optim.NpuFusedAdam" in rows(ws)[0][3]


def test_unsupported_sheet_gives_original_and_converted_lines(workbook):
    ws = workbook["Unsupported"]
    assert [c.value for c in ws[1]][:4] == ["File", "Line", "Converted line", "Column"]
    found = {(r[0], r[1], r[2], r[4], r[5]) for r in rows(ws)}
    found |= {(r[0], r[1], None, r[4], r[5]) for r in places(ws)}  # grouped findings: by their lines
    assert ("train.py", 14, 15, "fused._C.fused_add_inplace", "error") in found
    assert ("train.py", 15, 16, "torch.ops.myops.scale", "error") in found
    assert ("fused/__init__.py", 6, 6, "fused._C.fused_add", "error") in found
    assert ("setup.py", 13, 13, "torch.utils.cpp_extension.CUDAExtension", "warning") in found
    assert ("setup.py", 16, 16, "nvcc", "warning") in found
    assert ("requirements.txt", 3, 3, "torch_npu", "note") in found
    assert ("Dockerfile", 1, 1, "nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04", "warning") in found
    # accelerator: cuda is reported; no Python file imports Lightning, so as a note (issue 36)
    assert ("configs/train.yaml", 6, 6, "lightning accelerator", "note") in found
    assert ("scripts/check_gpu.sh", 4, 4, "nvidia-smi", "warning") in found  # with options: reported
    # the Python kinds: an unknown torch.cuda name reached through a star import, a CUDA-only library
    assert ("evaluate.py", 14, 15, "torch.cuda.set_sync_debug_mode_soon", "error") in found
    assert ("evaluate.py", 3, 4, "flash_attn", "error") in found
    flash = [r for r in rows(ws) if r[0] == "evaluate.py" and r[4] == "flash_attn"]
    assert [(r[1], r[8], r[9]) for r in flash] == [(3, 2, "3, 16")]  # the same finding twice: one row
    # one finding per API and place: the project scan's build finding replaces the generic rule's
    setup = [r for r in rows(ws) if r[0] == "setup.py" and r[4] == "torch.utils.cpp_extension.CUDAExtension"]
    assert [r[1] for r in setup] == [13, 18]
    for row in rows(ws):
        moved = new_lines((SOURCE / row[0]).read_bytes(), (EXPECTED / row[0]).read_bytes(), [row[1]])[row[1]]
        assert row[2] == moved, row


def test_converting_the_result_again_changes_nothing():
    rules = cached_ruleset()
    for name in sorted(tree(EXPECTED) - REPORTS):
        res = convert_file(name, (EXPECTED / name).read_bytes(), rules)
        assert res.new is None and res.changes == [], name


# a mapping from device type to backend names both and is right as it is (issue 11): it must stay silent
DEVICE_TO_BACKEND = re.compile(rb"\{\s*\"cuda\"\s*:\s*\"nccl\"\s*,\s*\"npu\"\s*:\s*\"hccl\"\s*\}")


def test_every_cuda_tie_is_rewritten_or_reported(result):
    """Each line of the project that names CUDA is changed, or named by a report row."""
    _, changes = read_change_list(result)
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    reported = {(r[0], r[1]) for r in places(wb["Unsupported"])} | {(r["File"], int(r["Start Line"])) for r in changes}
    files_reported = {r[0] for r in rows(wb["Unsupported"])}
    tie = re.compile(
        rb"(?<![\w/])(cuda(:\d)?|nccl|nvidia-smi|CUDA_VISIBLE_DEVICES|nvcc|_C\.|torch\.ops\.myops|flash-attn"
        rb"|relu_ext\.)(?![\w-])"
    )
    for name in sorted(tree(SOURCE)):
        data = (SOURCE / name).read_bytes()
        if file_kind(name) == "cpp":
            assert name in files_reported, name
            continue
        for number, line in enumerate(data.splitlines(), start=1):
            code = line.split(b"#", 1)[0] if not name.endswith(".json") else line
            if tie.search(code) and b"import" not in code and not DEVICE_TO_BACKEND.search(code):
                assert (name, number) in reported, (name, number, line)


def test_check_on_the_folder_reports_the_same_findings(result):
    out = subprocess.run(
        [sys.executable, "-m", "transplant", "--check", "--format", "json", "-q", "."],
        cwd=SOURCE,
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert out.returncode == 1, out.stderr
    diagnostics = json.loads(out.stdout)
    findings = {(d["path"], d["line"], d["code"], d["level"]) for d in diagnostics if d["level"] != "fix"}
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    expected = {(r[0], r[1], r[5]) for r in places(wb["Unsupported"])}
    assert {(p, line, level) for p, line, _, level in findings} == expected
    codes = {code for *_, code, _ in findings}
    assert {"TP204", "TP205", "TP206", "TP207"} <= codes
    sarif = subprocess.run(
        [sys.executable, "-m", "transplant", "--check", "--format", "sarif", "-q", "."],
        cwd=SOURCE,
        capture_output=True,
        text=True,
        env=_env(),
    )
    log = json.loads(sarif.stdout)
    rule_ids = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert {"TP107", "TP204", "TP205", "TP206", "TP207"} <= rule_ids
    assert any(
        r["ruleId"] == "TP204"
        and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "csrc/scale_ops.cpp"
        for r in log["runs"][0]["results"]
    )


def _env():
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


# ---- C++ scan


def test_cpp_scan_ignores_comments_and_strings_and_survives_any_bytes():
    data = (
        b'// m.def("fake", f)\n/* TORCH_LIBRARY(no, m) { m.def("x"); } */\n'
        b'PYBIND11_MODULE(my_ext, m) {\n  m.def("real", &f, "doc m.def(\\"inner\\")");\n'
        b'  const char* s = "}";\n  m.def("second", &g);\n}\n'
        b'TORCH_LIBRARY_FRAGMENT(ns, lib) { lib.def(TORCH_SELECTIVE_SCHEMA("ns::op.out(Tensor a) -> Tensor")); }\n'
    )
    found = [(r.line, r.macro, r.module, r.op) for r in scan(data).registrations]
    assert found == [
        (4, "PYBIND11_MODULE", "my_ext", "real"),
        (6, "PYBIND11_MODULE", "my_ext", "second"),
        (8, "TORCH_LIBRARY_FRAGMENT", "ns", "op"),
    ]
    for garbage in (bytes(range(256)) * 4, b"PYBIND11_MODULE(x, m) {" + b"\xff\xfe" * 100, "中文".encode("gbk")):
        scan(garbage)


def test_literal_pybind_module_and_its_calls_without_a_build(tmp_path):
    (tmp_path / "ops.cpp").write_text('PYBIND11_MODULE(my_ext, m) { m.def("go", &go); }\n')
    (tmp_path / "use.py").write_text("import my_ext as e\nfrom my_ext import go\ne.go(1)\ngo(2)\nmy_extension.go(3)\n")
    facts = gather([("ops.cpp", str(tmp_path / "ops.cpp")), ("use.py", str(tmp_path / "use.py"))])
    res = convert_file("use.py", (tmp_path / "use.py").read_bytes(), cached_ruleset(), facts=facts)
    assert [(r.line, r.col, r.api, r.level) for r in res.findings] == [
        (3, 1, "my_ext.go", "warning"),
        (4, 1, "my_ext.go", "warning"),
    ]
    assert res.new is None
    # without the project facts the pre-filter skips the file: nothing there names CUDA
    assert convert_file("use.py", (tmp_path / "use.py").read_bytes(), cached_ruleset()).skipped


def test_torch_ops_of_another_namespace_and_aliases(tmp_path):
    (tmp_path / "k.cu").write_text('TORCH_LIBRARY(fast, m) { m.def("gelu(Tensor x) -> Tensor"); }\n')
    facts = gather([("k.cu", str(tmp_path / "k.cu"))])
    src = b"import torch as th\nfrom torch import ops\nth.ops.fast.gelu(x)\nops.fast.gelu(x)\nth.ops.aten.add(x, x)\nf = getattr(th.ops.fast, 'gelu')\n"
    res = convert_file("m.py", src, cached_ruleset(), facts=facts)
    assert [(r.line, r.api) for r in res.findings] == [
        (3, "torch.ops.fast.gelu"),
        (4, "torch.ops.fast.gelu"),
        (6, "torch.ops.fast"),
    ]
    assert all(r.level == "error" and r.code == "TP204" for r in res.findings)


def _notebook(*cells: list[str]) -> bytes:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": cell}
                for cell in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    ).encode()


def test_notebook_cells_calling_custom_operators_are_reported(tmp_path):
    (tmp_path / "ops.cu").write_text(
        'PYBIND11_MODULE(my_ext, m) { m.def("go", &go); }\n'
        'TORCH_LIBRARY(fast, m) { m.def("gelu(Tensor x) -> Tensor"); }\n'
    )
    facts = gather([("ops.cu", str(tmp_path / "ops.cu"))])
    data = _notebook(
        ["%matplotlib inline\n", "import my_ext as e\n", "import torch as th\n"],
        ["!ls\n", "y = e.go(x)\n", "z = th.ops.fast.gelu(y)\n"],
        ["print('my_ext.go is fast')\n", "th.ops.aten.add(y, y)\n", "my_extension.go(3)\n"],
        ["%%bash\n", "my_ext.go\n"],
    )
    res = convert_file("nb.ipynb", data, cached_ruleset(), facts=facts)
    # an import in one cell, the call in the next: read as one program, placed in the cell
    assert [(r.cell, r.line, r.col, r.code, r.level, r.api) for r in res.findings] == [
        (1, 2, 1, "TP204", "error", "my_ext"),  # the import of the compiled CUDA extension fails first
        (2, 2, 5, "TP204", "error", "my_ext.go"),
        (2, 3, 5, "TP204", "error", "torch.ops.fast.gelu"),
    ]
    assert res.new is None
    # without the project's facts nothing in the notebook names CUDA: the pre-filter skips it
    assert convert_file("nb.ipynb", data, cached_ruleset()).skipped
    # a cell that does not parse does not hide the others' findings (they are then read cell by cell)
    broken = _notebook(["import my_ext\n", "my_ext.go(1)\n"], ["def f(:\n"])
    res = convert_file("nb.ipynb", broken, cached_ruleset(), facts=facts)
    assert [(r.cell, r.line, r.api) for r in res.findings if r.code == "TP204"] == [
        (1, 1, "my_ext"),
        (1, 2, "my_ext.go"),
    ]


def test_notebook_builds_and_a_project_finding_replace_the_generic_one(tmp_path):
    data = _notebook(
        ["from torch.utils.cpp_extension import load_inline\n"],
        ["ext = load_inline(name='inl', cpp_sources=[''], cuda_sources=[src], functions=['go'])\n", "ext.go(x)\n"],
    )
    res = convert_file("nb.ipynb", data, cached_ruleset())
    found = [(r.cell, r.line, r.code, r.api) for r in res.findings]
    assert (2, 1, "TP205", "torch.utils.cpp_extension.load_inline") in found
    assert (2, 2, "TP204", "inl.go") in found
    assert len([f for f in found if f[1] == 1 and f[0] == 2]) == 1  # one finding per API and place


def test_a_cuda_build_finding_makes_no_deprecated_syntax_tree_node():
    # the finding's position is carried by an ast.Call made for it: Python 3.13 warns when one of its
    # fields is left out, 3.15 refuses it (found by mypy; on an older Python this passes either way)
    src = b"from torch.utils.cpp_extension import CUDAExtension\nx = 1\nCUDAExtension('a', ['a.cu'])\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = convert_file("setup.py", src, cached_ruleset())
    found = [(r.line, r.col, r.api) for r in res.findings if r.code == "TP205"]
    assert found == [(3, 1, "torch.utils.cpp_extension.CUDAExtension")]


def test_skip_comments_apply_to_project_findings(tmp_path):
    src = b"from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('a', ['a.cu'])  # transplant: skip\n"
    assert not [r for r in convert_file("setup.py", src, cached_ruleset()).findings if r.code == "TP205"]


# ---- configuration files


@pytest.mark.parametrize(
    "name,src,out",
    [
        (
            "a.yaml",
            b'device: "cuda:1"\r\ntrain:\n  - device: cuda  # gpu\n',
            b'device: "npu:1"\r\ntrain:\n  - device: npu  # gpu\n',
        ),
        (
            "a.json",
            b'{"device":"cuda","x":{"dist_backend": "nccl"},"name":"cuda"}',
            b'{"device":"npu","x":{"dist_backend": "hccl"},"name":"cuda"}',
        ),
        (
            "a.toml",
            b"[trainer]\neval_device = 'cuda:0'\nbackend=\"nccl\"\n",
            b"[trainer]\neval_device = 'npu:0'\nbackend=\"hccl\"\n",
        ),
        ("a.ini", b"[run]\ndevice = cuda\n; device = cuda\n", b"[run]\ndevice = npu\n; device = cuda\n"),
    ],
)
def test_config_values_under_device_and_backend_keys_are_converted(name, src, out):
    conv = convert_config(name, src)
    assert conv.new == out
    assert convert_config(name, out).new is None


@pytest.mark.parametrize(
    "src",
    [
        b"device: cudnn\n",
        b"device_count: 2\n",
        b"# device: cuda\n",
        b"cuda_version: '12.1'\n",
        b"device: cuda_graphs\n",
        b"backend: gloo\n",
        b"device: npu\n",
    ],
)
def test_config_look_alikes_are_left_alone(src):
    conv = convert_config("c.yaml", src)
    assert conv.new is None and conv.changes == []


@pytest.mark.parametrize(
    "name,src,reported",
    [
        ("prof.yaml", b"profiler:\n  cuda: True\n  cpu: true\naccelerator: cuda\n", [(4, "cuda")]),
        ("flow.yaml", b"opts: {cuda: true, device_name: cuda}\n- cuda\n", [(1, "cuda"), (2, "cuda")]),
        ("prof.json", b'{"profiler": {"cuda": true, "with_stack": false}, "accelerator": "cuda"}', [(1, "cuda")]),
        ("prof.ini", b"[profiler]\ncuda = yes\naccelerator = cuda\n", [(3, "cuda")]),
    ],
)
def test_config_keys_named_cuda_are_switches_not_values(name, src, reported):
    # the code that reads profiler.cuda is converted where it is; the key's name reaches no torch call
    conv = convert_config(name, src)
    assert conv.new is None
    assert [(r.line, r.api) for r in conv.findings] == reported


@pytest.mark.parametrize(
    "name,src,out",
    [
        (
            "compose.yaml",
            b"environment:\n  - CUDA_VISIBLE_DEVICES=0,1\n  - NCCL_DEBUG=INFO  # NCCL_IB_DISABLE\n",
            b"environment:\n  - ASCEND_RT_VISIBLE_DEVICES=0,1\n  - NCCL_DEBUG=INFO  # NCCL_IB_DISABLE\n",
        ),
        (
            "run.json",
            b'{"device": "cuda", "env": {"CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO"}}',
            b'{"device": "npu", "env": {"ASCEND_RT_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "INFO"}}',
        ),
    ],
)
def test_config_environment_variables_are_renamed_or_reported(name, src, out):
    # renamed like in shell scripts; one without counterpart is reported where it is set, not in a comment
    rules = cached_ruleset()
    conv = convert_config(name, src, rules)
    assert conv.new == out
    assert [r.api for r in conv.records if r.level != "fix"] == ["NCCL_DEBUG"]
    assert convert_config(name, out, rules).new is None
    assert convert_config(name, src).new != out  # without rules: no environment variables


def test_dependency_lists_of_pyproject_and_setup_cfg():
    pyproject = (
        '[project]\ndependencies = [\n  "torch>=2.1",\n  "xformers",  # attention\n]\n'
        '[project.optional-dependencies]\ngpu = ["bitsandbytes", "cupy-cuda12x"]\n'
        '[tool.poetry.dependencies]\ntriton = "^2.1"\n'
    )
    got = [(r.line, r.api) for r in requirement_records(pyproject_items(pyproject))]
    assert got == [(3, "torch_npu"), (4, "xformers"), (7, "bitsandbytes"), (7, "cupy"), (9, "triton")]
    cfg = "[options]\ninstall_requires =\n    torch\n    torch_npu\n    nvidia-cudnn-cu12\n[metadata]\nname = x\n"
    got = [(r.line, r.api) for r in requirement_records(setup_cfg_items(cfg))]
    assert got == [(5, "nvidia CUDA wheels")]  # torch_npu is listed: no reminder


# ---- reports built from records


def test_libraries_sheet_is_built_from_library_records():
    rec = lambda line, api, route: Record(
        line, 1, line, 2, "TP206", "warning", "library", "m", "r", api=api, suggestion=route
    )
    results = [
        FileResult(
            "a.py", "python", records=[rec(3, "flash_attn", "sdpa"), rec(9, "apex", "native amp")], new_lines={3: 4}
        ),
        FileResult("b.py", "python", records=[rec(1, "flash_attn", "sdpa")]),
    ]
    assert library_rows(results) == [
        ("apex", 1, "a.py:9", "native amp"),
        ("flash_attn", 2, "a.py:3 (converted: 4), b.py:1", "sdpa"),
    ]
    assert operator_rows(results) == []


def test_line_map_follows_insertions_and_replacements():
    old = b"import torch\nx = y.cuda()\nprint(x)\ndel x\n"
    new = b"import torch\nimport torch_npu\nx = y.npu()\nprint(x)\n"
    assert new_lines(old, new, [1, 2, 3, 4, 5]) == {1: 1, 2: 3, 3: 4, 4: 5, 5: 5}


def test_file_kinds():
    kinds = {
        name: file_kind(name)
        for name in (
            "a/b.cu",
            "x.cuh",
            "k.cc",
            "r/requirements-dev.txt",
            "requirements/base.txt",
            "notes.txt",
            "c.yml",
            "Dockerfile",
            "docker/Dockerfile.gpu",
            "x.dockerfile",
            "README.md",
        )
    }
    assert kinds == {
        "a/b.cu": "cpp",
        "x.cuh": "cpp",
        "k.cc": "cpp",
        "r/requirements-dev.txt": "requirements",
        "requirements/base.txt": "requirements",
        "notes.txt": "other",
        "c.yml": "config",
        "Dockerfile": "dockerfile",
        "docker/Dockerfile.gpu": "dockerfile",
        "x.dockerfile": "dockerfile",
        "README.md": "other",
    }


def test_torch_npu_names_in_project_data_exist():
    from test_names import SUGGESTED, exists, public_names

    texts = [p.read_text(encoding="utf-8") for p in sorted((REPO / "rules" / "project").glob("*.json"))]
    texts.append((REPO / "rules" / "shell_commands.json").read_text(encoding="utf-8"))
    texts += [
        p.read_text(encoding="utf-8")
        for p in sorted((REPO / "transplant").rglob("*.py"))
        if p.parent.name in ("project", "formats")
    ]
    names = {n.rstrip(".") for t in texts for n in SUGGESTED.findall(t)}
    assert "torch_npu.utils.cpp_extension.NpuExtension" in names
    for name in names:
        if name.endswith("NpuFused"):
            continue  # "torch_npu.optim.NpuFused*": the family, named by its members elsewhere
        assert exists(name, public_names()), name


# ---- the invariant on generated files: every CUDA value is rewritten or reported, nothing silent

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEYS = st.sampled_from(
    [
        "device",
        "devices",
        "train_device",
        "backend",
        "dist_backend",
        "accelerator",
        "gpu",
        "name",
        "device_count",
        "ddp_backend",
    ]
)
VALUES = st.sampled_from(["cuda", "cuda:0", "cuda:3", "nccl", "npu", "cpu", "gloo", "cudnn", "my_cuda", "2"])
QUOTES = st.sampled_from(["", "'", '"'])
COMMENTS = st.sampled_from(["", "  # cuda here", " # x"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(KEYS, VALUES, QUOTES, COMMENTS, st.sampled_from(["yaml", "toml"])), min_size=1, max_size=8),
    st.sampled_from(["\n", "\r\n"]),
)
def test_generated_configs_leave_no_cuda_value_silent(lines, eol):
    fmt = lines[0][4]
    sep = ": " if fmt == "yaml" else " = "
    text = eol.join(f"{k}{sep}{q}{v}{q}{c}" for k, v, q, c, _ in lines) + eol
    data = text.encode()
    conv = convert_config(f"c.{fmt}", data)
    new = conv.new if conv.new is not None else data
    flagged = {r.line for r in conv.records}
    for number, (_line, (_, v, _, _, _)) in enumerate(zip(new.decode().split(eol), lines), start=1):
        if v in ("cuda", "cuda:0", "cuda:3", "nccl"):
            assert number in flagged, (text, number)
        else:
            assert number not in flagged, (text, number)
    assert new.count(eol.encode()) == data.count(eol.encode())
    again = convert_config(f"c.{fmt}", new)
    assert again.new is None and again.changes == []  # idempotent; what stays is still reported
    assert {r.line for r in again.findings} == {r.line for r in conv.findings}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "nvidia-smi",
                "nvidia-smi -L",
                "watch -n 1 nvidia-smi",
                "echo nvidia-smi-like",
                "ls | nvidia-smi",
                "# nvidia-smi",
                "x=$(nvidia-smi --query-gpu=name)",
                "my-nvidia-smi",
                "make",
            ]
        ),
        min_size=1,
        max_size=6,
    )
)
def test_generated_shell_commands_are_replaced_or_reported(lines):
    data = ("\n".join(lines) + "\n").encode()
    res = convert_file("s.sh", data, cached_ruleset())
    new = res.new if res.new is not None else data
    flagged = {r.line for r in res.records}
    for number, line in enumerate(lines, start=1):
        live = re.search(r"(^|[|;(]|\$\(|watch -n 1)\s*nvidia-smi(?![\w-])", line.split("#")[0])
        assert (number in flagged) == bool(live), (lines, number)
    res2 = convert_file("s.sh", new, cached_ruleset())
    assert res2.new is None


def test_stdin_filename_chooses_the_project_file_converter():
    run = lambda args, data: subprocess.run(
        [sys.executable, "-m", "transplant", *args], input=data, capture_output=True, env=_env()
    )
    out = run(["-", "--stdin-filename", "conf/train.yaml"], b"device: 'cuda:0'  # gpu\r\n")
    assert (out.returncode, out.stdout) == (1, b"device: 'npu:0'  # gpu\r\n")
    out = run(["--check", "-", "--stdin-filename", "csrc/k.cu"], (SOURCE / "csrc/scale_ops.cpp").read_bytes())
    assert out.returncode == 1
    assert out.stdout.decode().splitlines()[0].startswith("csrc/k.cu:8:3: TP204 torch.ops.myops.scale: custom CUDA")


def test_in_place_converts_configs_and_dockerfiles_once(tmp_path):
    import shutil

    shutil.copytree(SOURCE, tmp_path / "p")
    args = [sys.executable, "-m", "transplant", "--in-place", "-q", "."]
    first = subprocess.run(args, cwd=tmp_path / "p", capture_output=True, env=_env())
    assert first.returncode == 1
    for name in (
        "configs/train.yaml",
        "configs/eval.json",
        "Dockerfile",
        "scripts/check_gpu.sh",
        "train.py",
        "csrc/fused_add_kernel.cu",
        "requirements.txt",
    ):
        assert (tmp_path / "p" / name).read_bytes() == (EXPECTED / name).read_bytes(), name
    second = subprocess.run(args, cwd=tmp_path / "p", capture_output=True, env=_env())
    assert b"converted" not in second.stderr  # nothing left to change; the findings remain


def test_project_scan_trigger_words_are_sound():
    """A Python file without the project's trigger words has no project findings: checked by calling
    the scan itself on every Python fixture, with the facts of the custom-operator project."""
    from transplant.project.calls import python_findings

    facts = gather((p.relative_to(SOURCE).as_posix(), str(p)) for p in SOURCE.rglob("*") if p.is_file())
    assert facts.namespace("myops") and facts.module("fused._C") and facts.module("relu_ext")
    checked = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        data = path.read_bytes()
        if not facts.may_match(data):
            assert python_findings(data, facts) == [], path
            checked += 1
    assert checked > 20


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"b", b"x = y.cuda()", b"import torch", b""]), max_size=15),
    st.lists(st.tuples(st.sampled_from("ir"), st.integers(0, 20)), max_size=4),
)
def test_line_map_is_monotone_and_exact_for_inserted_lines(old_lines, edits):
    new_list = list(old_lines)
    origin = list(range(1, len(old_lines) + 1))  # where each new line came from (0: inserted or rewritten)
    for op, at in edits:
        at = min(at, len(new_list))
        if op == "i":
            new_list.insert(at, b"import torch_npu")
            origin.insert(at, 0)
        elif at < len(new_list) and origin[at] != 0:  # a conversion rewrites original lines, not its own imports
            new_list[at] = new_list[at].replace(b"cuda", b"npu") + b"  # changed"
            origin[at] = -origin[at] if origin[at] else 0
    old = b"".join(l + b"\n" for l in old_lines)
    new = b"".join(l + b"\n" for l in new_list)
    mapping = new_lines(old, new, range(1, len(old_lines) + 1))
    targets = [mapping[i] for i in range(1, len(old_lines) + 1)]
    assert targets == sorted(targets)
    assert all(1 <= t <= len(new_list) + 1 for t in targets)
    for i, t in mapping.items():
        if t <= len(new_list) and origin[t - 1] == i:
            continue
        # a line that moved unchanged maps onto an identical line
        if i in origin:
            assert new_list[t - 1] == old_lines[i - 1], (old_lines, new_list, mapping)
