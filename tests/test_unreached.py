"""Findings in code that a device test kept as a CUDA test chooses (issue 36): an NPU run never
enters it, so a CUDA-only finding there is a note that names the test (transplant/guards/unreached.py,
project/cuda_tests.py). The fixture project ``cuda_guarded`` and its golden report
``tests/fixtures/reports/cuda_guarded.tsv``: FastChat's shape (a flag from a predicate that returns
False off CUDA, then ``if flag:`` with BitsAndBytesConfig), ``and``/``not``/``!=``/``else`` spellings,
and look-alikes whose branch may run on an NPU (``x.is_cuda or force``, ``device == "cuda" or forced``);
a backend argument that calls the project's own hccl chooser (project/backends.py).
"""

from __future__ import annotations


import pytest

from conftest import FIXTURES
from goldens import check_text
from test_project import convert_project
from test_reports import as_tsv, sheet

GUARDED = FIXTURES / "projects" / "cuda_guarded"


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[tuple]:
    return sheet(convert_project(GUARDED, tmp_path_factory.mktemp("guarded")), "Unsupported")


def test_report_matches_golden(rows: list[tuple]):
    check_text(FIXTURES / "reports" / "cuda_guarded.tsv", as_tsv(rows))


def _at(rows: list[tuple], path: str, line: int, api: str) -> tuple:
    """The row of ``api`` in ``path`` whose lines hold ``line`` (identical findings share a row)."""
    for r in rows:
        lines = [int(n) for n in str(r[9] or r[1]).split(", ")]
        if r[0] == path and r[4] == api and line in lines:
            return r
    raise AssertionError((path, line, api))


@pytest.mark.parametrize(
    "path, line, api, guard",
    [
        ("load.py", 17, "transformers.BitsAndBytesConfig", "the flag `offload` (line 14, a device test) is False"),
        ("attention.py", 9, "flash_attn", "the device test at line 8 stays a CUDA test"),  # is_cuda and ...
        ("attention.py", 18, "xformers", "the device test at line 16 stays a CUDA test"),  # after `if not ...: return`
        ("attention.py", 35, "flash_attn", "the device test at line 32 stays a CUDA test"),  # else of != "cuda"
    ],
)
def test_cuda_only_code_behind_a_kept_test_is_a_note_naming_it(rows: list[tuple], path, line, api, guard):
    row = _at(rows, path, line, api)
    assert row[5] == "note" and guard in row[6] and "does not run" in row[6]


@pytest.mark.parametrize(
    "path, line, api",
    [
        ("attention.py", 25, "flash_attn"),  # q.is_cuda or force: runs on an NPU when forced
        ("load.py", 25, "transformers.BitsAndBytesConfig"),  # quantize = device == "cuda" or forced
        ("load.py", 3, "transformers.BitsAndBytesConfig"),  # the import at the top runs everywhere
    ],
)
def test_code_an_npu_may_run_keeps_its_level(rows: list[tuple], path, line, api):
    row = _at(rows, path, line, api)
    assert row[5] == "error" and "does not run" not in row[6]


def test_a_test_skipped_off_cuda_is_a_note_and_a_refusal_is_not(rows: list[tuple]):
    skip = _at(rows, "test_kernel.py", 9, "torch.cuda.is_available")  # raise unittest.SkipTest(...)
    assert skip[5] == "note" and "skipped on an NPU" in skip[6]
    kernel = _at(rows, "test_kernel.py", 12, "flash_attn")
    assert kernel[5] == "note" and "the test is skipped on an NPU (line 9)" in kernel[6]
    refusal = _at(rows, "test_kernel.py", 15, "torch.cuda.is_available")  # raise RuntimeError(...)
    assert refusal[5] == "warning" and "on an NPU it raises" in refusal[6]
    assert _at(rows, "test_kernel.py", 18, "flash_attn")[5] == "error"


CLASS_TESTS = """import torch.nn as nn


def init(module):
    if isinstance(module, (nn.RNN, nn.GRU)):
        return 1
    if issubclass(type(module), nn.RNN):
        return 2
    return nn.RNN(4, 4)
"""


def test_a_class_only_named_in_isinstance_is_a_note():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("m.py", CLASS_TESTS.encode(), load_ruleset())
    found = {r.line: r for r in res.findings if r.api == "torch.nn.RNN"}
    assert found[5].level == "note" and "isinstance/issubclass" in found[5].message
    assert found[7].level == "note"
    assert found[9].level == "warning"  # nn.RNN(4, 4) builds one


def test_a_backend_the_project_chooses_itself_is_a_note(rows: list[tuple]):
    """comm/device.py's get_nccl_backend() returns "hccl" on an NPU (project/backends.py)."""
    for line in (11, 12):  # backend=get_nccl_backend(), f"cpu:gloo,cuda:{get_nccl_backend()}"
        row = _at(rows, "comm/launch.py", line, "torch.distributed.init_process_group")
        assert row[5] == "note" and "get_nccl_backend() gives it" in row[6] and "comm/device.py:8" in row[6]
    mapped = _at(rows, "comm/launch.py", 19, "torch.distributed.init_process_group")  # default_device_backend_map
    assert mapped[5] == "note" and "default_backend() gives it" in mapped[6]
    other = _at(rows, "comm/launch.py", 13, "torch.distributed.init_process_group")  # pick_backend(config)
    assert other[5] == "warning" and other[7]
    # a method returning an attribute its class sets to "hccl" (DeepSpeed's accelerator)
    accelerator = _at(rows, "comm/launch.py", 25, "torch.distributed.init_process_group")
    assert accelerator[5] == "note" and "communication_backend_name() gives it" in accelerator[6]
    settings = _at(rows, "comm/launch.py", 26, "torch.distributed.init_process_group")  # self._name: not hccl
    assert settings[5] == "warning"


