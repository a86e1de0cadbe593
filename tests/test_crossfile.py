"""A guard's CUDA-only code in another module of the project (issue 31, mechanism 1): the fixture
project ``crossfile`` (tests/fixtures/projects/crossfile, its README says what each file is for) and
the spellings of an import of the project's own modules. Goldens: the converted tree
(projects/crossfile_msft) and the Unsupported sheet (reports/crossfile.tsv)."""

from __future__ import annotations

import io
import textwrap
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from conftest import FIXTURES, cached_ruleset
from goldens import check_text, check_tree
from test_project import REPORTS, convert_project
from test_reports import as_tsv, sheet
from transplant import cli
from transplant.engine import convert
from transplant.guards import analyse
from transplant.guards.crossfile import ProjectReach
from transplant.project import NO_FACTS

PROJECT = FIXTURES / "projects" / "crossfile"
EXPECTED = FIXTURES / "projects" / "crossfile_msft"
REPORT = FIXTURES / "reports" / "crossfile.tsv"


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> Path:
    return convert_project(PROJECT, tmp_path_factory.mktemp("crossfile"))


def kept(path: Path) -> list[tuple[int, str]]:
    return [(r.line, r.message) for r in rows_of(path) if r.code == "TP240"]


def rows_of(path: Path):
    return convert(path.read_bytes(), cached_ruleset(), path=str(path)).records


def test_tree_and_report_match_their_goldens(result: Path):
    check_tree(EXPECTED, result, ignore=REPORTS)
    check_text(REPORT, as_tsv(sheet(result, "Unsupported")))


def test_guards_two_imports_away_stay_cuda_tests(result: Path):
    layers = (result / "fastlm" / "layers.py").read_text()
    assert 'if device_type != "cuda":' in layers  # turns FP8 off elsewhere: stays
    assert "    if x.is_cuda:\n        layer = f8.FP8Linear(w1)" in layers  # import fastlm.fp8 as f8
    assert 'if x.device.type == "npu":\n        return ref.linear' in layers  # plain torch: converted
    attention = (result / "fastlm" / "attention.py").read_text()
    assert "    if q.is_cuda:\n        from .kernels.triton_attn import attn" in attention
    assert "    if q.is_npu:\n        from .ref import matmul_ref" in attention
    assert 'if x.device.type == "cuda":' in (result / "fastlm" / "norm.py").read_text()
    assert "    if torch.cuda.is_available():\n        y = fp8_linear(y, w)" in (result / "train.py").read_text()
    assert "if x.is_npu and n > 0:" in (result / "fastlm" / "cycle_a.py").read_text()  # an import cycle ends


def test_each_kept_test_has_a_row_that_says_where_the_cuda_code_is(result: Path):
    rows = {(r[0], r[1]): r[6] for r in sheet(result, "Unsupported") if r[4] != "torch._scaled_mm"}
    assert "fastlm/fp8.py" in rows[("fastlm/layers.py", 13)] and "turns `fp8` off" in rows[("fastlm/layers.py", 13)]
    assert "FP8Linear (fastlm/fp8.py)" in rows[("fastlm/layers.py", 26)]
    assert "Triton kernel _attn_kernel (fastlm/kernels/triton_attn.py:7)" in rows[("fastlm/attention.py", 7)]
    assert (
        "runtime CUDA build" in rows[("fastlm/norm.py", 7)] and "fastlm/ops/plugin.py:12" in rows[("fastlm/norm.py", 7)]
    )
    assert "torch._scaled_mm" in rows[("train.py", 14)]
    assert ("fastlm/layers.py", 33) not in rows and ("fastlm/attention.py", 16) not in rows


def test_the_file_modes_find_the_files_project(monkeypatch):
    monkeypatch.chdir(PROJECT)
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["--check", "fastlm/layers.py", "fastlm/norm.py", "-j", "1"])
    assert code == 1
    text = out.getvalue()
    for where in ("fastlm/layers.py:13:", "fastlm/layers.py:26:", "fastlm/norm.py:7:"):
        assert any(line.startswith(where) and "TP240" in line for line in text.splitlines()), where
    assert "fastlm/layers.py:33:" in text and "TP240" not in next(
        line for line in text.splitlines() if line.startswith("fastlm/layers.py:33:")
    )


def test_standard_input_has_no_project():
    source = (PROJECT / "fastlm" / "norm.py").read_bytes()
    assert analyse(source, cached_ruleset(), NO_FACTS, "") is None
    assert b'x.device.type == "npu"' in convert(source, cached_ruleset()).new


SPELLINGS = [
    ("from pkg.fp8 import fp8_linear as lin", "lin(x)"),
    ("import pkg.fp8 as c", "c.fp8_linear(x)"),
    ("import pkg.fp8", "pkg.fp8.fp8_linear(x)"),
    ("from pkg import fp8", "fp8.fp8_linear(x)"),
    ("from . import fp8", "fp8.fp8_linear(x)"),
    ("from .fp8 import Scaled", "Scaled().run(x)"),
    ("from .fp8 import Scaled", "Scaled.run(None, x)"),
    ("from .sub.deep import go", "go(x)"),
    ("from pkg import reexported", "reexported(x)"),
]


