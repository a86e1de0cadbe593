"""torch.cuda handed on as a value (issue 31, mechanism 4): the module chosen beside another
accelerator's (engine/values.py, references.py), and a CUDA answer given to a library's CUDA switch
(engine/cuda_switches.py). Each with spellings and look-alikes."""

from __future__ import annotations

import pytest

from conftest import cached_ruleset
from transplant.engine import convert


def run(source: str):
    conv = convert(source.encode(), cached_ruleset())
    return (conv.new or source.encode()).decode(), conv


@pytest.mark.parametrize(
    "line,expected",
    [
        ("mod = torch.xpu if xpu else torch.cuda", "mod = torch.xpu if xpu else torch_npu.npu"),
        ("mod = torch.cuda if not xpu else torch.xpu", "mod = torch_npu.npu if not xpu else torch.xpu"),
        ("mod = torch.mps if mps else torch.cuda", "mod = torch.mps if mps else torch_npu.npu"),
    ],
)
def test_the_device_module_chosen_beside_another_becomes_torch_npus(line: str, expected: str):
    new, conv = run(f"import torch\n\n\ndef props(xpu, mps, d):\n    {line}\n    return mod.get_device_properties(d)\n")
    assert f"    {expected}\n" in new and "import torch_npu\n" in new
    (row,) = [r for r in conv.records if r.line == 5]
    assert row.code == "TP101" and "(the device module chosen beside torch." in row.message


@pytest.mark.parametrize(
    "line,expected",
    [
        ("mod = getattr(torch, xpu, torch.cuda)", "mod = getattr(torch, xpu, torch_npu.npu)"),
        (
            "sync = getattr(torch, other, torch.cuda).synchronize",
            "sync = getattr(torch, other, torch_npu.npu).synchronize",
        ),
    ],
)
def test_the_fallback_of_a_device_module_looked_up_by_name_becomes_torch_npus(line: str, expected: str):
    """On an NPU the lookup finds torch.npu; the fallback was an error row with nothing to do."""
    new, conv = run(f"import torch\n\n\ndef f(xpu, other):\n    {line}\n    return 1\n")
    assert f"    {expected}\n" in new
    (row,) = [r for r in conv.records if r.line == 5]
    assert row.code == "TP101" and "falls back on" in row.message


@pytest.mark.parametrize(
    "line",
    [
        "mod = torch.cuda",  # on its own: what is done with it cannot be followed
        "mod = other if xpu else torch.cuda",  # beside something that is no device module
        "mod = getattr(other, xpu, torch.cuda)",  # a lookup on something else than torch
    ],
)
def test_torch_cuda_as_a_value_elsewhere_stays_an_error(line: str):
    new, conv = run(f"import torch\n\n\ndef f(xpu, other):\n    {line}\n    return mod\n")
    assert f"    {line}\n" in new
    assert [r.code for r in conv.records if r.line == 5] == ["TP201"]


SWITCH = """import torch
from mergekit.options import MergeOptions
from tools import encoder as enc

from .local import build


def merge():
    return MergeOptions(device="auto", cuda=torch.cuda.is_available())


def encode():
    return enc.Encoder(use_gpu=torch.cuda.device_count() > 0)


def mine():
    return build(use_gpu=torch.cuda.is_available())


def flag():
    return MergeOptions(cuda=True, verbose=torch.cuda.is_available())
"""


def test_a_cuda_answer_given_to_a_librarys_cuda_switch_stays():
    new, conv = run(SWITCH)
    assert 'MergeOptions(device="auto", cuda=torch.cuda.is_available())' in new
    assert "enc.Encoder(use_gpu=torch.cuda.device_count() > 0)" in new
    notes = {r.line: r for r in conv.records if r.code == "TP203"}
    assert set(notes) == {9, 13}
    assert "a CUDA answer given to MergeOptions(..., cuda=...)" in notes[9].message
    assert notes[9].level == "note"
    # the project's own function converts with the project; another keyword is no switch
    assert "build(use_gpu=torch_npu.npu.is_available())" in new
    assert "MergeOptions(cuda=True, verbose=torch_npu.npu.is_available())" in new


def test_a_function_of_the_file_is_the_projects_own():
    source = SWITCH.replace("from .local import build\n", "") + "\n\ndef build(use_gpu):\n    return use_gpu\n"
    new, _ = run(source)
    assert "build(use_gpu=torch_npu.npu.is_available())" in new
