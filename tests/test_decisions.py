"""Invariants of issue 31 over every Python fixture: a device test and the CUDA code it guards are
converted together or kept together; no collection of accepted device names loses "cuda"; every
rewrite that changes which code an NPU run executes has its own row (TP108)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_fixtures import options_of
from test_invariant import SOURCES
from conftest import FIXTURES
from transplant.engine import convert
from transplant.engine.device_names import DEVICE_TYPES
from transplant.project.pynames import dotted
from transplant.records import CODES

PATH = CODES["path"]


def _parse(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _converted(path: Path):
    source = path.read_bytes()
    tree = _parse(source)
    if tree is None:
        pytest.skip("not Python 3 source (a fixture of the fault suite)")
    conv = convert(source, options_of(source))
    new = conv.new if conv.new is not None else source
    new_tree = _parse(new)
    assert new_tree is not None
    return source, tree, new, new_tree, conv


def _dotted(node: ast.AST) -> str:
    return ".".join(dotted(node) or ())


def _calls(node: ast.AST, prefix: str) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and _dotted(n.func).startswith(prefix)]


def _tests(tree: ast.Module):
    """(test, its guarded statements) of every if / while / conditional expression / `and` chain."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While)):
            yield node.test, node.body
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            yield node.values[0], node.values[1:]


def _device_test(test: ast.expr) -> str:
    """ "npu" or "cuda" when ``test`` is an availability test of that device, else ""."""
    for call in (n for n in ast.walk(test) if isinstance(n, ast.Call)):
        name = _dotted(call.func)
        if name in ("torch_npu.npu.is_available", "torch.npu.is_available"):
            return "npu"
        if name == "torch.cuda.is_available":
            return "cuda"
    return ""


def _statements_calls(nodes: list, prefix: str) -> list[ast.Call]:
    found = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found += _calls(node, prefix)
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_guard_and_its_body_are_one_decision(path: Path):
    """No converted availability test over a CUDA call left as it is, and no CUDA test kept over a
    converted call, unless a finding says so on that call's line."""
    _source, _tree, _new, new_tree, conv = _converted(path)
    said = {r.line for r in conv.findings}  # (findings' lines: the fixtures add no line before them)
    assert split_decisions(new_tree, said) == [], "a device test converted apart from the call it guards"


def split_decisions(tree: ast.Module, said: set[int]) -> list[tuple[int, str]]:
    """(line, call) of each CUDA call under a converted availability test and of each converted
    call under a CUDA one, in converted code, but on the lines of ``said``."""
    wrong = []
    for test, guarded in _tests(tree):
        kind = _device_test(test)
        if kind == "npu":
            left = _statements_calls(guarded, "torch.cuda.")
            wrong += [(c.lineno, _dotted(c.func)) for c in left if c.lineno not in said]
        elif kind == "cuda":
            moved = _statements_calls(guarded, "torch_npu.npu.")
            wrong += [(c.lineno, _dotted(c.func)) for c in moved if c.lineno not in said]
    return sorted(wrong)


def test_the_decision_check_finds_a_split_guard():
    """The check above fails on the mistake of issue 31 (a renamed guard over a kept capability query)."""
    bad = ast.parse(
        "ok = torch_npu.npu.is_available() and torch.cuda.get_device_capability() >= (9, 0)\n"
        "if torch.cuda.is_available():\n    torch_npu.npu.synchronize()\n"
        "if torch_npu.npu.is_available():\n    torch_npu.npu.synchronize()\n"
    )
    assert split_decisions(bad, set()) == [
        (1, "torch.cuda.get_device_capability"),
        (3, "torch_npu.npu.synchronize"),
    ]
    assert split_decisions(bad, {1, 3}) == []


def _names(node: ast.AST) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple, ast.Set)) or len(node.elts) < 2:
        return None
    values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if len(values) != len(node.elts) or not all(v in DEVICE_TYPES for v in values):
        return None
    return values


