"""emulate's device properties, name and memory are torch_npu's: its _NPUDeviceProperties fields with
their types (the CUDA names it never fills are None, other CUDA fields are missing and the emulator
says so with the file and line), its device checks; with and without device identity."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from conftest import FIXTURES
from test_emulate import emulate, lines

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs PyTorch: .ci/run installs the CPU wheel"
)

PROGRAM = FIXTURES / "emulate" / "identity" / "properties.py"


def test_properties_are_torch_npus_and_a_cuda_field_is_the_emulators_error(tmp_path):
    shutil.copy(PROGRAM, tmp_path)
    proc = emulate(["properties.py"], tmp_path, TRANSPLANT_EMULATE_NPUS="8")
    assert proc.returncode == 1, proc.stderr
    checks = ["fields", "spellings", "name-and-memory", "refusals", "cuda-fields"]
    assert lines(proc.stdout, "ok ") == [f"ok {check}" for check in checks]
    line = next(n for n, text in enumerate(PROGRAM.read_text().splitlines(), 1) if "block_optin)" in text)
    errors = lines(proc.stderr, "transplant emulate: error: ")
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert errors[0].startswith(
        f"transplant emulate: error: {tmp_path / 'properties.py'}:{line}: an NPU's device properties have no "
        "'shared_memory_per_block_optin' (a CUDA field; torch_npu's _NPUDeviceProperties has name, total_memory,"
    ), errors


def test_without_device_identity_one_device_answers_for_every_index(tmp_path):
    (tmp_path / "plain.py").write_text(
        "import torch, torch_npu\n"
        "props = torch.npu.get_device_properties(5)\n"
        "assert repr(props) == repr(torch.npu.get_device_properties('npu:0'))\n"
        "assert props.major is None and props.multi_processor_count == props.vector_core_num\n"
        "print('fields', type(props).__name__, type(props.total_memory).__name__, props.minor)\n"
        "try:\n"
        "    torch.npu.get_device_properties('cpu')\n"
        "except ValueError as error:\n"
        "    print('refused', error)\n"
    )
    proc = emulate(["--no-device-identity", "plain.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc.stdout, "fields") == ["fields _NPUDeviceProperties int None"]
    assert lines(proc.stdout, "refused") == ["refused Expected a npu device, but got: cpu"]
