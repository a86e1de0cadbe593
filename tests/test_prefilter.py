"""The pre-filter and the work the engine skips never change a result.

* RuleSet.may_match (a file is parsed only if it may contain something a rule acts on) is sound:
  with and without it, every fixture and every generated snippet gives the same result, except
  that a skipped file which does not parse is not reported as unparsable.
* It is selective: ordinary PyTorch and plain Python files are not parsed.
* Inside a parsed file, statements in which no rule can match are folded away before libcst
  parses it (transplant.skeleton), positions come from one early-stopping pass, and the import
  pruner runs only when it has something to remove: the results equal those of converting the
  whole source with every node visited.
"""

from __future__ import annotations

import dataclasses
import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, cached_ruleset
from transplant import engine
from transplant.engine import driver, finish
from transplant.filetypes import FileResult, convert_file, file_kind
from transplant.skeleton import skeleton

OPTION_SETS = [{}, {"specify_device": True, "similar": True}, {"pytorch_version": "2.1"}]


def _rulesets():
    sets = [cached_ruleset(**opts) for opts in OPTION_SETS]
    user = sorted(FIXTURES.rglob("*rules*.json"))
    if user:
        sets.append(cached_ruleset(tuple(str(p) for p in user[:1])))
    return sets


def _fixture_files() -> list[Path]:
    """Whatever fixtures exist when the tests run (other suites keep adding them)."""
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and file_kind(p.name) != "other")


def _view(result: FileResult):
    return result.new, [dataclasses.astuple(r) for r in result.records], result.error


def assert_sound(path: str, data: bytes, rules) -> None:
    filtered = convert_file(path, data, rules, prefilter=True)
    full = convert_file(path, data, rules, prefilter=False)
    if filtered.skipped:
        # nothing a rule does was lost; only "does not parse" may go unreported for such a file
        assert full.new is None, f"{path}: the pre-filter skipped a file a rule changes"
        assert all(r.code == "TP900" for r in full.records), (
            f"{path}: the pre-filter skipped a file with findings {[(r.line, r.code, r.api) for r in full.records]}"
        )
    else:
        assert _view(filtered) == _view(full)


def test_fixtures_exist() -> None:
    assert any(p.suffix == ".py" for p in _fixture_files())


@pytest.mark.parametrize("index", range(len(OPTION_SETS) + 1))
def test_prefilter_sound_on_every_fixture(index: int) -> None:
    sets = _rulesets()
    if index >= len(sets):
        pytest.skip("no user rule fixture")
    rules = sets[index]
    for path in _fixture_files():
        try:
            data = path.read_bytes()
        except OSError:  # removed while we run: fixtures are being edited
            continue
        assert_sound(path.name, data, rules)


# --------------------------------------------------------------------------- generated snippets


def _names(rules) -> dict[str, list[str]]:
    return {
        "qualified": sorted({*rules.rename_q, *rules.module_q, *rules.unsupported_q, *rules.args_q, *rules.device_q}),
        "member": sorted(
            {
                *rules.rename_method,
                *rules.rename_attribute,
                *rules.args_method,
                *rules.unsupported_method,
                *rules.rename_bare,
                *rules.args_bare,
                *rules.device_method,
            }
        ),
        "env": sorted(rules.env),
    }


RULES = cached_ruleset()
NAMES = _names(RULES)
ident = st.text(string.ascii_lowercase, min_size=1, max_size=6).map(lambda s: "v_" + s)
qualified = st.sampled_from(NAMES["qualified"])
member = st.sampled_from(NAMES["member"])
env = st.sampled_from(NAMES["env"])
# commands as Python runs them: spelled, through escapes, in pieces, in prose
command = st.sampled_from(
    [
        "'nvidia-smi'",
        "['nvidia-smi', '-L']",
        "'nvidia\\x2dsmi'",
        "'nvidia\\055smi'",
        "('nvidia-smi',)",
        "'nvidia-' 'smi'",
        "'echo nvidia-smi'",
        "['nvcc']",
        "'npu-smi info'",
    ]
)
literal = st.sampled_from(
    [
        "'cuda'",
        '"cuda:0"',
        "'cpu'",
        "f'cuda:{i}'",
        "'nccl'",
        "'\\x63uda'",
        "'cu\\\nda'",
        "'\\u0063uda:1'",
        "'npu'",
        "None",
        "0",
    ]
)