def _accepted(tree: ast.Module) -> list[list[str]]:
    """The collections of device names the module tests membership in or offers as choices, in order."""
    assigned = {
        t.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        candidates = []
        if isinstance(node, ast.Compare):
            candidates = [c for op, c in zip(node.ops, node.comparators) if isinstance(op, (ast.In, ast.NotIn))]
        elif isinstance(node, ast.keyword) and node.arg == "choices":
            candidates = [node.value]
        for c in candidates:
            if isinstance(c, ast.Name) and c.id in assigned:
                c = assigned[c.id]
            names = _names(c)
            if names is not None:
                found.append(names)
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_collection_of_device_names_loses_cuda(path: Path):
    _source, tree, _new, new_tree, _conv = _converted(path)
    before, after = _accepted(tree), _accepted(new_tree)
    assert len(before) == len(after)
    lost = [(b, a) for b, a in zip(before, after) if "cuda" in b and "cuda" not in a]
    assert lost == []


def test_the_collection_check_sees_a_lost_cuda():
    before = _accepted(ast.parse('KNOWN = ("cpu", "cuda")\nok = d in KNOWN\np.add_argument(choices=["cuda", "mps"])'))
    after = _accepted(
        ast.parse('KNOWN = ("cpu", "npu")\nok = d in KNOWN\np.add_argument(choices=["cuda", "npu", "mps"])')
    )
    assert before == [["cpu", "cuda"], ["cuda", "mps"]] and after == [["cpu", "npu"], ["cuda", "npu", "mps"]]


def _test_spans(tree: ast.Module, source: bytes) -> list[tuple[int, int, str]]:
    spans = []
    for node in ast.walk(tree):
        test = node.test if isinstance(node, (ast.If, ast.While, ast.IfExp)) else None
        if test is not None:
            spans.append((test.lineno, test.end_lineno or test.lineno, ast.get_source_segment(source.decode(), test)))
    return spans


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_changed_device_test_has_its_row(path: Path):
    """A test that reads differently after the conversion has a TP108 row on its lines."""
    source, tree, new, new_tree, conv = _converted(path)
    before, after = _test_spans(tree, source), _test_spans(new_tree, new)
    if len(before) != len(after):
        pytest.skip("the conversion added or removed a test (distributed mode's entry files)")
    rows = {r.line for r in conv.changes if r.code == PATH}
    silent = [
        (start, text)
        for (start, end, text), (_s, _e, new_text) in zip(before, after)
        if text != new_text and not any(start <= line <= end for line in rows)
    ]
    assert silent == []


# ---- a project of several files (tests/fixtures/projects/decisions): a registry the project fills
# for NPU itself, accepted device names, options its launch script and config pass as they are


@pytest.fixture(scope="module")
def decisions_result(tmp_path_factory) -> Path:
    from test_project import convert_project

    return convert_project(PROJECT, tmp_path_factory.mktemp("decisions"))


PROJECT = FIXTURES / "projects" / "decisions"
REPORTS = {"change_list.csv", "unsupported_op.xlsx", "msFmkTranspltlog.txt"}


def _sheet_tsv(result: Path, name: str) -> str:
    import openpyxl

    wb = openpyxl.load_workbook(result / "unsupported_op.xlsx")
    return "".join(
        "\t".join("" if v is None else str(v) for v in row) + "\n"
        for row in wb[name].iter_rows(min_row=2, values_only=True)
    )


def test_the_project_converts_to_its_golden_tree(decisions_result: Path):
    from goldens import check_tree

    check_tree(FIXTURES / "projects" / "decisions_msft", decisions_result, ignore=REPORTS)


def test_the_npu_paths_and_kept_values_are_reported(decisions_result: Path):
    from goldens import check_text

    check_text(FIXTURES / "reports" / "decisions_paths.tsv", _sheet_tsv(decisions_result, "NPU paths"))
    check_text(FIXTURES / "reports" / "decisions_unsupported.tsv", _sheet_tsv(decisions_result, "Unsupported"))


def test_the_registry_keeps_its_cuda_keys_and_the_recipes_their_values(decisions_result: Path):
    registry = (decisions_result / "engines" / "registry.py").read_text()
    assert 'def register(name, device="cuda"):' in registry and '@register("attention", device="cuda")' in registry
    assert 'KNOWN_DEVICES = ("cpu", "cuda", "npu", "mps")' in registry
    train = (decisions_result / "train.py").read_text()
    launch = (decisions_result / "scripts" / "launch.sh").read_text()
    # one value, one decision: what the script keeps, the default keeps; what it renames, the default renames
    assert '"--comm", default="nccl"' in train and "--comm nccl" in launch
    assert '"--accel", default="cuda"' in train and "--accel cuda" in launch
    assert '"--dist-backend", default="hccl"' in train and "--dist-backend hccl" in launch
    assert "torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)" in train


def test_without_the_npu_registration_the_registry_converts(tmp_path: Path):
    """The look-alike: the same registry in a project with no NPU engine of its own."""
    import shutil

    from test_project import convert_project

    src = tmp_path / "plain"
    shutil.copytree(PROJECT, src)
    (src / "engines" / "npu.py").unlink()
    result = convert_project(src, tmp_path / "out")
    registry = (result / "engines" / "registry.py").read_text()
    assert 'def register(name, device="npu"):' in registry and '@register("attention", device="npu")' in registry


def test_a_cuda_file_beside_its_npu_twin_stays(decisions_result: Path):
    """engines/nccl_sync.py has the project's own NPU version beside it (hccl_sync.py): kept byte for byte."""
    for name in ("nccl_sync.py", "hccl_sync.py"):
        assert (decisions_result / "engines" / name).read_bytes() == (PROJECT / "engines" / name).read_bytes()


def test_twins_are_found_by_name_in_the_same_folder():
    from transplant.project.twins import twins

    paths = ["a/nccl_engine.py", "a/hccl_engine.py", "t/test_on_gpu.py", "t/test_on_npu.py", "b/nccl_engine.py"]
    paths += ["x/cuda_utils.py", "y/npu_utils.py", "nccl.py"]  # another folder, no twin: not twins
    paths += ["p/nvtx_profile.py", "p/mstx_profile.py", "p/nvtxt.py", "p/mstxt.py"]  # NVTX and Ascend's mstx
    assert twins(paths) == (
        ("a/nccl_engine.py", "a/hccl_engine.py"),
        ("p/nvtx_profile.py", "p/mstx_profile.py"),
        ("t/test_on_gpu.py", "t/test_on_npu.py"),
    )
