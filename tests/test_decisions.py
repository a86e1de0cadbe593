"""Invariants of issue 31 over every Python fixture: a device test and the CUDA code it guards are
converted together or kept together; no collection of accepted device names loses "cuda"; every
rewrite that changes which code an NPU run executes has its own row (TP108)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_fixtures import options_of
from test_invariant import SOURCES
from conftest import FIXTURES, cached_ruleset
from transplant.engine import convert
from transplant.engine.device_names import BACKEND_NAMES, DEVICE_TYPES
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
    if len(values) != len(node.elts) or not all(v in DEVICE_TYPES or v in BACKEND_NAMES for v in values):
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


def _default_spans(tree: ast.Module, source: bytes) -> list[tuple[int, str]]:
    """(line, text) of every default: of a parameter, of an option or field (``default=``), of a
    class-level field, of a lookup (``getattr(x, "k", d)``, ``cfg.get("k", d)``), in walk order."""
    text = source.decode()
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found += [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
        elif isinstance(node, ast.ClassDef):
            found += [s.value for s in node.body if isinstance(s, ast.AnnAssign) and s.value is not None]
        elif isinstance(node, ast.Call):
            found += [k.value for k in node.keywords if k.arg == "default"]
            last = (dotted(node.func) or ("",))[-1]
            at = {"getattr": 1, "get": 0}.get(last)
            if at is not None and len(node.args) == at + 2 and not node.keywords:
                found.append(node.args[at + 1])
    return [(d.lineno, ast.get_source_segment(text, d) or "") for d in found]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_changed_default_has_its_row(path: Path):
    """A default that reads differently after the conversion has a TP108 row on its line (or a note
    there that says why it is kept in part)."""
    source, tree, new, new_tree, conv = _converted(path)
    before, after = _default_spans(tree, source), _default_spans(new_tree, new)
    if len(before) != len(after):
        pytest.skip("the conversion added or removed a default (distributed mode's entry files)")
    rows = {r.line for r in conv.changes if r.code == PATH}
    silent = [
        (line, text) for (line, text), (_l, new_text) in zip(before, after) if text != new_text and line not in rows
    ]
    assert silent == []


def test_the_default_check_sees_a_silent_default():
    source = b'def f(device="cuda"):\n    pass\n'
    tree = ast.parse(source)
    assert _default_spans(tree, source) == [(1, '"cuda"')]


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
    # --weights.sync_backend (dotted: its last part decides) renamed in the script, its default and
    # its lookups and tests; a test of --comm through a local named like a backend keeps "nccl" as --comm does
    assert "--weights.sync_backend hccl" in launch and '"--weights.sync_backend", default="hccl"' in train
    assert 'use_ipc = backend == "hccl"' in train
    assert 'if getattr(args.weights, "sync_backend", "hccl") == "hccl" and comm_backend == "nccl":' in train


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


def test_other_backends_beside_the_npu_file_are_twins_too():
    """DeepSpeed-like accelerators: one module per backend in one folder; those of other backends are
    what their hosts run, kept with a note that names the backend."""
    from transplant.formats.python import twin_note
    from transplant.project.twins import twins

    folder = ["acc/cuda_accelerator.py", "acc/npu_accelerator.py", "acc/hpu_accelerator.py", "acc/CPU_accelerator.py"]
    paths = [*folder, "acc/real_accelerator.py", "m/cpu_utils.py", "m/gpu_utils.py", "k/xpu_ops.py", "k/npu_ops.py"]
    # CPU_accelerator.py's twin would be NPU_accelerator.py (the case kept), absent; m/ has no NPU file
    assert twins(paths) == (
        ("acc/cuda_accelerator.py", "acc/npu_accelerator.py"),
        ("acc/hpu_accelerator.py", "acc/npu_accelerator.py"),
        ("k/xpu_ops.py", "k/npu_ops.py"),
    )
    hpu = twin_note("acc/npu_accelerator.py", "acc/hpu_accelerator.py").message
    assert "the HPU version beside acc/npu_accelerator.py" in hpu
    cuda = twin_note("acc/npu_accelerator.py", "acc/cuda_accelerator.py").message
    assert cuda.startswith("kept as it is: the CUDA version of acc/npu_accelerator.py")


def test_a_table_of_backend_names_that_lists_hccl_keeps_its_nccl_entry():
    from conftest import cached_ruleset

    table = "import torch.distributed as dist\n\nNCCL_BACKEND = 'nccl'\nHCCL_BACKEND: str = 'hccl'\nGLOO_BACKEND = 'gloo'\n\n\n"
    use = "def init(backend=NCCL_BACKEND):\n    if backend == NCCL_BACKEND:\n        dist.init_process_group('nccl')\n"
    conv = convert((table + use).encode(), cached_ruleset())
    new = conv.new.decode()
    assert "NCCL_BACKEND = 'nccl'\n" in new and "dist.init_process_group('hccl')" in new
    notes = [r for r in conv.findings if r.line == 3]
    assert [r.level for r in notes] == ["note"] and "lists HCCL's already" in notes[0].message
    # look-alikes: no HCCL entry (the constant is the backend used), or "hccl" only inside a function
    for other in ("", "def f():\n    HCCL = 'hccl'\n    return HCCL\n\n\n"):
        source = "import torch.distributed as dist\nNCCL_BACKEND = 'nccl'\n" + other + use
        assert "\nNCCL_BACKEND = 'hccl'\n" in convert(source.encode(), cached_ruleset()).new.decode()


def test_a_simulators_own_settings_keep_their_cuda_device():
    """A config class named for Isaac Lab keeps the simulator's "cuda:0" (and so does a sim_device
    anywhere), with a note; the policy's device, and the same field in another class, convert."""
    from conftest import cached_ruleset

    source = (
        "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass IsaacLabTaskConfig:\n"
        '    task: str = "lift"\n    device: str | None = "cuda:0"\n    sim_physics_device: str = "cuda"\n'
        '    policy_device: str = "cuda"\n\n\n@dataclass\nclass TrainConfig:\n    device: str = "cuda"\n\n\n'
        'def make_env(name, sim_device="cuda:0", rl_device="cuda:0"):\n'
        '    return torch.zeros(1, device=rl_device), make(name, sim_device="cuda:1")\n'
    )
    conv = convert(source.encode(), cached_ruleset())
    new = conv.new.decode()
    for kept in ('device: str | None = "cuda:0"', 'sim_physics_device: str = "cuda"', 'sim_device="cuda:0"'):
        assert kept in new
    assert 'sim_device="cuda:1"' in new
    for converted in ('policy_device: str = "npu"', '    device: str = "npu"\n', 'rl_device="npu:0"'):
        assert converted in new
    notes = sorted(r.line for r in conv.findings if "simulator's own settings" in r.message)
    assert notes == [9, 10, 19]  # make(sim_device=...) of an unknown callee: nothing would change it