def make(tmp_path: Path, header: str, call: str, fp8_body: str = "torch._scaled_mm(x, x)") -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .fp8 import fp8_linear as reexported\n")
    (pkg / "fp8.py").write_text(
        textwrap.dedent(f"""\
            import torch


            def fp8_linear(x):
                return {fp8_body}


            class Scaled:
                def run(self, x):
                    return fp8_linear(x)
            """)
    )
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "deep.py").write_text("from ..fp8 import fp8_linear\n\n\ndef go(x):\n    return fp8_linear(x)\n")
    user = pkg / "user.py"
    user.write_text(f"import torch\n{header}\n\n\ndef f(x):\n    if x.is_cuda:\n        return {call}\n    return x\n")
    return user


@pytest.mark.parametrize("header,call", SPELLINGS)
def test_every_spelling_of_an_import_of_the_project(tmp_path, header, call):
    user = make(tmp_path, header, call)
    assert [line for line, _ in kept(user)] == [6]


@pytest.mark.parametrize("header,call", SPELLINGS)
def test_a_portable_module_of_the_same_shape_still_converts(tmp_path, header, call):
    user = make(tmp_path, header, call, fp8_body="torch.nn.functional.linear(x, x)")
    assert kept(user) == []
    assert b"if x.is_npu:" in convert(user.read_bytes(), cached_ruleset(), path=str(user)).new


def test_a_module_imported_at_the_top_counts_for_what_the_branch_calls_only(tmp_path):
    # utils imports triton at its top, but the branch calls a plain function of it: the import ran
    # before the test, so the branch itself reaches nothing CUDA-only
    (tmp_path / "utils.py").write_text("import triton\n\n\ndef plain(x):\n    return x + 1\n")
    user = tmp_path / "user.py"
    user.write_text(
        "import torch\nimport utils\n\n\ndef f(x):\n    if x.is_cuda:\n        return utils.plain(x)\n    return x\n"
    )
    assert kept(user) == []
    # importing it inside the branch runs its top level there
    user.write_text(
        "import torch\n\n\ndef f(x):\n    if x.is_cuda:\n        import utils\n        return utils.plain(x)\n    return x\n"
    )
    assert [line for line, _ in kept(user)] == [5]


def test_each_module_is_read_once_and_cycles_end(tmp_path, monkeypatch):
    from transplant.project import modules

    reads: list[str] = []
    real = modules.parse

    def counting(data, **kwargs):
        reads.append(data[:40])
        return real(data, **kwargs)

    monkeypatch.setattr(modules, "parse", counting)
    (tmp_path / "a.py").write_text("import b\n\n\ndef f(x):\n    return b.g(x)\n")
    (tmp_path / "b.py").write_text("import a\nimport torch\n\n\ndef g(x):\n    return a.f(torch._scaled_mm(x, x))\n")
    facts = NO_FACTS
    project = ProjectReach(cached_ruleset(), facts)
    for _ in range(3):
        found = project.reason(str(tmp_path / "c.py"), "a.f", imported=False, depth=0)
        assert found is not None and "torch._scaled_mm" in found.what and found.where.endswith("b.py:6")
    assert len(reads) == 2  # a.py and b.py, once each


def chain(tmp_path: Path, length: int) -> Path:
    """guard.py calls m1.f, m1 calls m2.f, ..., the last calls torch._scaled_mm."""
    for i in range(1, length + 1):
        body = f"import m{i + 1}\n\n\ndef f(x):\n    return m{i + 1}.f(x)\n" if i < length else ""
        body = body or "import torch\n\n\ndef f(x):\n    return torch._scaled_mm(x, x)\n"
        (tmp_path / f"m{i}.py").write_text(body)
    guard = tmp_path / "guard.py"
    guard.write_text(
        "import torch\nimport m1\n\n\ndef g(x):\n    if x.is_cuda:\n        return m1.f(x)\n    return x\n"
    )
    return guard


def test_two_imports_away_is_followed_and_no_further(tmp_path):
    (tmp_path / "two").mkdir()
    assert [line for line, _ in kept(chain(tmp_path / "two", 2))] == [6]
    (tmp_path / "three").mkdir()
    guard = chain(tmp_path / "three", 3)
    assert kept(guard) == []
    assert b"if x.is_npu:" in convert(guard.read_bytes(), cached_ruleset(), path=str(guard)).new


def test_an_import_in_the_branch_runs_that_modules_own_top_level_only(tmp_path):
    # pkg/__init__.py imports a kernels module that imports triton: importing pkg in a branch imports
    # much of the project, which says nothing about the branch; pkg's own top level is plain
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from . import kernels\n")
    (tmp_path / "pkg" / "kernels.py").write_text("import triton\n")
    (tmp_path / "pkg" / "layers.py").write_text("import torch\n\n\ndef dense(x):\n    return x\n")
    user = tmp_path / "user.py"
    user.write_text(
        "import torch\n\n\ndef f(x):\n    if x.is_cuda:\n        from pkg.layers import dense\n        return dense(x)\n    return x\n"
    )
    assert kept(user) == []
    user.write_text(
        "import torch\n\n\ndef f(x):\n    if x.is_cuda:\n        from pkg import kernels\n        return x\n    return x\n"
    )
    assert [line for line, _ in kept(user)] == [5]


def test_the_language_server_finds_the_documents_project():
    from transplant.lsp.analysis import analyse as lsp_analyse
    from transplant.session import Session

    path = PROJECT / "fastlm" / "norm.py"
    session = Session(cached_ruleset())
    found = lsp_analyse(path.as_uri(), path.read_text(), session)
    assert any(f.diagnostic.code == "TP240" for f in found.findings)
    untitled = lsp_analyse("untitled:Untitled-1", path.read_text(), session, language_id="python")
    assert not any(f.diagnostic.code == "TP240" for f in untitled.findings)