@st.composite
def use_of_qualified(draw) -> str:
    name = draw(qualified)
    parts = name.split(".")
    cut = draw(st.integers(1, len(parts)))
    head, tail = ".".join(parts[:cut]), parts[cut:]
    alias = draw(ident)
    form = draw(st.sampled_from(["import", "import_as", "from", "from_as", "function_local"]))
    if form == "import" or not tail and form in ("from", "from_as"):
        binding, ref = f"import {parts[0]}", name
    elif form == "import_as":
        binding, ref = f"import {head} as {alias}", ".".join([alias, *tail])
    elif form == "from" and cut > 1:
        binding, ref = f"from {'.'.join(parts[: cut - 1])} import {parts[cut - 1]}", ".".join(parts[cut - 1 :])
    elif form == "from_as" and cut > 1:
        binding, ref = f"from {'.'.join(parts[: cut - 1])} import {parts[cut - 1]} as {alias}", ".".join([alias, *tail])
    else:
        binding, ref = f"import {parts[0]}", name
    use = draw(
        st.sampled_from(
            [
                "{r}",
                "{r}({a})",
                "y = {r}",
                "{r}.attr = {a}",
                "@{r}\ndef g():\n    pass",
                "with {r}({a}):\n    pass",
                "{r}(device={a})",
                "{r}({a}, backend={a})",
            ]
        )
    )
    code = use.format(r=ref, a=draw(literal))
    if form == "function_local":
        return f"def f():\n    {binding}\n    return {ref}\n"
    return f"{binding}\n{code}\n"


@st.composite
def use_of_member(draw) -> str:
    name = draw(member)
    arg = draw(literal)
    return draw(
        st.sampled_from(
            [
                f"x.{name}()\n",
                f"x.{name}\n",
                f"{name}({arg})\n",
                f"obj().{name}({arg})\n",
                f"y = x.{name}(device={arg})\n",
            ]
        )
    )


@st.composite
def other_statement(draw) -> str:
    return draw(
        st.sampled_from(
            [
                "import os\n",
                "import torch\n",
                "import torch.nn as nn\n",
                "x = nn.Linear(3, 4)\n",
                "device = {a}\n",
                "model.to({a})\n",
                "if dev == {a}:\n    pass\n",
                "def h(device={a}):\n    return 1\n",
                'os.environ["{e}"] = "0"\n',
                "d = {{'device': {a}}}\n",
                "dict(os.environ, {e}='1')\n",
                "# {e} cuda in a comment\n",
                '"""docstring about cuda"""\n',
                "z = 1; w = 2\n",
                "class C:\n    def m(self, {i}):\n        return {i}.cuda()\n",
                "print('plain')\n",
                "import subprocess as sp\nsp.run({c})\n",
                "os.system({c})\n",
                "print({c})\n",
            ]
        )
    ).format(a=draw(literal), e=draw(env), i=draw(ident), c=draw(command))


snippet = st.lists(st.one_of(use_of_qualified(), use_of_member(), other_statement()), min_size=1, max_size=6).map(
    "".join
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=snippet, options=st.sampled_from(range(len(OPTION_SETS))))
def test_prefilter_sound_on_generated_snippets(source: str, options: int) -> None:
    assert_sound("snippet.py", source.encode(), cached_ruleset(**OPTION_SETS[options]))


# --------------------------------------------------------------------------- precision


def test_triggers_come_from_rule_data(tmp_path: Path) -> None:
    rule_file = tmp_path / "rules.json"
    rule_file.write_text(
        '{"rules": {"FuncNameModifyRule": [{"old_name": "zlib_gpu.kernel_launch", '
        '"new_name": "zlib_gpu.npu_launch"}]}}',
        encoding="utf-8",
    )
    source = b"import zlib_gpu\nzlib_gpu.kernel_launch(1)\n"
    assert not cached_ruleset().may_match(source)
    with_user = cached_ruleset((str(rule_file),))
    assert with_user.may_match(source)
    assert convert_file("a.py", source, with_user).new == b"import zlib_gpu\nzlib_gpu.npu_launch(1)\n"
    # every part of a qualified name must be there: the last name alone is not enough
    assert not with_user.may_match(b"def kernel_launch():\n    pass\nkernel_launch()\n")


def test_user_shell_commands_are_trigger_words() -> None:
    source = b"import subprocess\nsubprocess.run(['gpustat'])\n"
    assert not cached_ruleset().may_match(source)
    with_user = cached_ruleset((str(FIXTURES / "rules" / "commands_user.json"),))
    assert with_user.may_match(source) and b"gpustat" in with_user.command_triggers
    result = convert_file("gpu.py", source, with_user)
    assert not result.skipped and result.new == b"import subprocess\nsubprocess.run(['npu-smi', 'info'])\n"