# ---- a project that already runs on NPU and ROCm (tests/fixtures/projects/multibackend): its
# multi-backend helpers stay as they are, the places with no NPU path convert (issue 31, mechanism 6)

MULTI = FIXTURES / "projects" / "multibackend"


@pytest.fixture(scope="module")
def multibackend_result(tmp_path_factory) -> Path:
    from test_project import convert_project

    return convert_project(MULTI, tmp_path_factory.mktemp("multibackend"))


def test_the_multi_backend_project_converts_to_its_golden_tree(multibackend_result: Path):
    from goldens import check_text, check_tree

    check_tree(FIXTURES / "projects" / "multibackend_msft", multibackend_result, ignore=REPORTS)
    check_text(FIXTURES / "reports" / "multibackend_unsupported.tsv", _sheet_tsv(multibackend_result, "Unsupported"))
    check_text(FIXTURES / "reports" / "multibackend_paths.tsv", _sheet_tsv(multibackend_result, "NPU paths"))


def test_the_helpers_of_a_project_on_npu_stay(multibackend_result: Path):
    for name in ("pkg/device.py", "pkg/engines/nccl_engine.py", "pkg/engines/hccl_engine.py"):
        assert (multibackend_result / name).read_bytes() == (MULTI / name).read_bytes(), name
    memory = (multibackend_result / "pkg" / "memory.py").read_text()
    # the allocator call under the project's own CUDA flag stays; the cache calls with no NPU path convert
    assert "    if is_cuda_available:\n        torch.cuda.memory._set_allocator_settings(" in memory
    assert "torch_npu.npu.empty_cache()" in memory and "torch_npu.npu.synchronize()" in memory
    train = (multibackend_result / "train.py").read_text()
    assert 'if batch.device.type == "cuda":\n        torch.cuda.synchronize()' in train
    assert "torch_npu.npu.max_memory_allocated()" in train
    # a "cuda" that is no device (a profiling option): its branch converts whole, even in this project
    assert "activities.append(torch_npu.profiler.ProfilerActivity.NPU)" in train
    assert "activities = [torch_npu.profiler.ProfilerActivity.CPU]" in train
    notes = _sheet_tsv(multibackend_result, "Unsupported")
    # both CUDA_VISIBLE_DEVICES, and torch.cuda chosen beside torch.npu: kept, not errors; pin_visible
    # has a ROCm arm and calls visible_devices_variable(), which has the NPU arm (a note); so does
    # launch.export_devices, through the same function imported from device.py under another name;
    # launch.export_and_release calls only memory.release, which names no NPU: a warning, to add one
    assert notes.count("a helper that already chooses among backends") == 5
    assert "\terror\t" not in notes
    rows = notes.splitlines()
    (pin,) = [row for row in rows if row.startswith("pkg/device.py\t33\t")]
    assert "\tnote\t" in pin and "its NPU arm is in visible_devices_variable(), which it calls" in pin
    (export,) = [row for row in rows if row.startswith("pkg/launch.py\t13\t")]
    assert "\tnote\t" in export and "its NPU arm is in pkg/device.py: visible_devices_variable()" in export
    (warning,) = [row for row in rows if "\twarning\t" in row]
    assert warning.startswith("pkg/launch.py\t21\t") and warning.endswith(
        "has no NPU arm: add one beside the others by hand (ASCEND_RT_VISIBLE_DEVICES, torch_npu.npu)\t\t1\t"
    )


