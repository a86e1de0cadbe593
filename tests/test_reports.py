"""Reports people read to the end (issue 20): one row per thing, counted; Triton once per kernel,
silent where the project already runs its kernels on NPU (issue 24, pattern 4).

The golden report of the fixture project ``triton_mixed`` is ``tests/fixtures/reports/triton_mixed.tsv``:
the Unsupported sheet's rows as File, Line, Level, API, Message, Count, Lines (tab-separated). To see
what changed after a deliberate change, run the test and read the assertion's diff.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest

from conftest import FIXTURES
from goldens import check_text
from test_project import convert_project
from transplant.filetypes import FileResult
from transplant.records import Record
from transplant.reports import findings
from transplant.reports.sheets import library_rows

TRITON = FIXTURES / "projects" / "triton_mixed"
GOLDEN = FIXTURES / "reports" / "triton_mixed.tsv"


def sheet(result: Path, name: str) -> list[tuple]:
    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    return list(wb[name].iter_rows(min_row=2, values_only=True))


@pytest.fixture(scope="module")
def triton_result(tmp_path_factory) -> Path:
    return convert_project(TRITON, tmp_path_factory.mktemp("triton"))


def as_tsv(rows: list[tuple]) -> str:
    return "".join(
        "\t".join("" if v is None else str(v) for v in (r[0], r[1], r[5], r[4], r[6], r[8], r[9])) + "\n" for r in rows
    )


def test_triton_report_matches_golden(triton_result: Path):
    check_text(GOLDEN, as_tsv(sheet(triton_result, "Unsupported")))


def test_triton_rows_are_one_per_kernel_never_per_tl_call(triton_result: Path):
    rows = sheet(triton_result, "Unsupported")
    per_file: dict[str, int] = {}
    for r in rows:
        per_file[r[0]] = per_file.get(r[0], 0) + 1
    # a kernel file: one row per kernel and one for its import
    assert per_file["kernels/softmax.py"] == 3 and per_file["kernels/fast_math.py"] == 3
    assert not any("tl." in (r[6] or "") or r[4].startswith("triton.language") for r in rows)
    # kernels the project already runs on NPU: a package that checks for triton_ascend, a module
    # imported only behind an NPU test, a backend folder named for Ascend, and the loader say nothing
    assert not {
        "fused_ops/layernorm.py",
        "fused_ops/__init__.py",
        "rms_kernels/rms.py",
        "ops/loader.py",
        "backends/_ascend/swiglu.py",
    } & set(per_file)
    # the route is triton-ascend, not "no route"
    kernel = next(r for r in rows if r[0] == "kernels/softmax.py" and r[5] == "warning")
    assert "triton-ascend" in kernel[6] and "triton-ascend" in kernel[7] and "grid" in kernel[7]
    # numba's @jit beside a triton import is no Triton kernel
    assert [r[6].split(":")[0] for r in rows if r[0] == "ops/cpu_ref.py"] == ["imports Triton"]


def test_libraries_sheet_lists_files_with_counts(triton_result: Path):
    rows = {r[0]: r for r in sheet(triton_result, "Libraries")}
    triton = rows["triton"]
    assert (
        triton[2] == "kernels/fast_math.py (3), kernels/softmax.py (3), model.py (5), ops/cpu_ref.py:2, "
        "requirements.txt:2"
    )
    assert triton[1] == 13
    assert "triton-ascend" in triton[3]


def test_conversion_is_unchanged_by_triton(triton_result: Path):
    # kernel files are copied byte for byte; only model.py's .cuda() is converted
    for rel in ("kernels/softmax.py", "kernels/fast_math.py", "fused_ops/layernorm.py"):
        assert (triton_result / rel).read_bytes() == (TRITON / rel).read_bytes()
    assert b".npu()" in (triton_result / "model.py").read_bytes()


def test_a_kernel_file_with_its_own_triton_ascend_check_is_silent(tmp_path):
    root = tmp_path / "p"
    (root / "k").mkdir(parents=True)
    kernel = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"
    (root / "k" / "cuda_k.py").write_text(kernel)
    (root / "k" / "ready_k.py").write_text(
        "import importlib.util\nassert importlib.util.find_spec('triton_ascend')\n" + kernel
    )
    (root / "run.py").write_text("from k.ready_k import k\nfrom k.cuda_k import k as k2\nk[(1,)](x)\nk2[(1,)](x)\n")
    result = convert_project(root, tmp_path / "out")
    rows = sheet(result, "Unsupported")
    assert sorted((r[0], r[1], r[5]) for r in rows) == [
        ("k/cuda_k.py", 1, "note"),
        ("k/cuda_k.py", 5, "warning"),
        ("run.py", 2, "note"),
        ("run.py", 4, "note"),
    ]


def test_paths_named_for_the_npu():
    from transplant.project.triton import named_for_npu

    assert named_for_npu("src/ops/backends/_ascend/ops/rms_norm.py")
    assert named_for_npu("fla/ops/triton_ascend/chunk.py") and named_for_npu("kernels/npu_rope.py")
    assert not named_for_npu("kernels/input_proj.py") and not named_for_npu("snpu/x.py")


def test_imports_that_may_sit_in_a_block_are_all_found():
    """The first pass parses a file for kernels it loads behind an NPU test only where such an import
    can be: every spelling of one inside a block is kept, an import of the module itself is not."""
    from transplant.project.triton import nested_imports

    source = (
        b"from kernels.a import k\n"  # the module's own: in no block
        b"if is_npu():\n    from kernels.b import k\n"
        b"if npu: from kernels.c import k\n"
        b"x = 1; from kernels.d import k\n"
        b"if npu:\n\tfrom kernels import (\n\t    e,\n\t    f,\n\t)\n"
        b"if npu:\n    from kernels.g \\\n        import k\n"
        b"if npu and \\\nfrom_x: pass\n"  # a continued line: "from_x" is no keyword
        b"if npu:\r\n    from kernels.h import k\r\n"
    )
    texts = nested_imports(source)
    for name in (b"b", b"c", b"d", b"g", b"h"):
        assert any(b"kernels." + name + b" " in t for t in texts), name
    assert any(b"e," in t and b"f," in t for t in texts)
    assert not any(b"kernels.a" in t for t in texts)


def test_a_kernel_loaded_behind_an_npu_test_in_a_parenthesised_import_is_npu_ready(tmp_path):
    root = tmp_path / "p"
    (root / "kern").mkdir(parents=True)
    (root / "kern" / "__init__.py").write_text("")
    (root / "kern" / "rms.py").write_text("import triton\n\n\n@triton.jit\ndef rms(x):\n    pass\n")
    (root / "loader.py").write_text(
        "import torch\n\nif torch.npu.is_available():\n    from kern import (\n        rms,\n    )\n"
    )
    (root / "other.py").write_text("import torch\nnpu = torch.device('npu')\nfrom kern.rms import rms\n")
    result = convert_project(root, tmp_path / "out")
    assert not [r for r in sheet(result, "Unsupported") if r[0].startswith("kern/")]


def test_a_dependency_on_triton_ascend_silences_the_kernels_under_it(tmp_path):
    root = tmp_path / "p"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "requirements.txt").write_text("triton-ascend==3.2.0\n")
    (root / "pkg" / "ops.py").write_text("import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n")
    (root / "pkg" / "launch.py").write_text("import triton\nfrom .ops import k\nk[(triton.cdiv(8, 4),)](x)\n")
    (root / "other.py").write_text("import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n")
    result = convert_project(root, tmp_path / "out")
    assert {r[0] for r in sheet(result, "Unsupported")} == {"other.py"}


def test_triton_beside_triton_ascend_in_requirements_is_not_reported(tmp_path):
    from transplant.formats.requirements import convert_requirements

    both = convert_requirements(b"triton==3.2.0 ; platform_machine == 'x86_64'\ntriton-ascend==3.2.1\n")
    assert [r.api for r in both.records] == []
    alone = convert_requirements(b"triton==3.2.0\n")
    assert [(r.api, r.level) for r in alone.records] == [("triton", "warning")]
    assert "triton-ascend" in alone.records[0].suggestion


def test_version_list_rows_say_where_the_fact_comes_from():
    import json

    from conftest import REPO

    from transplant.rule_versions import version_key

    for path in sorted((REPO / "rules" / "npu_support").glob("unsupported_*.json")):
        version = path.stem.split("_")[1]
        entries = {e["name"]: e for e in json.loads(path.read_text())["rules"]["UnsupportedRule"]}
        if version_key(version) >= (2, 9):  # torch_npu's own support list (tools/gen_support.py)
            for entry in entries.values():
                assert f"support list for PyTorch {version}: Ascend/pytorch docs/zh/api/native_api/" in entry["source"]
                assert entry["level"] == "warning" or entry.get("suggestion"), entry
            continue
        for entry in entries.values():
            assert f"op_list_{version.replace('.', '_')}.json" in entry["source"], entry
            assert entry["level"] == "warning" or entry.get("suggestion"), entry  # a note says what to do
        for everyday in (
            "torch.nn.utils.clip_grad_norm_",
            "torch.nn.functional.grid_sample",
            "torch.nn.MultiheadAttention",
            "torch.cdist",
            "torch.nn.MaxPool2d",
        ):
            assert entries[everyday]["level"] == "note", (path.name, everyday)
        for subsystem in ("torch.sparse_csr_tensor", "torch.quantize_per_tensor"):
            if subsystem in entries:
                assert entries[subsystem]["level"] == "warning", (path.name, subsystem)
        if "torch.compile" in entries:
            assert entries["torch.compile"]["level"] == "warning"
            assert "torch_npu.dynamo.torchair.get_npu_backend" in entries["torch.compile"]["suggestion"]


# ---- grouping (reports/findings.py) and the Libraries sheet, on records made by hand


def rec(
    line: int, level: str = "warning", api: str = "cupy", message: str = "m", suggestion: str = "s", code: str = "TP206"
) -> Record:
    return Record(line, 1, line, 2, code, level, "", message, "builtin", api=api, suggestion=suggestion)


def test_identical_findings_in_a_file_are_one_row_with_count_and_lines():
    a = FileResult(
        "a.py", "python", records=[rec(3), rec(9), rec(4, suggestion="other"), rec(1, "note"), rec(2, "error", api="x")]
    )
    b = FileResult("b.py", "python", records=[rec(5), rec(6, level="fix")])
    rows = findings.rows([a, b])
    got = [(r.path, r.first.line, r.first.level, r.count, r.lines) for r in rows]
    assert got == [
        ("a.py", 2, "error", 1, [2]),
        ("a.py", 3, "warning", 2, [3, 9]),
        ("a.py", 4, "warning", 1, [4]),
        ("b.py", 5, "warning", 1, [5]),
        ("a.py", 1, "note", 1, [1]),
    ]
    assert findings.level_counts([a, b]) == {"error": 1, "warning": 4, "note": 1}
    kinds = findings.kind_counts([a, b, FileResult("c.py", "python", records=[rec(1, "error", code="TP201")])])
    # most errors first, then most warnings
    assert kinds == [("TP206", {"error": 1, "warning": 4, "note": 1}), ("TP201", {"error": 1, "warning": 0, "note": 0})]


def test_many_lines_are_shown_up_to_a_limit():
    row = findings.Row("a.py", rec(1), 1, list(range(1, 26)))
    assert row.shown_lines(limit=3) == "1, 2, 3, ... (22 more)"


def test_library_where_counts_per_file_and_routes_come_from_what_must_be_done():
    a = FileResult(
        "a.py",
        "python",
        records=[rec(3, suggestion="fix it"), rec(9, suggestion="fix it"), rec(1, "note", suggestion="just know")],
    )
    b = FileResult("b.py", "python", records=[rec(5, suggestion="fix it")])
    assert library_rows([a, b]) == [("cupy", 4, "a.py (3), b.py:5", "fix it")]
    only_notes = FileResult("c.py", "python", records=[rec(1, "note", suggestion="just know")])
    assert library_rows([only_notes]) == [("cupy", 1, "c.py:1", "just know")]


# ---- builds through a project's own helper; imports of the project's compiled CUDA extensions


def test_a_build_through_a_helper_is_a_cuda_build_and_links_its_operators(tmp_path):
    root = tmp_path / "gan"
    ops = root / "torch_utils" / "ops"
    ops.mkdir(parents=True)
    (root / "torch_utils" / "__init__.py").write_text("")
    (root / "torch_utils" / "custom_ops.py").write_text(
        "import torch.utils.cpp_extension\n\n\ndef get_plugin(module_name, sources, **build_kwargs):\n"
        "    return torch.utils.cpp_extension.load(name=module_name, sources=sources, **build_kwargs)\n"
    )
    (ops / "bias_act.cpp").write_text(
        "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        '    m.def("bias_act", &bias_act);\n}\n'
    )
    (ops / "bias_act.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    (ops / "bias_act.py").write_text(
        "import os\nfrom .. import custom_ops\n\n_plugin = None\n\n\ndef _init():\n    global _plugin\n"
        "    _plugin = custom_ops.get_plugin(module_name='bias_act_plugin', sources=['bias_act.cpp', 'bias_act.cu'],\n"
        "                                    source_dir=os.path.dirname(__file__), extra_cuda_cflags=['--use_fast_math'])\n"
        "    kernel = os.path.join(os.path.dirname(__file__), 'bias_act.cu')  # a path, not a build\n"
        "    return open(kernel).read()\n\n\ndef bias_act(x):\n    return _plugin.bias_act(x)\n"
    )
    result = convert_project(root, tmp_path / "out")
    rows = sheet(result, "Unsupported")
    builds = [(r[0], r[1], r[4]) for r in rows if r[6] and "compiles CUDA sources" in r[6]]
    assert builds == [("torch_utils/ops/bias_act.py", 9, "..custom_ops.get_plugin")]
    assert "'bias_act_plugin'" in next(r[6] for r in rows if r[1] == 9 and r[0].endswith("bias_act.py"))
    # its flags are part of that finding, not a second row; the path join and open() are no builds
    assert not [r for r in rows if r[0] == "torch_utils/ops/bias_act.py" and r[4] == "extra_cuda_cflags"]
    assert not [r for r in rows if r[0] == "torch_utils/ops/bias_act.py" and r[1] in (11, 12)]
    # the operator the sources register is named under the module the helper builds, with its call
    operators = sheet(result, "Custom operators")
    assert (
        "torch_utils/ops/bias_act.cpp",
        "bias_act_plugin.bias_act",
        3,
        "torch_utils/ops/bias_act.py:16",
    ) in operators


def test_an_import_of_a_compiled_cuda_extension_the_project_builds_is_an_error(tmp_path):
    root = tmp_path / "p"
    (root / "pkg" / "csrc").mkdir(parents=True)
    (root / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension, "
        "CppExtension\nsetup(ext_modules=[CUDAExtension('pkg._C', ['pkg/csrc/ops.cu']),\n"
        "                   CppExtension('cpu_only_ext', ['pkg/csrc/cpu.cpp'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n"
    )
    (root / "pkg" / "csrc" / "ops.cu").write_text('PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused", &f); }\n')
    (root / "pkg" / "csrc" / "cpu.cpp").write_text('PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("g", &g); }\n')
    (root / "pkg" / "__init__.py").write_text(
        "from . import _C\nimport cpu_only_ext\nfrom pkg._C import fused\nfrom ._Cx import other  # another module\n"
    )
    result = convert_project(root, tmp_path / "out")
    rows = [(r[1], r[5], r[4], r[8], r[9]) for r in sheet(result, "Unsupported") if r[0] == "pkg/__init__.py"]
    assert rows == [(1, "error", "pkg._C", 2, "1, 3")]  # the same finding twice: one row, counted
    assert ("pkg/csrc/ops.cu", "pkg._C.fused", 1, None) in sheet(result, "Custom operators")  # an import is no call


def test_every_table_is_its_list_of_columns(triton_result: Path):
    """Header, widths and cells of each sheet come from one list of (name, width, value): a column
    is as wide as its widest cell, at most its width."""
    from transplant.reports.columns import table_rows, widths
    from transplant.reports.repository import API_COUNT_COLUMNS, CHANGE_COLUMNS, SUMMARY_COLUMNS, UNSUPPORTED_COLUMNS
    from transplant.reports.sheets import LIBRARY_COLUMNS, OPERATOR_COLUMNS, PATH_COLUMNS
    from transplant.reports.xlsx import column_letter

    wb = openpyxl.load_workbook(triton_result / "unsupported_op.xlsx")
    tables = {
        "Unsupported": UNSUPPORTED_COLUMNS,
        "NPU paths": PATH_COLUMNS,
        "API counts": API_COUNT_COLUMNS,
        "Custom operators": OPERATOR_COLUMNS,
        "Libraries": LIBRARY_COLUMNS,
        "Summary": SUMMARY_COLUMNS,
    }
    assert wb.sheetnames == list(tables)
    for title, columns in tables.items():
        ws = wb[title]
        assert [c.value for c in ws[1]] == [c.name for c in columns], title
        shown = [ws.column_dimensions[column_letter(i)].width for i in range(1, len(columns) + 1)]
        cells = [[c.value for c in row] for row in ws.iter_rows(min_row=2)]
        assert shown == widths(columns, [[v if v is not None else "" for v in row] for row in cells]), title
        assert all(w <= c.width for w, c in zip(shown, columns)), title
    header = (triton_result / "change_list.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == ",".join(c.name for c in CHANGE_COLUMNS)
    row = table_rows(UNSUPPORTED_COLUMNS, [findings.Row("a.py", rec(3, api="=cmd"), 4, [3, 7])])[0]
    assert row == ["a.py", 3, 4, 1, "'=cmd", "warning", "m", "s", 2, "3, 7"]  # a formula is neutralised


def test_workbook_reads_in_a_spreadsheet_program(triton_result: Path):
    """What a spreadsheet program shows (checked once by rendering with LibreOffice, docs/reports.md):
    numbers in number cells, centred so that Count and Lines do not run together, long text wrapped
    in rows tall enough for it, the level's fill, a frozen, filtered header, one page wide in print."""
    from transplant.reports.repository import UNSUPPORTED_COLUMNS
    from transplant.reports.xlsx import LEVEL_FILLS, LEVEL_STYLES, LINE_HEIGHT, row_lines

    wb = openpyxl.load_workbook(triton_result / "unsupported_op.xlsx")
    ws = wb["Unsupported"]
    names = [c.value for c in ws[1]]
    col = {name: i for i, name in enumerate(names)}
    body = list(ws.iter_rows(min_row=2))
    assert len(body) > 3
    widths = [ws.column_dimensions[chr(ord("A") + i)].width for i in range(len(names))]
    wrapped = frozenset(i for i, c in enumerate(UNSUPPORTED_COLUMNS, start=1) if c.wrap)
    tall = 0
    for row in body:
        for name in ("Line", "Converted line", "Column", "Count"):
            cell = row[col[name]]
            assert cell.data_type == "n" and isinstance(cell.value, int), name
            assert cell.alignment.horizontal == "center", name
        for name in ("Message", "Suggestion", "API", "File", "Lines"):
            assert row[col[name]].alignment.wrap_text, name
        assert row[col["Count"]].alignment.horizontal != row[col["Lines"]].alignment.horizontal
        level = row[col["Level"]]
        assert level.fill.fgColor.rgb == LEVEL_FILLS[LEVEL_STYLES[level.value]]
        lines = row_lines([c.value for c in row], widths, wrapped)
        height = ws.row_dimensions[row[0].row].height
        assert (height or LINE_HEIGHT) >= LINE_HEIGHT * lines
        tall += lines > 1
    assert tall  # the fixture's messages are longer than a column: some rows grow
    assert len({row[col["Level"]].fill.fgColor.rgb for row in body}) > 1
    for sheet_ in wb:
        assert sheet_.freeze_panes == "A2" and sheet_.auto_filter.ref.startswith("A1:")
        assert sheet_.sheet_properties.pageSetUpPr.fitToPage
        assert sheet_.page_setup.fitToWidth == 1 and sheet_.page_setup.fitToHeight == 0
        assert sheet_.page_setup.orientation == "landscape"
        assert sheet_.print_title_rows == "$1:$1"
        assert all(c.alignment.wrap_text for c in sheet_[1])  # header words wrap, not cut off
    # every column's text fits its width or wraps: nothing is cut off at the next cell
    for row in body:
        for i, cell in enumerate(row):
            if isinstance(cell.value, str) and len(cell.value) + 2 > widths[i]:
                assert cell.alignment.wrap_text, (names[i], cell.value)


