"""Guards and helpers whose CUDA side lives elsewhere (issue 31, mechanisms 4 and 6).

* A family of per-backend functions in a project that runs on NPU: ``is_cuda_available`` beside
  ``is_npu_available``, ``require_multi_gpu`` beside ``require_multi_xpu``. The CUDA member is what the
  project calls where it means CUDA; converting its body made the project believe CUDA was there on an
  NPU host. It stays, with a note; a function named for CUDA with no twin, or the same family in a
  project with no NPU support, converts as before.
* A guard whose condition calls a function of another module that reads the CUDA compute capability
  as a number (``torch.cuda.is_available() and not fp8_capable()``): the query stays a CUDA query in
  its own module, so the guard stays a CUDA test (renamed, an NPU host would call it and raise).
* A guard over torch._C's private CUDA bindings (``torch._C._cuda_isInBadFork()``): CUDA builds of
  torch alone have them, so the guard stays.
Each with a look-alike that converts."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_project import convert_project

IMPORTS = """import importlib.util

import torch


def is_npu_available():
    return importlib.util.find_spec("torch_npu") is not None


def is_xpu_available():
    return hasattr(torch, "xpu") and torch.xpu.is_available()


def is_cuda_available():
    return torch.cuda.is_available()


def is_cuda_ready():
    return torch.cuda.is_available() and torch.cuda.device_count() > 0
"""

TESTING = """import unittest

import torch


def require_multi_gpu(case):
    return unittest.skipUnless(torch.cuda.device_count() > 1, "needs GPUs")(case)


def require_multi_xpu(case):
    return unittest.skipUnless(torch.xpu.device_count() > 1, "needs XPUs")(case)


def to_gpu(x):
    return x.to("cuda")


def to_cpu(x):
    return x.to("cpu")
"""

ENV = """import torch


def fp8_capable():
    return torch.cuda.get_device_capability() >= (8, 9)


def describe():
    print(torch.cuda.get_device_capability())
    return True
"""

GATES = """import torch

from .env import describe, fp8_capable


def want_fp8():
    enabled = True
    if torch.cuda.is_available() and not fp8_capable():
        enabled = False
    return enabled


def chatty():
    if torch.cuda.is_available() and describe():
        torch.cuda.synchronize()


def fork_ok():
    if torch.cuda.is_available():
        assert not torch._C._cuda_isInBadFork()
    return True


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
"""


PROFILING = """import torch


class Profiling:
    def activity(self, name):
        table = {"cpu": torch.profiler.ProfilerActivity.CPU, "cuda": torch.profiler.ProfilerActivity.CUDA}
        if torch.xpu.is_available():
            table["xpu"] = torch.profiler.ProfilerActivity.XPU
        return table[name]

    def build(self, names):
        return torch.profiler.profile(activities=[self.activity(n) for n in names])
"""


def _project(root: Path, *, npu: bool) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    imports = (
        IMPORTS
        if npu
        else IMPORTS.replace('find_spec("torch_npu")', 'find_spec("torch_xla")').replace(
            "def is_npu_available", "def is_tpu_available"
        )
    )
    (pkg / "imports.py").write_text(imports)
    (pkg / "testing.py").write_text(TESTING)
    (pkg / "env.py").write_text(ENV)
    (pkg / "gates.py").write_text(GATES)
    (pkg / "profiling.py").write_text(PROFILING)
    return root


def _log(result: Path) -> str:
    return (result / "msFmkTranspltlog.txt").read_text()


def _rows(result: Path, *places: str) -> list[str]:
    """The log's rows at these places of the package ("gates.py:8")."""
    return [r for r in _log(result).splitlines() if any(f"pkg/{place}:" in r for place in places)]


@pytest.fixture(scope="module")
def on_npu(tmp_path_factory) -> Path:
    """The project converted, with the evidence that it runs on NPU."""
    root = tmp_path_factory.mktemp("on_npu")
    return convert_project(_project(root / "proj", npu=True), root / "out")


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    """The same project without that evidence."""
    root = tmp_path_factory.mktemp("plain")
    return convert_project(_project(root / "proj", npu=False), root / "out")