LOOK_ALIKE_DEVICE = """import os

import torch

is_cuda_available = torch.cuda.is_available()
IS_ROCM = torch.version.hip is not None


def visible_devices_variable():
    if IS_ROCM:
        return "HIP_VISIBLE_DEVICES"
    return "CUDA_VISIBLE_DEVICES"


def pin_visible(devices):
    hip = os.environ.pop("HIP_VISIBLE_DEVICES", None)
    if hip is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = hip
    os.environ[visible_devices_variable()] = devices
"""


def test_the_same_code_converts_in_a_project_without_npu(tmp_path: Path):
    """The look-alike: the same helpers for CUDA and ROCm, and no sign that the project runs on NPU."""
    import shutil

    from test_project import convert_project

    src = tmp_path / "plain"
    shutil.copytree(MULTI, src)
    (src / "pkg" / "device.py").write_text(LOOK_ALIKE_DEVICE)
    result = convert_project(src, tmp_path / "out")
    device = (result / "pkg" / "device.py").read_text()
    assert device.count('"ASCEND_RT_VISIBLE_DEVICES"') == 2 and "CUDA_VISIBLE_DEVICES" not in device
    memory = (result / "pkg" / "memory.py").read_text()
    assert "torch_npu.npu.memory._set_allocator_settings(" in memory
    assert 'if batch.device.type == "npu":' in (result / "train.py").read_text()


@pytest.mark.parametrize(
    "source, found",
    [
        (b"try:\n    import torch_npu\nexcept ImportError:\n    pass\n", 2),
        (b"try:  # optional\n\n    import torch_npu  # noqa\nexcept ImportError:\n    pass\n", 3),
        (b"import importlib.util\nok = importlib.util.find_spec('torch_npu') is not None\n", 2),
        (b"def is_torch_npu_available(check_device=True):\n    return False\n", 1),
        (b'name = "ASCEND_RT_VISIBLE_DEVICES" if npu else "CUDA_VISIBLE_DEVICES"\n', 1),
        (b"import torch_npu\n", None),  # a file written for NPU only says nothing about the project
        (b"# try:\n#     import torch_npu\nx = 'npu_like'\n", None),
        (b"def is_npu(x):\n    return x\n", None),
    ],
)
def test_the_signs_that_a_project_runs_on_npu(source: bytes, found: int | None):
    from transplant.project.npu_support import python_evidence

    got = python_evidence(source)
    assert (got[0] if got else None) == found


def test_npu_requirements_are_a_sign_and_commented_ones_are_not():
    from transplant.project.npu_support import requirement_evidence

    assert requirement_evidence("requirements-npu.txt", b"torch==2.6\ntorch-npu==2.6.0\n") == (
        2,
        "ships NPU requirements (torch_npu)",
    )
    assert requirement_evidence("pyproject.toml", b'npu = ["torch_npu>=2.6"]\n') is not None
    assert requirement_evidence("requirements.txt", b"# torch_npu on Ascend hosts\nnpu-smi-tools\n") is None


