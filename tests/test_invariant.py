"""The invariant of issue 11: after conversion, every tie to CUDA left in a Python file is named by a
finding on its line. Checked over every Python fixture and on generated programs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from residue import patched_targets, ties
from unbound import unbound
from test_fixtures import options_of
from transplant.engine import convert
from transplant.reports.linemap import new_lines

SOURCES = sorted(
    p
    for p in FIXTURES.rglob("*.py")
    if not p.name.endswith(".out.py") and "_msft" not in str(p) and "expected" not in p.parts
)


SHIM = "another backend's compatibility layer"


def unreported(source: bytes) -> dict[int, str]:
    """The ties left in the conversion of ``source`` with no finding on their line."""
    rules = options_of(source)
    conv = convert(source, rules)
    new = conv.new if conv.new is not None else source
    if any(r.message.startswith(SHIM) for r in conv.findings):
        return {}  # another backend's layer: left whole, and its one note says so
    mapping = new_lines(source, new, [r.line for r in conv.findings])
    said = {mapping.get(r.line, r.line) for r in conv.findings}
    left = {line: what for line, what in ties(new, rules.known_modules()).items() if line not in said}
    left.update({line: what for line, what in stale_names(new, rules).items() if line not in said})
    return left


LOOKUPS = ("patch", "setattr", "delattr", "import_module")


def stale_names(source: bytes, rules) -> dict[int, str]:
    """line -> a string in ``source`` that names an API the rules rename, where a name is looked up:
    the first argument of patch / monkeypatch.setattr / import_module, or a constant assigned."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        values = []
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in LOOKUPS and not (name in ("setattr", "delattr") and isinstance(func, ast.Name)):
                values.append(node.args[0])
        elif isinstance(node, ast.Assign):
            values.append(node.value)
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and "." in value.value:
                renamed = rules.new_name(value.value)
                if renamed is not None and renamed[0] != value.value:
                    found.setdefault(value.lineno, value.value)
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_tie_to_cuda_is_left_silent(path: Path):
    source = path.read_bytes()
    try:
        compile(source, str(path), "exec")
    except SyntaxError:
        pytest.skip("not Python 3 source (a fixture of the fault suite)")
    assert unreported(source) == {}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_assignment_target_is_rewritten(path: Path):
    """An attribute of torch.cuda (or of torch.Tensor / nn.Module) being assigned or deleted is a
    patch, not a use: the converted file assigns the same targets."""
    source = path.read_bytes()
    try:
        before = patched_targets(source)
    except SyntaxError:
        pytest.skip("not Python 3 source (a fixture of the fault suite)")
    conv = convert(source, options_of(source))
    assert patched_targets(conv.new if conv.new is not None else source) == before