def test_the_cuda_member_of_a_family_stays_in_a_project_on_npu(on_npu: Path):
    result = on_npu
    imports = (result / "pkg" / "imports.py").read_text()
    assert "def is_cuda_available():\n    return torch.cuda.is_available()\n" in imports
    # named for CUDA, but no twin: converted as anywhere
    assert (
        "def is_cuda_ready():\n    return torch_npu.npu.is_available() and torch_npu.npu.device_count() > 0" in imports
    )
    testing = (result / "pkg" / "testing.py").read_text()
    assert "skipUnless(torch.cuda.device_count() > 1" in testing
    # to_gpu's twin is to_cpu: moving data is no backend family, the device string converts
    assert 'return x.to("npu")' in testing
    for line, name, twins in (
        ("imports.py:15:", "is_cuda_available", "is_npu_available, is_xpu_available"),
        ("testing.py:7:", "require_multi_gpu", "require_multi_xpu"),
    ):
        (row,) = _rows(result, line.rstrip(":"))
        assert row.split()[2] == "INFO" and "TP203 kept as it is" in row, row
        assert f"({name} is the CUDA twin of {twins})" in row, row


def test_the_same_family_converts_in_a_project_without_npu(plain: Path):
    result = plain
    imports = (result / "pkg" / "imports.py").read_text()
    assert "def is_cuda_available():\n    return torch_npu.npu.is_available()\n" in imports
    assert "skipUnless(torch_npu.npu.device_count() > 1" in (result / "pkg" / "testing.py").read_text()


def test_a_guard_over_a_capability_query_of_another_module_stays(plain: Path):
    result = plain
    gates = (result / "pkg" / "gates.py").read_text()
    assert "    if torch.cuda.is_available() and not fp8_capable():\n        enabled = False" in gates
    # the look-alike prints the capability, which an NPU's None does too: the guard converts
    assert "    if torch_npu.npu.is_available() and describe():\n        torch_npu.npu.synchronize()" in gates
    assert "torch.cuda.get_device_capability() >= (8, 9)" in (result / "pkg" / "env.py").read_text()
    (row,) = _rows(result, "gates.py:8")
    assert "TP240 device test kept as a CUDA test" in row
    assert "fp8_capable (pkg/env.py), which reaches a CUDA compute capability read as a number (pkg/env.py:5)" in row


def test_a_guard_over_a_private_cuda_binding_stays(plain: Path):
    result = plain
    gates = (result / "pkg" / "gates.py").read_text()
    assert "    if torch.cuda.is_available():\n        assert not torch._C._cuda_isInBadFork()" in gates
    assert "def sync():\n    if torch_npu.npu.is_available():\n        torch_npu.npu.synchronize()" in gates
    rows = _rows(result, "gates.py:19", "gates.py:20")
    assert any("TP240" in r and "torch._C._cuda_isInBadFork, a binding of CUDA builds of torch" in r for r in rows)
    # the binding's own row says the test stays, at note level: nothing fails on an NPU
    (binding,) = [r for r in rows if "TP201" in r]
    assert binding.split()[2] == "INFO" and "the device test at line 19 stays a CUDA test" in binding


def test_the_profiler_stays_with_the_activities_a_kept_helper_chooses(on_npu: Path):
    """torch_npu's profiler takes only its own ProfilerActivity: fed torch's, it profiles nothing."""
    result = on_npu
    assert (result / "pkg" / "profiling.py").read_bytes() == PROFILING.encode()
    (row,) = _rows(result, "profiling.py:12")
    assert "TP203 kept as it is (torch.profiler.profile -> torch_npu.profiler.profile)" in row
    assert "the profiler activities this file chooses stay torch.profiler's" in row


def test_without_npu_support_activities_and_profiler_convert_together(plain: Path):
    result = plain
    profiling = (result / "pkg" / "profiling.py").read_text()
    assert '"cuda": torch_npu.profiler.ProfilerActivity.NPU' in profiling
    assert "return torch_npu.profiler.profile(activities=" in profiling


def test_a_file_that_handles_npu_itself_converts_its_profiler():
    """Activities kept because the file already chooses NPU's beside CUDA's (not a helper of a project on
    NPU) are no reason to keep the profiler: on an NPU it is given torch_npu's activities."""
    from conftest import cached_ruleset
    from transplant.engine import convert

    source = (
        "import torch\nimport torch_npu\n\n\ndef build(on_npu):\n"
        "    if on_npu:\n        acts = [torch_npu.profiler.ProfilerActivity.NPU]\n"
        "    else:\n        acts = [torch.profiler.ProfilerActivity.CUDA]\n"
        "    return torch.profiler.profile(activities=acts)\n"
    )
    new = convert(source.encode(), cached_ruleset()).new
    assert new is not None and b"return torch_npu.profiler.profile(activities=acts)" in new