def test_row_lines_break_at_words():
    from transplant.reports.xlsx import row_lines

    assert row_lines(["short", 3], [20, 6], frozenset({1})) == 1
    assert row_lines(["word " * 10, 3], [10, 6], frozenset({1})) == 5  # two words to a line of 11 characters
    assert row_lines(["a\nb\nc", "x" * 50], [10, 10], frozenset({1})) == 3  # a column that does not wrap: one line
    assert row_lines(["x" * 25], [10], frozenset({1})) == 3  # a long word breaks anywhere


def write_project(root: Path, files: dict[str, str]) -> Path:
    """A project of ``files`` (path -> text) under ``root``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_operators_of_one_family_in_a_file_are_one_row(tmp_path):
    init = (
        "#include <torch/library.h>\n"
        "TORCH_LIBRARY(gx, m) {\n"
        '    m.def("gather(Tensor a, int id) -> Tensor");\n'
        '    m.def("release(Tensor a) -> Tensor");\n'
        "}\n"
        "TORCH_LIBRARY_IMPL(gx, CUDA, m) {\n"
        '    m.impl("gather", &gather);\n'
        '    m.impl("release", &release);\n'
        "}\n"
        "TORCH_LIBRARY(hx, m) {\n"
        '    m.def("solo(Tensor a) -> Tensor");\n'
        "}\n"
    )
    passes = (
        "import torch\n\n\n"
        "def schedule(graph, name):\n"
        "    gathers = [n for n in graph.nodes if n.target == torch.ops.gx.gather.default]\n"
        "    graph.create_node('call_function', torch.ops.gx.release.default, (), {})\n"
        "    dynamic = getattr(torch.ops.gx, name).default\n"
        "    other = torch.ops.hx.solo.default\n"
        "    return gathers, dynamic, other\n"
    )
    root = write_project(tmp_path / "graphs", {"csrc/init.cpp": init, "passes.py": passes})
    rows = sheet(convert_project(root, tmp_path / "out"), "Unsupported")
    cpp = [r for r in rows if r[0] == "csrc/init.cpp"]
    gx = next(r for r in cpp if r[4] == "torch.ops.gx")
    assert (gx[5], gx[8], gx[9]) == ("warning", 4, "3, 4, 7, 8")
    assert gx[6].startswith("torch.ops.gx (2 operators: gather, release): custom CUDA operator registered here")
    assert "TORCH_LIBRARY(gx) def, TORCH_LIBRARY_IMPL(gx, CUDA) impl" in gx[6]
    # another family in the same file keeps its own row, and a lone operator its own message
    hx = next(r for r in cpp if r[4] == "torch.ops.hx.solo")
    assert hx[6].startswith("torch.ops.hx.solo: custom C++ operator registered here (TORCH_LIBRARY(hx) def)")
    calls = [r for r in rows if r[0] == "passes.py"]
    assert [(r[4], r[5], r[8], r[9]) for r in calls] == [
        ("torch.ops.gx", "error", 3, "5, 6, 7"),
        ("torch.ops.hx.solo", "warning", 1, None),
    ]
    assert calls[0][6].startswith("torch.ops.gx (2 operators: gather, release): custom CUDA operator (registered at")


def test_operator_rows_of_different_levels_or_files_stay_apart():
    def op(line: int, api: str, level: str = "error", path: str = "a.py") -> FileResult:
        message = f"{api}: custom CUDA operator (registered at x.cpp:1); it has no NPU kernel"
        return FileResult(path, "python", records=[rec(line, level, api, message, code="TP204")])

    a = op(1, "torch.ops.ns.one")
    a.records += op(2, "torch.ops.ns.two").records + op(3, "torch.ops.ns.three", "warning").records
    b = op(4, "torch.ops.ns.four", path="b.py")
    got = [(r.path, r.api, r.count) for r in findings.rows([a, b])]
    assert got == [("a.py", "torch.ops.ns", 2), ("b.py", "torch.ops.ns.four", 1), ("a.py", "torch.ops.ns.three", 1)]


def test_a_list_of_file_suffixes_is_no_cuda_build(tmp_path):
    headers = (
        "import argparse\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--c_style_ext', nargs='+', default=['.c', '.cpp', '.cu', '.h', '.cuh'])\n"
        "compile_kernels = make_plugin('k', ['k.cpp', 'kernels/k.cu'])\n"
    )
    root = write_project(tmp_path / "tools", {"headers.py": headers})
    rows = sheet(convert_project(root, tmp_path / "out"), "Unsupported")
    builds = [(r[1], r[4]) for r in rows if r[6] and "compiles CUDA sources" in r[6]]
    assert builds == [(5, "make_plugin")]  # the suffixes name no file; the helper given k.cu builds


def test_cuda_home_tested_for_none_is_a_note(tmp_path):
    report = (
        "import torch.utils.cpp_extension\n"
        "from torch.utils.cpp_extension import CUDA_HOME\n\n\n"
        "def nvcc_version():\n"
        "    cuda_home = torch.utils.cpp_extension.CUDA_HOME\n"
        "    if cuda_home is None:\n"
        "        return f'no CUDA_HOME ({torch.utils.cpp_extension.CUDA_HOME})'\n"
        "    return cuda_home\n\n\n"
        "def include_dir():\n"
        "    return CUDA_HOME + '/include' if CUDA_HOME else None\n\n\n"
        "def compiler():\n"
        "    return CUDA_HOME + '/bin/nvcc'\n"
    )
    root = write_project(tmp_path / "envcheck", {"report.py": report})
    rows = sheet(convert_project(root, tmp_path / "out"), "Unsupported")
    home = [(r[1], r[5], r[8]) for r in rows if r[4] == "torch.utils.cpp_extension.CUDA_HOME"]
    # lines 6 and 8: read, then tested for None; 13: the test of a conditional expression and its
    # branch; 17: used with no test, it stops on an NPU machine
    assert home == [(17, "warning", 1), (6, "note", 2), (13, "note", 2)]
