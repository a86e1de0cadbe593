"""Folding statements away before libcst parses a file (transplant.skeleton) never changes a result.

* The skeleton restores to the source byte for byte, is valid Python, and its line map sends every
  line of it back to the same line of the source.
* What is folded: statements no rule can match in, at any depth, never an import or the module
  docstring; what is not: statements sharing lines, suites, ``elif`` clauses.
* Converting through the skeleton gives the same bytes and the same records as converting the
  whole source: on every fixture, and on generated nested code in all its line-end, indentation and
  layout variants.
"""

from __future__ import annotations

import ast
import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, cached_ruleset
from transplant import engine
from transplant.engine import driver
from transplant.filetypes import file_kind
from transplant.skeleton import MARK, skeleton

RULES = cached_ruleset()


def whole(source: bytes, rules=RULES, monkeypatch: pytest.MonkeyPatch | None = None) -> engine.Conversion:
    """The engine converting the whole source (no skeleton)."""
    mp = monkeypatch or pytest.MonkeyPatch()
    with mp.context() as m:
        m.setattr(driver, "skeleton", lambda *args: None)
        return engine.convert(source, rules)


def view(conv: engine.Conversion):
    return conv.new, [dataclasses.astuple(r) for r in conv.records]


def check_skeleton(source: bytes, rules=RULES) -> None:
    skel = skeleton(source, rules)
    if skel is None:
        return
    assert skel.restore(skel.text) == source
    ast.parse(skel.text)  # still Python
    text_lines = skel.text.splitlines()
    source_lines = source.splitlines()
    markers = set(skel.starts)
    for number, line in enumerate(text_lines, 1):
        if number in markers:
            assert MARK in line
        else:
            assert source_lines[skel.line(number) - 1] == line


# --------------------------------------------------------------------------- what is folded

SOURCE = b'''"""Module docstring about cuda."""
import os
import torch


def plain(a, b):
    total = a + b
    return total


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.size = 3

    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            y = y.cuda()
        elif y.sum() < 0:
            y = -y
        else:
            pass
        return y


@decorate
def helper():
    return os.getcwd()


def trainer(model):
    import torch.cuda as tc  # a local import stays
    a = 1; b = 2
    tc.synchronize()
    if a: c = 3
'''


def folded(source: bytes) -> list[bytes]:
    skel = skeleton(source, RULES)
    assert skel is not None
    return [fold.strip().split(b"\n")[0] for fold in skel.folds]


def test_inert_statements_are_folded_at_every_depth() -> None:
    assert folded(SOURCE) == [
        b"def plain(a, b):",  # a whole top-level function
        b"def __init__(self):",  # a method
        b"y = x * 2",  # a statement in a method
        b"y = -y",  # the body of an elif clause (the clause itself stays)
        b"pass",  # the body of an else clause
        b"return y",
        b"@decorate",  # decorators go with their function
        b"a = 1; b = 2",  # statements sharing a line go together
        b"if a: c = 3",  # a suite goes whole
    ]
    check_skeleton(SOURCE)


def test_consecutive_folds_share_one_marker() -> None:
    source = b"import torch\nx = 1\n# a comment\n\ny = 2\nz = torch.cuda.current_device()\nw = 3\n"
    skel = skeleton(source, RULES)
    assert skel is not None
    assert skel.folds == [b"x = 1\n# a comment\n\ny = 2\n", b"w = 3\n"]
    assert (
        skel.text
        == b"import torch\n__transplant_folded_0__\nz = torch.cuda.current_device()\n__transplant_folded_1__\n"
    )
    assert skel.line(3) == 6
    check_skeleton(source)


def test_imports_and_the_docstring_are_never_folded() -> None:
    source = (
        b'"""Doc."""\nimport torch\ntry:\n    import yaml\nexcept ImportError:\n    yaml = None\n'
        b"x = torch.cuda.is_available()\n"
    )
    skel = skeleton(source, RULES)
    assert skel is not None
    assert skel.folds == [b"    yaml = None\n"]


def test_an_alias_stands_for_its_qualified_name() -> None:
    # "tc" names torch.cuda: a statement using it is not inert though it never spells "cuda"
    source = b"import torch.cuda as tc\n\n\ndef f():\n    return tc.current_device()\n\n\ndef g():\n    return 1\n"
    assert folded(source) == [b"def g():"]


def test_escapes_are_not_folded() -> None:
    source = b"import torch\nx = torch.zeros(1).to('\\x63uda')\ny = 1\nz = torch.cuda.is_available()\n"
    assert folded(source) == [b"y = 1"]