ATTEMPT = """import torch


def fp8_ok():
    try:
        x = torch.randn(2).to(torch.float8_e5m2)
    except Exception:
        return False
    return x is not None


def fp8_probe():
    has_fp8 = True
    try:
        torch.randn(2).to(torch.float8_e5m2)
    except Exception:
        has_fp8 = False
    return has_fp8


def fp8_logged():
    try:
        torch.randn(2).to(torch.float8_e5m2)
    except Exception:
        print("no fp8")
        raise
"""


def test_a_finding_in_a_try_that_falls_back_is_a_note():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("fp8.py", ATTEMPT.encode(), load_ruleset())
    found = {r.line: r for r in res.findings if r.api.startswith("torch.float8")}
    assert found[15].level == "note" and "except clause at line 16 falls back" in found[15].message
    assert found[6].level != "note"  # the handler only returns: it binds nothing
    assert found[23].level != "note"  # it raises again


CUDA_BUILD = """import torch
import torch.distributed as dist
from torch.cuda import nccl


def bfloat_support():
    return (
        torch.version.cuda
        and torch.cuda.is_bf16_supported()
        and dist.is_nccl_available()
        and nccl.version() >= (2, 10)
    )


def nccl_version():
    return nccl.version()


def setup_versions(torch_available):
    if torch_available and torch.version.cuda is not None:
        return nccl.version()
    if torch_available or torch.version.cuda:
        return nccl.version()
"""


def test_code_after_torch_version_cuda_is_a_note():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("env.py", CUDA_BUILD.encode(), load_ruleset())
    found = {r.line: r for r in res.findings if r.api == "torch.cuda.nccl"}
    assert found[11].level == "note" and "after torch.version.cuda at line 8" in found[11].message
    assert found[16].level == "error"  # no such test in front of it
    assert found[21].level == "note" and "after torch.version.cuda at line 20" in found[21].message
    assert found[23].level == "error"  # `or`: a torch without CUDA enters it too


PATCHES = """import torch.nn as nn
import torch.nn.functional as F

HOOKS = {
    nn.RNN: print,
}


def patch(wrap, saved):
    F.avg_pool3d = wrap(F.avg_pool3d, print)
    F.adaptive_max_pool2d = saved[F.adaptive_max_pool2d.__name__]
    pooled = wrap(F.avg_pool3d, print)
    layer = HOOKS.get(nn.RNN)
    return pooled, layer, F.adaptive_max_pool2d(saved["x"], 2), nn.RNN(4, 4)


def not_a_patch(x):
    F.avg_pool3d = F.avg_pool3d(x, 2)  # called on the right: a use
"""


def test_a_dict_key_and_a_patch_are_notes_and_calls_stay():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("m.py", PATCHES.encode(), load_ruleset())
    found = {(r.line, r.col, r.api): r for r in res.findings if r.code in ("TP201", "TP202")}
    by_line: dict[int, list] = {}
    for (line, _, _), r in sorted(found.items()):
        by_line.setdefault(line, []).append(r)
    assert [r.level for r in by_line[5]] == ["note"] and "a key of a dict" in by_line[5][0].message
    assert [r.level for r in by_line[10]] == ["note", "note"]  # the target and the wrapped function
    assert "patched here" in by_line[10][0].message
    assert [r.level for r in by_line[11]] == ["note", "note"]  # restored: the target, and the key it reads
    assert [r.level for r in by_line[12]] == ["warning"]  # passed to a call that is no patch
    assert [r.level for r in by_line[13]] == ["warning"]  # an argument of .get(), not a dict key
    assert sorted(r.level for r in by_line[14]) == ["warning", "warning"]  # called and built
    assert [r.level for r in by_line[18]] == ["note", "warning"]  # the target; the call on the right


FALSE_TESTS = """import subprocess

import torch
from torch import _C
from deepspeed.accelerator import get_accelerator


def set_rng(state):
    if hasattr(_C, "_cuda_setRNGState") and callable(_C._cuda_setRNGState):
        _C._cuda_setRNGState(state)
        torch.cuda.nccl.version()
    return _C._cuda_setRNGState


def count():
    if get_accelerator().device_name() == "cuda":
        return subprocess.check_output(["nvidia-smi", "--list-gpus"])
    if get_accelerator().device_name() != "cuda":
        return subprocess.check_output(["nvidia-smi", "--list-gpus"])
"""


def test_findings_behind_hasattr_or_the_accelerators_name_are_notes():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("m.py", FALSE_TESTS.encode(), load_ruleset())
    found = {(r.line, r.api): r for r in res.findings if r.level in ("error", "warning", "note")}
    rng = [r for (line, api), r in found.items() if api.endswith("_cuda_setRNGState")]
    assert {r.line: r.level for r in rng} == {9: "note", 10: "note", 12: "error"}  # guarded twice; unguarded
    assert "behind hasattr(..., '_cuda_setRNGState')" in next(r for r in rng if r.line == 10).message
    assert found[(11, "torch.cuda.nccl")].level == "error"  # hasattr names another attribute
    smi = {r.line: r for r in res.findings if r.api == "nvidia-smi"}
    assert smi[17].level == "note" and "device_name() == 'cuda'" in smi[17].message
    assert smi[19].level == "warning"  # != "cuda": what an NPU host runs