def test_a_command_word_inside_a_name_is_no_trigger() -> None:
    # "vllm" is a command word (ShellCommandRule); shellcommands.py never takes it for a command
    # before a word character, ".", "+" or "-", so such a file is neither parsed nor its statement kept
    rules = cached_ruleset()
    assert b"vllm" in rules.command_triggers and b"vllm" not in rules.triggers
    for quiet in (b"use_vllm_engine = True\n", b"x = args.vllm_tp + 1\n", b"enable_vllm_is_correction: bool = False\n"):
        assert not rules.may_match(quiet), quiet
        assert rules.inert_words(quiet, {}) is not None, quiet
    for runs in (
        b"import os\nos.system('vllm serve m')\n",
        b"import subprocess\nsubprocess.run(['vllm', 'serve', 'm'])\n",
        b"cmd = 'sudo vllm'\n",
        b"x = 1  # then: vllm\n",
    ):
        assert rules.may_match(runs), runs
    result = convert_file("serve.py", b"import os\nuse_vllm = True\nos.system('vllm serve m')\n", rules)
    assert any(r.api == "vllm" for r in result.records)


@pytest.mark.parametrize(
    "source",
    [
        b"import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        b"        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
        b"        return torch.relu(self.fc(x))\n",
        b"import json\nimport re\n\nPATTERN = re.compile(r'\\d+')\n\ndef load(path):\n"
        b"    with open(path) as fh:\n        return json.load(fh)\n",
        b"import torch\nopt = torch.optim.SGD(params, lr=0.1)\nx = torch.zeros(3, device=dev)\n",
    ],
)
def test_ordinary_files_are_not_parsed(source: bytes) -> None:
    rules = cached_ruleset()
    assert not rules.may_match(source)
    assert convert_file("m.py", source, rules).skipped


@pytest.mark.parametrize(
    "source",
    [
        b"x.to('\\x63uda')\n",  # escapes can spell "cuda" without its bytes
        b"x.to('\\143uda')\n",
        b"d = 'cu\\\nda'\n",
        b"# -*- coding: cp037 -*-\nx = 1\n",
        b"import torch.cuda as tc\ntc.synchronize()\n",
        b"import torch\ntorch.compile(model)\n",  # reported as unsupported on NPU
        b"os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n",
        b"import os\nos.system('nvidia-smi')\n",  # commands (ShellCommandRule) are trigger words
        b"import subprocess\nsubprocess.run(['nvcc', '--version'])\n",
        b"import os\nos.system('nvidia\\x2dsmi')\n",  # "-" spelled by an escape
        b"import os\nos.system('nvidia\\u002dsmi')\n",
    ],
)
def test_files_that_may_match_are_parsed(source: bytes) -> None:
    assert cached_ruleset().may_match(source)


# --------------------------------------------------------------------------- skipped statements


def _reference_convert(source: bytes, rules, monkeypatch: pytest.MonkeyPatch) -> engine.Conversion:
    """The engine with every shortcut off: all statements visited, the module's code generated
    in full for positions and comparison, the import pruner always run when it may be."""
    full_once = driver._convert_once
    with monkeypatch.context() as m:
        m.setattr(driver, "skeleton", lambda *args: None)
        m.setattr(
            driver,
            "_convert_once",
            # (the analyses' facts are computed again, from the module's code)
            lambda module, rules, excluded, skip, skel=None, source=None, stars=driver.NO_STARS, guards=None, facts=None: (
                full_once(module, rules, excluded, skip, None, None, stars=stars, guards=guards)
            ),
        )
        m.setattr(finish, "imports_torch_cuda", lambda bindings: True)  # (the pruner runs in finish.py)
        return engine.convert(source, rules)


def _python_sources() -> list[tuple[str, bytes]]:
    out = []
    for path in _fixture_files():
        if file_kind(path.name) == "python":
            try:
                out.append((path.name, path.read_bytes()))
            except OSError:
                continue
    return out