def test_dotted_options_are_named_by_their_last_part():
    """``--vllm.sync_backend nccl`` in a script and in an argv list is a backend, as its Python default is."""
    from transplant.formats.shell_values import value_edits

    edits = value_edits(b"python -m app --vllm.sync_backend nccl --model.device=cuda:1 --vllm.engine nccl")
    assert [(e.old, e.new) for e in edits] == [("nccl", "hccl"), ("cuda:1", "npu:1")]
    source = b'import subprocess\nsubprocess.run(["python", "app.py", "--vllm.sync_backend", "nccl"])\n'
    conv = convert(source, options_of(source))
    assert conv.new is not None and b'"--vllm.sync_backend", "hccl"' in conv.new


ENGINE = """import torch
{npu}

class Engine:
    def __init__(self, size, device: str = "cuda", other_device="cuda"):
        self.device = device
        self.other_device = other_device

    def prepare(self):
        if self.device == "cuda":
            return cupy_buffer(self.size)
        return torch.zeros(self.size, device=self.device, pin_memory=True)
"""


def test_a_default_beside_its_kept_cuda_test_stays():
    """In a file that tells NPU from CUDA, ``self.device == "cuda"`` means CUDA and stays: the default
    of the same value stays with it (one decision), with a note; another parameter's default converts."""
    source = ENGINE.format(npu="from .device import is_npu_available\nif is_npu_available():\n    torch.npu.init()\n")
    conv = convert(source.encode(), options_of(b""))
    new = (conv.new or source.encode()).decode()
    assert 'device: str = "cuda", other_device="npu"' in new and 'if self.device == "cuda":' in new
    (note,) = [r for r in conv.records if "tests against 'cuda' in tests that stay" in r.message]
    assert note.level == "note" and note.line == 8
    plain = ENGINE.format(npu="")  # the look-alike: no NPU path in the file, the test and its default convert
    new = (convert(plain.encode(), options_of(b"")).new or b"").decode()
    assert 'device: str = "npu", other_device="npu"' in new and 'if self.device == "npu":' in new


LAUNCH = """import os
import subprocess

import torch


def evaluate_tf(gpu):
    env = os.environ.copy()
    env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    subprocess.run(["python", "tools/tf_eval.py"], env=env, check=True)


def evaluate_torch(gpu):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
    subprocess.run(["python", "tools/torch_eval.py"], env=env, check=True)


def evaluate_tf_shell(gpu):
    subprocess.Popen("python tools/tf_eval.py --fast", shell=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu)))


torch.cuda.synchronize()
"""


def test_a_tensorflow_child_keeps_its_visible_devices(tmp_path: Path):
    """CUDA_VISIBLE_DEVICES set for a child process that runs a TensorFlow program of the project stays,
    with a note; set for a PyTorch child (the look-alike) it is renamed."""
    from test_project import convert_project

    src = tmp_path / "proj"
    (src / "tools").mkdir(parents=True)
    (src / "launch.py").write_text(LAUNCH)
    (src / "tools" / "tf_eval.py").write_text(
        'import tensorflow as tf\n\nprint(tf.config.list_physical_devices("GPU"))\n'
    )
    (src / "tools" / "torch_eval.py").write_text("import torch\n\nprint(torch.cuda.device_count())\n")
    result = convert_project(src, tmp_path / "out")
    launch = (result / "launch.py").read_text()
    assert 'env["CUDA_VISIBLE_DEVICES"] = str(gpu)' in launch
    assert "env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu)))" in launch  # the shell command's child
    assert "env = dict(os.environ, ASCEND_RT_VISIBLE_DEVICES=str(gpu))" in launch
    assert "torch_npu.npu.synchronize()" in launch
    (row,) = [r for r in _sheet_tsv(result, "Unsupported").splitlines() if "a TensorFlow program" in r]
    assert "runs tools/tf_eval.py" in row and row.endswith("\t2\t9, 19")  # one note each, grouped