PIECES = [
    "tc.{name} = fake_{name}",
    "setattr(torch.cuda, '{name}', None)",
    "del torch.cuda.{name}",
    "patcher = mock.patch('torch.cuda.{name}')",
    "monkeypatch.setattr('torch.cuda.{name}', None)",
    "m = importlib.import_module('torch.cuda.amp')",
    "f = getattr(tc, '{name}')",
    "TARGET = 'torch.cuda.{name}'",
    "x = torch.cuda.{name}()",
    "y = tc.{name}(1)",
    "m = model.cuda()",
    "d = torch.device('cuda:{n}')",
    "dev = 'cuda'\nz = torch.zeros(2).to(dev)",
    "dist.init_process_group(backend='nccl')",
    "b = getattr(args, 'dist_backend', 'nccl')",
    "out = flash_attn_func(q, k, v)",
    "s = amp.scale_loss(loss, opt)",
    "w = cupy.zeros(3)",
    "n = torch.cuda",
    "sp.run(['nvidia-smi'])",
    "sp.run(['nvidia-smi', '-i', '{n}'], check=True)",
    "info = sp.check_output('nvidia-smi', shell=True)",
    "os.system('nvidia-smi -L && nvcc --version')",
    "os.system(f'nvidia-smi -i {{i}}')",
    "print('nvidia-smi -L')",
]
HEADER = (
    "import os\nimport importlib\nfrom unittest import mock\nimport torch\nimport torch.cuda as tc\nimport torch.distributed as dist\nimport cupy\n"
    "import subprocess as sp\nfrom flash_attn import flash_attn_func\nfrom apex import amp\n"
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(PIECES),
            st.sampled_from(["synchronize", "some_new_api", "memory_stats", "_private"]),
            st.integers(0, 7),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_generated_programs_leave_nothing_silent(pieces):
    body = "\n".join(p.format(name=name, n=n) for p, name, n in pieces)
    assert unreported((HEADER + body + "\n").encode()) == {}


COMMAND_CALLS = [
    "os.system({s})",
    "sp.run({l})",
    "sp.run({s}, shell=True)",
    "run({l}, capture_output=True)",
    "sp.check_output({l})",
    "sp.call(shlex.split({s}))",
    "sp.Popen({l}, stdout=sp.PIPE)",
    "run({s})",
    "print({s})",
    "log.info({l})",
]
COMMAND_STRINGS = [
    "'nvidia-smi'",
    "'nvidia-smi -L'",
    "'nvcc -V'",
    "'echo nvidia-smi'",
    "f'nvidia-smi -i {{i}}'",
    "'ls; nvidia-smi'",
    "'nvidia-smi | head'",
    "'my-nvidia-smi'",
]
COMMAND_LISTS = [
    "['nvidia-smi']",
    "['nvidia-smi', '-L']",
    "('nvidia-smi',)",
    "['echo', 'nvidia-smi']",
    "['nvcc']",
    "['/usr/bin/nvidia-smi']",
]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(COMMAND_CALLS), st.sampled_from(COMMAND_STRINGS), st.sampled_from(COMMAND_LISTS)),
        min_size=1,
        max_size=6,
    )
)
def test_generated_command_calls_are_converted_once_and_never_silent(calls):
    lines = [call.format(s=s, l=l) for call, s, l in calls]
    source = (
        "import os\nimport shlex\nimport subprocess as sp\nfrom subprocess import run\n" + "\n".join(lines) + "\n"
    ).encode()
    assert unreported(source) == {}
    conv = convert(source, options_of(source))
    new = conv.new if conv.new is not None else source
    again = convert(new, options_of(new))
    assert again.new is None and not [r for r in again.records if r.is_change]
    # prose is no command: a print or a log line gets nothing
    quiet = {i + 5 for i, line in enumerate(lines) if line.startswith(("print(", "log."))}
    assert not [r for r in conv.records if r.line in quiet]
    assert all(new.splitlines()[n - 1] == source.splitlines()[n - 1] for n in quiet)


# ---- issue 18, pattern 3: every name the conversion writes is bound where it runs (unbound.py)


def unbound_after(source: bytes) -> dict[int, str]:
    conv = convert(source, options_of(source))
    return {} if conv.new is None else unbound(conv.new, source)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_no_written_name_is_unbound(path: Path):
    source = path.read_bytes()
    try:
        compile(source, str(path), "exec")
    except SyntaxError:
        pytest.skip("not Python 3 source (a fixture of the fault suite)")
    assert unbound_after(source) == {}


def test_the_unbound_reader_sees_what_it_should():
    # a reader that finds nothing proves nothing: it must see each kind of unbound use
    assert unbound(b"import torch\ndef f():\n    import torch_npu\ndef g():\n    torch_npu.npu.synchronize()\n") == {
        5: "torch_npu"
    }
    assert unbound(b"torch_npu.npu.synchronize()\nimport torch_npu\n") == {1: "torch_npu"}
    assert unbound(b"if c:\n    import torch_npu\ntorch_npu.npu.init()\n") == {3: "torch_npu"}
    assert unbound(b"if c:\n    import torch_npu\n    torch_npu.npu.init()\n") == {}
    assert (
        unbound(b"try:\n    import torch_npu\nexcept ImportError:\n    pass\ndef f():\n    torch_npu.npu.init()\n")
        == {}
    )


SCOPED_IMPORTS = ["import torch_npu", "import torch", "from torch.cuda import amp", "import torch.cuda as tc"]
SCOPED_USES = [
    "torch.cuda.synchronize()",
    "x = torch.zeros(1).cuda()",
    "tc.empty_cache()",
    "amp.GradScaler()",
    "y = torch.tensor(1, device='cuda')",
    "z = torch.cuda.OutOfMemoryError",
]
WRAPPERS = [
    "{s}",
    "def f{i}():\n    {s}",
    "class C{i}:\n    def m(self):\n        {s}",
    "if flag:\n    {s}",
    "try:\n    {s}\nexcept ImportError:\n    pass",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(SCOPED_IMPORTS + SCOPED_USES), st.sampled_from(WRAPPERS)), min_size=1, max_size=7
    )
)
def test_generated_scopes_leave_no_written_name_unbound(parts):
    body = "\n".join(w.format(s=s, i=i) for i, (s, w) in enumerate(parts))
    source = ("import torch\nflag = True\n" + body + "\n").encode()
    assume(unbound(source) == {})  # the program itself binds what it uses
    assert unbound_after(source) == {}