@pytest.mark.parametrize(
    "source",
    [
        b"\xef\xbb\xbfimport torch\nx = 1\ny = torch.cuda.is_available()\n",  # byte order mark
        b"import torch\r\nx = 1\ny = torch.cuda.is_available()\n",  # mixed line ends
        b"import torch\rx = 1\ry = torch.cuda.is_available()\r",  # old Mac line ends
        b"import torch\nx = '__transplant_folded_0__'\ny = torch.cuda.is_available()\n",  # the marker itself
        b"# -*- coding: latin-1 -*-\nimport torch\nx = 1\ny = torch.cuda.is_available()\n",  # not UTF-8
        b"import torch\nx = 1\ny = torch.cuda.is_available(\n",  # CPython rejects it
        b"import torch\ntorch.cuda.synchronize()\n",  # nothing to fold
    ],
)
def test_no_skeleton(source: bytes) -> None:
    assert skeleton(source, RULES) is None


def test_line_ends_and_missing_final_newline_are_kept() -> None:
    source = b"import torch\r\n\r\ndef f():\r\n    return 1\r\n\r\nx = torch.cuda.is_available()\r\ny = 2"
    skel = skeleton(source, RULES)
    assert skel is not None
    assert skel.text == (
        b"import torch\r\n\r\n__transplant_folded_0__\r\n\r\nx = torch.cuda.is_available()\r\n__transplant_folded_1__"
    )
    check_skeleton(source)
    assert engine.convert(source, RULES).new == whole(source).new


def test_restore_refuses_a_lost_or_repeated_marker() -> None:
    source = b"import torch\nx = 1\ny = torch.cuda.is_available()\nz = 2\n"
    skel = skeleton(source, RULES)
    assert skel is not None and len(skel.folds) == 2
    assert skel.restore(skel.text.replace(b"__transplant_folded_1__\n", b"")) is None
    assert skel.restore(skel.text + b"__transplant_folded_0__\n") is None


def test_records_carry_source_lines() -> None:
    conv = engine.convert(SOURCE, RULES)
    reference = whole(SOURCE)
    assert view(conv) == view(reference)
    lines = SOURCE.splitlines()
    for record in conv.records:
        if record.old:
            assert record.old.strip() in lines[record.line - 1].decode()


def test_skip_comments_work_through_folds() -> None:
    source = (
        b"import torch\n\n\ndef f():\n    return 1\n\n\nx = torch.cuda.is_available()  # transplant: skip\n"
        b"y = torch.cuda.is_available()\n"
    )
    conv = engine.convert(source, RULES)
    assert conv.new is not None
    assert b"x = torch.cuda.is_available()  # transplant: skip\n" in conv.new
    assert b"y = torch.npu.is_available()" in conv.new or b"y = torch_npu.npu.is_available()" in conv.new
    assert view(conv) == view(whole(source))


def test_fixtures_convert_the_same_through_the_skeleton(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = folded_files = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        if file_kind(path.name) != "python":
            continue
        data = path.read_bytes()
        check_skeleton(data)
        folded_files += skeleton(data, RULES) is not None
        try:
            fast = engine.convert(data, RULES)
        except engine.SourceError as exc:
            with pytest.raises(engine.SourceError) as again:
                whole(data, monkeypatch=monkeypatch)
            assert str(again.value) == str(exc)
            continue
        assert view(fast) == view(whole(data, monkeypatch=monkeypatch)), path.name
        checked += 1
    assert checked > 20 and folded_files > 10


# --------------------------------------------------------------------------- generated nested code

SIMPLE = [
    "x = 1",
    "print('plain')",
    "total = compute(a,\n{i}    b)",
    "text = '''one\ntwo'''",
    "pass",
    "y = x.cuda()",
    "torch.cuda.synchronize()",
    "d = 'cuda:0'",
    "model.to(device)",
    "dev = 'cuda'",
    "tc.synchronize()",
    "amp.autocast()",
    "n = tc",
    "a = 1; b = x.cuda()",
    "a = 1; b = 2",
    "s = torch.cuda.get_device_name(0)  # trailing comment",
    "q = nn.DataParallel(m)",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    "z = torch.zeros(1)",
    "assert ok, 'cuda missing'",
]
IMPORTS = [
    "import torch",
    "import torch.cuda as tc",
    "from torch.cuda import amp",
    "import os",
    "import torch.nn as nn",
    "from torch import cuda",
]
HEADERS = [
    "def f{n}(a, tc=None):",
    "def g{n}(self):",
    "class C{n}:",
    "class M{n}(nn.Module):",
    "if x:",
    "for i in y:",
    "while not done:",
    "with torch.cuda.device(0):",
    "with open(p) as fh:",
    "try:",
    "@decorate\ndef d{n}():",
    "async def h{n}():",
    "if x == 'cuda':",
]


@st.composite
def block(draw, depth: int) -> list[str]:
    """Lines of a block at indentation level 0, with "{i}" where the block's indentation goes."""
    out: list[str] = []
    for n in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["simple", "simple", "import", "compound", "comment", "blank", "suite"]))
        if kind == "simple" or (kind == "compound" and depth >= 3):
            out += draw(st.sampled_from(SIMPLE)).split("\n")
        elif kind == "import":
            out.append(draw(st.sampled_from(IMPORTS)))
        elif kind == "comment":
            out.append(draw(st.sampled_from(["# a comment", "# cuda in a comment", "#"])))
        elif kind == "blank":
            out.append("")
        elif kind == "suite":
            out.append(draw(st.sampled_from(["if a: b = x.cuda()", "if a: b = 1", "else_ = 1"])))
        else:
            header = draw(st.sampled_from(HEADERS)).format(n=n)
            out += header.split("\n")
            inner = draw(block(depth + 1))
            out += ["{i}" + line if line else line for line in inner]
            if header == "try:":
                out.append("except ImportError:")
                out += ["{i}" + line if line else line for line in draw(block(depth + 1))]
                if draw(st.booleans()):
                    out.append("finally:")
                    out += ["{i}" + line if line else line for line in draw(block(depth + 1))]
            elif header.startswith("if ") and draw(st.booleans()):
                out.append(draw(st.sampled_from(["elif y:", "elif y == 'cuda':", "else:"])))
                out += ["{i}" + line if line else line for line in draw(block(depth + 1))]
    return out


