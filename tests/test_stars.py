"""Names that reach a file through ``from module import *`` (issue 11, kind 1): a project module's
imports are followed (its ``__all__`` too, and its own star imports, cycles included); a free
``torch`` beside a star import of a module the project does not have is taken as torch, and said."""

from __future__ import annotations

import ast
import subprocess
import sys

from conftest import FIXTURES
from transplant.project import gather
from transplant.project.stars import exported, resolve

PROJECT = FIXTURES / "projects" / "star_imports"


def facts():
    return gather((p.relative_to(PROJECT).as_posix(), str(p)) for p in sorted(PROJECT.rglob("*.py")))


def test_star_imports_of_project_modules_provide_their_imports():
    names, found = facts().star_names("train.py")
    assert found == ("models",)
    # __all__ of models/__init__.py keeps F (from its own star import of .layers) and drops nothing else it names
    assert names == {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional"}
    names, found = facts().star_names("eval.py")
    assert found == ("models.cyclic",) and names == {"dist": "torch.distributed", "tcuda": "torch.cuda"}
    assert facts().star_names("tools/other.py") == ({}, ())  # its module is not the project's


def test_resolution_of_module_paths():
    files = {"a/b/train.py", "a/b/models.py", "pkg/__init__.py", "pkg/sub/x.py", "pkg/y.py"}
    assert resolve("a/b/train.py", 0, "models", files.__contains__) == "a/b/models.py"
    assert resolve("pkg/sub/x.py", 2, "y", files.__contains__) == "pkg/y.py"
    assert resolve("pkg/sub/x.py", 2, "", files.__contains__) == "pkg/__init__.py"
    assert resolve("train.py", 0, "numpy", files.__contains__) is None


def test_private_names_and_all():
    names, stars, public = exported(ast.parse("import torch as _t\nimport os\n__all__ = ('os',)\nfrom .x import *\n"))
    assert names == {"_t": "torch", "os": "os"} and stars == [(1, "x")] and public == {"os"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transplant", *args], capture_output=True, text=True, timeout=120)


def test_repository_conversion_follows_star_imports(tmp_path):
    assert run("-q", "-i", str(PROJECT), "-o", str(tmp_path)).returncode == 0
    result = tmp_path / "star_imports_msft"
    assert (result / "train.py").read_text() == (
        "import torch_npu\nfrom models import *\n\nif torch_npu.npu.is_available():\n"
        '    device = torch.device("npu:0")\n    torch_npu.npu.synchronize()\nnet = nn.DataParallel(Block())\n'
        "y = F.relu(torch.ones(2).npu())\n"
    )
    assert (result / "eval.py").read_text() == (
        "import torch_npu\nfrom models.cyclic import *\n\ntorch_npu.npu.synchronize()\n"
        'dist.init_process_group("hccl")\n'
    )
    assert (result / "tools" / "other.py").read_text() == (
        "import torch_npu\nfrom thirdparty_helpers import *\n\ntorch_npu.npu.empty_cache()\n"
    )
    assert (result / "models" / "__init__.py").read_bytes() == (PROJECT / "models" / "__init__.py").read_bytes()
    again = run("--check", "--format", "json", str(result))
    assert again.returncode == 1  # DataParallel is still reported; nothing else would change
    assert '"TP101"' not in again.stdout and '"TP202"' in again.stdout


def test_check_reports_star_provided_names_and_the_assumption():
    out = run("--check", str(PROJECT)).stdout
    assert "train.py:6:7: TP202 torch.nn.DataParallel" in out  # nn comes from `from models import *`
    assert (
        "tools/other.py:1:1: TP203 torch is used in this file without an import of its own: it is taken as "
        "the torch module, assumed to come from `from thirdparty_helpers import *`"
    ) in out


def test_a_module_many_files_star_import_is_read_once_and_gives_each_the_same_names():
    from transplant.project.stars import provided

    sources = {
        "pkg/common.py": b"import torch\nfrom torch.cuda import amp\nfrom .deeper import *\n",
        "pkg/deeper.py": b"import numpy as np\nfrom .common import *\n",  # (a cycle back)
    }
    reads: list[str] = []

    def read(rel: str) -> bytes | None:
        reads.append(rel)
        return sources.get(rel)

    known: dict = {}
    first = provided("pkg/a.py", [(1, "common")], read, sources.__contains__, known)
    second = provided("pkg/b.py", [(1, "common")], read, sources.__contains__, known)
    third = provided("pkg/c.py", [(1, "deeper")], read, sources.__contains__, known)
    assert first == second == ({"torch": "torch", "amp": "torch.cuda.amp", "np": "numpy"}, (".common",))
    assert third == ({"np": "numpy", "torch": "torch", "amp": "torch.cuda.amp"}, (".deeper",))
    assert sorted(reads) == ["pkg/common.py", "pkg/deeper.py"]  # once each
    assert provided("pkg/d.py", [(1, "common")], read, sources.__contains__) == first  # without the memo too