def test_shortcuts_equal_full_traversal_on_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = 0
    for rules in _rulesets():
        for name, data in _python_sources():
            try:
                fast = engine.convert(data, rules)
            except engine.SourceError:
                continue
            slow = _reference_convert(data, rules, monkeypatch)
            assert (fast.new, [dataclasses.astuple(r) for r in fast.records]) == (
                slow.new,
                [dataclasses.astuple(r) for r in slow.records],
            ), name
            checked += 1
    assert checked > 0


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(source=snippet)
def test_shortcuts_equal_full_traversal_on_snippets(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = source.encode()
    try:
        fast = engine.convert(data, RULES)
    except engine.SourceError:
        return
    slow = _reference_convert(data, RULES, monkeypatch)
    assert (fast.new, [dataclasses.astuple(r) for r in fast.records]) == (
        slow.new,
        [dataclasses.astuple(r) for r in slow.records],
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        # an added import that must come before its first use follows the right one of two equal lines,
        # and the skeleton (which folds those lines into one marker) gives the same bytes and records
        (
            b"x.chalf\nx.chalf\ndevice = 'cuda'\nimport torch\ntorch.cuda.synchronize()\n",
            b"x.chalf\nx.chalf\nimport torch_npu\ndevice = 'npu'\nimport torch\ntorch_npu.npu.synchronize()\n",
        ),
        (
            b"step()\nstep()\nstep()\ndevice = 'cuda:0'\nimport torch\ntorch.cuda.synchronize()\n",
            b"step()\nstep()\nstep()\nimport torch_npu\ndevice = 'npu:0'\nimport torch\ntorch_npu.npu.synchronize()\n",
        ),
    ],
)
def test_an_added_import_follows_the_right_one_of_equal_lines(
    source: bytes, expected: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = engine.convert(source, RULES)
    slow = _reference_convert(source, RULES, monkeypatch)
    assert fast.new == slow.new == expected
    assert [dataclasses.astuple(r) for r in fast.records] == [dataclasses.astuple(r) for r in slow.records]


def test_an_import_below_folded_code_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # the skeleton folds the function into one line: the first use of torch_npu and the file's own
    # ``import torch_npu`` must be compared in the same lines (found by the property test above)
    source = (
        b"import torch\n\ndef g():\n    a = 1\n    return a\n\nimport torch_npu\nbuf = torch.empty(2, device='cuda')\n"
    )
    fast = engine.convert(source, RULES)
    slow = _reference_convert(source, RULES, monkeypatch)
    assert fast.new == slow.new == source.replace(b"'cuda'", b"'npu'")
    assert [dataclasses.astuple(r) for r in fast.records] == [dataclasses.astuple(r) for r in slow.records]


def test_unvisited_statement_keeps_an_import_in_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rule_file = tmp_path / "rules.json"
    rule_file.write_text(
        '{"rules": {"FuncNameModifyRule": [{"old_name": "zlib_gpu.launch", "new_name": "npulib.launch"}]}}',
        encoding="utf-8",
    )
    rules = cached_ruleset((str(rule_file),))
    # the one visited use of "z" is rewritten away; "def b" is folded away, and still uses "z"
    source = b"import zlib_gpu as z\n\n\ndef a():\n    z.launch()\n\n\ndef b():\n    return z.other\n"
    skel = skeleton(source, rules)
    assert skel is not None and [fold.split(b"(")[0] for fold in skel.folds] == [b"def b"]
    out = engine.convert(source, rules).new
    assert b"import zlib_gpu as z\n" in out and b"npulib.launch()" in out
    assert out == _reference_convert(source, rules, monkeypatch).new
    monkeypatch.setattr(driver, "_maybe_used_in_folds", lambda unused, skel: set())
    assert b"import zlib_gpu as z\n" not in engine.convert(source, rules).new  # what the check prevents
    monkeypatch.undo()

    def whole_parse(*args):
        raise AssertionError("the whole source was parsed")

    monkeypatch.setattr(driver, "parse", whole_parse)  # settled from CPython's tree of the folds, not again whole
    assert engine.convert(source, rules).new == out


@pytest.mark.parametrize(
    "source, parsed",
    [
        (b"y = x.to_dense()\n", True),
        (b"y = (x\n     .to_dense  # a comment\n     ())\n", True),
        (b"y = x.to_dense \\\n    ()\n", True),
        (b'{"source": "y = (x.\\nto_dense\\n())"}', True),  # a notebook's JSON escapes
        (b"layout = x.to_dense\n", False),  # methods the NPU lacks are reported on calls only
        (b"model = build_model()\nmodel.train(mode=True)\n", False),  # "mode" is no trigger in "model" or "mode="
        (b"def my_to_dense():\n    pass\nmy_to_dense()\n", False),
    ],
)
def test_unsupported_methods_trigger_on_calls(source: bytes, parsed: bool) -> None:
    assert cached_ruleset().may_match(source) is parsed


def test_notebook_line_breaks_do_not_hide_words() -> None:
    # in JSON, "\ncudnn" reads as the word "ncudnn"; the cell still sets torch.backends.cudnn.benchmark
    cell = "from torch.backends import (\ncudnn,\n)\ncudnn.benchmark = True\n"
    data = json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": cell}],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ).encode()
    assert_sound("nb.ipynb", data, cached_ruleset())
    assert [r.code for r in convert_file("nb.ipynb", data, cached_ruleset()).records] == ["TP203"]