@st.composite
def module_source(draw) -> bytes:
    lines = draw(block(0))
    if draw(st.booleans()):
        lines.insert(0, '"""Docstring."""')
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(line.replace("{i}", indent) for line in lines)
    if draw(st.booleans()):
        text += newline
    return text.encode()


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(source=module_source())
def test_generated_code_converts_the_same_through_the_skeleton(source: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        compile(source, "<generated>", "exec", dont_inherit=True)
    except SyntaxError:
        return  # e.g. a compound statement whose body is only a comment
    check_skeleton(source)
    fast = engine.convert(source, RULES)
    assert view(fast) == view(whole(source, monkeypatch=monkeypatch))


def test_deep_nesting_matters_only_where_libcst_parses() -> None:
    # libcst's parser would crash on the long sum, so a file that needs it is not converted; when
    # the sum sits in a folded statement, libcst never sees it and the file converts as usual
    from transplant.nesting import MAX_DEPTH

    deep = "total = " + " + ".join(["1"] * (MAX_DEPTH + 50)) + "\n"
    folded_deep = (
        "import torch\n\n\ndef table():\n    " + deep + "    return total\n\n\nx = torch.cuda.is_available()\n"
    ).encode()
    conv = engine.convert(folded_deep, RULES)
    assert conv.new is not None and b"torch_npu.npu.is_available()" in conv.new
    assert conv.new.replace(b"import torch_npu\n", b"").replace(b"torch_npu.npu.", b"torch.cuda.") == folded_deep
    active_deep = (
        "import torch\n\n\ndef table():\n    y = 1\n    z = 2\n\n    "
        + deep.replace("total = ", "total = torch.cuda.device_count() + ")
    ).encode()
    with pytest.raises(engine.SourceError) as err:
        engine.convert(active_deep, RULES)
    assert "nested too deeply" in str(err.value) and err.value.line == 8  # its line in the source


def test_a_function_binding_an_imported_name_keeps_that_statement() -> None:
    # in a function, ``torch = ...`` (or ``global torch``) decides what every ``torch`` there is:
    # the engine must see it, however inert the statement is; a module's own rebinding may fold
    source = (
        b"import torch\nx = torch.zeros(1)\ntorch = torch\n\n\ndef f(a):\n    b = a + 1\n"
        b"    torch = fake(b)\n    c = b * 2\n    torch.cuda.synchronize()\n    return c\n\n\n"
        b"def g(a):\n    b = a + 1\n    global torch\n    c = b * 2\n    torch.cuda.synchronize()\n"
    )
    skel = skeleton(source, RULES)
    assert skel is not None
    assert b"    torch = fake(b)\n" in skel.text and b"    global torch\n" in skel.text
    assert b"torch = torch\n" in b"".join(skel.folds)  # the module's own: folded
    check_skeleton(source)
    assert view(engine.convert(source, RULES)) == view(whole(source))
    assert engine.convert(source, RULES).new.count(b"torch_npu.npu.synchronize()") == 1  # g's; f's torch is its own


# --------------------------------------------------------------------------- files that handle NPU already

NPU_AWARE = b"""import torch

DEVICES = ["cpu", "npu"]


def helper(values):
    total = 0
    for v in values:
        total += v
    return total


def flush(device):
    torch.cuda.empty_cache()
    if device == "npu":
        torch.npu.empty_cache()


def pick(args):
    if args.device == "npu":
        device = "npu:0"
    elif torch.cuda.is_available():
        device = "cuda:0"
    else:
        device = "cpu"
    count = helper([1, 2, 3])
    return device, count


def other():
    x = torch.zeros(3).cuda()
    return x
"""


def test_a_file_naming_an_npu_device_is_folded_but_not_what_names_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analyses of code that already handles NPU see every statement naming NPU (the flush
    beside `if device == "npu"` holds no CUDA word of its own); the rest folds as usual."""
    skel = skeleton(NPU_AWARE, RULES, driver.NPU_WORD_BYTES)
    assert skel is not None
    folded = b"".join(skel.folds)
    assert b"total += v" in folded and b"npu" not in folded
    fast = engine.convert(NPU_AWARE, RULES)
    assert view(fast) == view(whole(NPU_AWARE, monkeypatch=monkeypatch))
    assert fast.new is not None and b"torch.cuda.empty_cache()" in fast.new  # kept beside the NPU flush
    assert b'"cuda:0"' in fast.new  # a branch for another device of a chain that handles NPU
    assert b"x = torch.zeros(3).npu()" in fast.new


def test_the_dense_recipe_converts_the_same_through_the_skeleton(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    sys.path.insert(0, str(FIXTURES.parents[1] / "bench"))
    from dense import dense_file

    source = dense_file(600).encode()
    assert skeleton(source, RULES, driver.NPU_WORD_BYTES) is not None
    assert view(engine.convert(source, RULES)) == view(whole(source, monkeypatch=monkeypatch))


@pytest.mark.parametrize(
    "source",
    [
        b"if x:\n    tc.synchronize()\nelif y:\n    x = 1\n    import torch.cuda as tc",  # (Hypothesis found it)
        b"import torch\ntry:\n    y = 2\nfinally:\n    import torch.cuda as tc\n    tc.synchronize()",
        b"import torch.cuda as tc\nx = 1\ntc.synchronize()",
    ],
)
def test_a_last_line_pruned_from_a_file_without_a_final_newline(source: bytes, monkeypatch: pytest.MonkeyPatch):
    """The line before the pruned import keeps the newline it has in the source, by either path."""
    fast = engine.convert(source, RULES)
    assert view(fast) == view(whole(source, monkeypatch=monkeypatch))
    assert fast.new is not None and fast.new.endswith(b"\n") == (
        b"import torch.cuda as tc" in source.rsplit(b"\n", 1)[-1]
    )


# ------------------------------------------------- an import whose uses were rewritten, spelled in folds

FOLDED_BODIES = {
    # folded code that uses the import: it stays, through the skeleton
    "load": (b"def f(a):\n    return torch.zeros(a)\n", {"torch"}),
    "nested load": (b"class M:\n    def g(self):\n        return [torch.ones(1) for _ in range(2)]\n", {"torch"}),
    # the word without a use (an attribute, a string, a comment): the import goes, through the skeleton
    "no use": (b'def f(a):\n    return a.torch, "torch"  # torch\n', set()),
    # bound otherwise, or a keyword's name: only the whole source can count the uses (or the statement
    # that rebinds it is not folded at all)
    "parameter": (b"def f(torch):\n    return torch\n", None),
    "assigned": (b"def f():\n    torch = 1\n    return torch\n", None),
    "keyword": (b"def f(g):\n    return g(torch=1)\n", None),
    "global": (b"def f():\n    global torch\n    return 1\n", None),
    "except": (b"def f():\n    try:\n        pass\n    except ValueError as torch:\n        pass\n", None),
}


@pytest.mark.parametrize("name", sorted(FOLDED_BODIES))
def test_an_import_rewritten_away_in_the_skeleton_but_spelled_in_folds(name: str, monkeypatch: pytest.MonkeyPatch):
    """``import torch`` whose only skeleton use becomes torch_npu's: folded code that uses it keeps it
    without converting the whole source again; where a fold binds the name, the whole source decides.
    Either way the result is the whole source's."""
    from transplant.skeleton import Skeleton

    body, expected = FOLDED_BODIES[name]
    source = b"import torch\n\n\n" + body + b"\n\nx = torch.cuda.is_available()\n"
    answers = []
    real = Skeleton.folded_uses

    def spy(self, names):
        answers.append(real(self, names))
        return answers[-1]

    with monkeypatch.context() as m:
        m.setattr(Skeleton, "folded_uses", spy)
        fast = engine.convert(source, RULES)
    assert answers == [expected] if expected is not None else answers in ([], [None])
    assert view(fast) == view(whole(source, monkeypatch=monkeypatch))
    assert fast.new is not None and b"torch_npu.npu.is_available()" in fast.new