def test_a_cuda_runtime_method_keeps_its_call():
    """``torch.cuda.cudart().cudaHostRegister(...)``: renamed alone, the NPU object would be asked for a
    CUDA method; the call stays with a note. The same call used otherwise converts (the look-alike)."""
    source = (
        b"import torch\n\n\ndef pin(t):\n"
        b"    ok = int(torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel(), 1))\n"
        b"    rt = torch.cuda.cudart()\n"
        b"    return ok, rt\n"
    )
    from conftest import cached_ruleset

    conv = convert(source, cached_ruleset(pytorch_version="2.12"))  # (npurt is on the 2.12 support list)
    new = (conv.new or source).decode()
    assert "torch.cuda.cudart().cudaHostRegister(" in new and "rt = torch_npu.npu.npurt()" in new
    (note,) = [r for r in conv.records if "named after the CUDA runtime" in r.message]
    assert note.level == "note" and note.line == 5


# ---- a call that answers for CUDA when it names no device (issue 31): "npu" is written in, except in a
# project that runs on NPU and other backends, where it is kept with a warning to pass the project's device

DEVICE_LESS = b"""import torch


def autocast_context(engine):
    if torch.is_autocast_enabled():
        return engine.autocast()
    return None


def seeded(step):
    with torch.random.fork_rng(devices=[0]):
        return step()
"""


def test_a_device_less_call_stays_in_a_project_on_npu():
    from transplant.engine.multi_backend import PASS_DEVICE
    from transplant.project import ProjectFacts

    facts = ProjectFacts(npu_support="requirements.txt:3: ships NPU requirements (torch_npu)")
    conv = convert(DEVICE_LESS, cached_ruleset(pytorch_version="2.10"), facts=facts)
    assert conv.new is None or b'"npu"' not in conv.new
    warnings = [r for r in conv.records if r.level == "warning" and r.message.endswith(PASS_DEVICE)]
    assert sorted(r.line for r in warnings) == [5, 11]
    assert all("requirements.txt:3" in r.message for r in warnings)


def test_a_device_less_call_converts_in_a_project_without_npu():
    conv = convert(DEVICE_LESS, cached_ruleset(pytorch_version="2.10"))
    assert conv.new is not None
    assert b'torch.is_autocast_enabled("npu")' in conv.new and b'device_type="npu"' in conv.new


def test_a_device_less_call_beside_cuda_code_converts_with_it_in_a_project_on_npu():
    """verl's attention: ``if torch.is_autocast_enabled(): dtype = torch.get_autocast_gpu_dtype()`` is
    CUDA code: the test converts with the query it guards, one decision."""
    from transplant.project import ProjectFacts

    facts = ProjectFacts(npu_support="requirements.txt:3: ships NPU requirements (torch_npu)")
    source = DEVICE_LESS.replace(b"return engine.autocast()", b"return torch.get_autocast_gpu_dtype()")
    conv = convert(source, cached_ruleset(pytorch_version="2.12"), facts=facts)
    assert conv.new is not None
    assert b'if torch.is_autocast_enabled("npu"):\n        return torch_npu.npu.get_autocast_dtype()' in conv.new


# ---- a module that adapts another accelerator's library (project/other_backends.py): DeepSpeed's
# comm/mori.py runs AMD's MORI on ROCm hosts only; converting its CUDA names changes code an NPU never runs

ADAPTER = b"""import torch


def init():
    try:
        import mori.shmem as shmem
    except ImportError:
        return None
    return shmem.init()


def allgather(handle, tensor):
    stream = torch.cuda.current_stream()
    return handle(tensor.data_ptr(), stream.cuda_stream)
"""


@pytest.mark.parametrize("name", ["comm/mori.py", "comm/mori_allgather.py", "amdsmi_probe.py"])
def test_another_backends_library_adapter_stays(name: str):
    from transplant.filetypes import convert_file

    source = ADAPTER if "amdsmi" not in name else ADAPTER.replace(b"import mori.shmem", b"from amdsmi import amdsmi")
    result = convert_file(name, source, cached_ruleset())
    assert result.new is None
    (note,) = result.records
    assert note.level == "note" and "a ROCm library" in note.message and "never on an NPU" in note.message


@pytest.mark.parametrize(
    "name, source",
    [
        ("comm/sdma.py", ADAPTER),  # imports mori, but is not named for it: converts
        ("comm/mori.py", ADAPTER.replace(b"import mori.shmem as shmem", b"import shmem")),  # named, no import
        ("comm/memory.py", ADAPTER.replace(b"mori", b"memory")),
    ],
)
def test_a_module_that_is_no_adapter_converts(name: str, source: bytes):
    from transplant.filetypes import convert_file

    result = convert_file(name, source, cached_ruleset())
    assert result.new is not None and b"torch_npu.npu.current_stream()" in result.new
