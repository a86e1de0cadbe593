"""The compiled-code cache of dataclass methods (transplant/codecache.py): exact, and harmless when
it is missing, corrupt, stale, unwritable or turned off."""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transplant import codecache
from transplant.codecache import cache_file, compiled_dataclasses

REPO = Path(__file__).resolve().parents[1]
SOURCE = b'import torch\nx = torch.randn(2, device="cuda:0")\ntorch.cuda.synchronize()\n'
# A fresh interpreter: import the engine (libcst and all), then show what a node and a conversion
# look like, and how many texts dataclasses compiled (the cache's misses).
PROBE = f"""
import builtins, dataclasses, sys
compiled = []
real_compile = builtins.compile
def counting_compile(source, *args, **kwargs):
    if isinstance(source, str) and source.startswith("def __create_fn__"):
        compiled.append(source)
    return real_compile(source, *args, **kwargs)
builtins.compile = counting_compile
import transplant.engine as engine
import libcst
builtins.compile = real_compile
from transplant.rules import load_ruleset
node = libcst.parse_module("a = f(1, b=[2])\\n")
print(repr(node))
print(node == libcst.parse_module("a = f(1, b=[2])\\n"), node.deep_equals(libcst.parse_module("a = f(1, b=[2])\\n")))
result = engine.convert({SOURCE!r}, load_ruleset())
print(result.new.decode())
print([(r.line, r.col, r.code) for r in result.records])
print("compiled", len(compiled), file=sys.stderr)
"""


def probe(cache: Path | None, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRANSPLANT_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    if cache is None:
        environ["TRANSPLANT_NO_CACHE"] = "1"
    else:
        environ["TRANSPLANT_CACHE_DIR"] = str(cache)
    environ.update(env)
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=environ, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def compiled_count(proc: subprocess.CompletedProcess) -> int:
    return int(proc.stderr.rsplit("compiled", 1)[1])


@pytest.fixture(scope="module")
def uncached() -> subprocess.CompletedProcess:
    return probe(None)


def test_a_second_start_compiles_nothing_and_behaves_the_same(tmp_path, uncached):
    first = probe(tmp_path)
    assert compiled_count(first) > 300  # libcst's node classes and the engine's records
    assert cache_file(str(tmp_path)) in [str(p) for p in tmp_path.iterdir()]
    second = probe(tmp_path)
    assert compiled_count(second) == 0
    assert first.stdout == second.stdout == uncached.stdout
    assert "False True" in second.stdout and "torch_npu.npu.synchronize()" in second.stdout


def test_every_entry_is_what_compiling_its_text_gives(tmp_path):
    probe(tmp_path)
    version, table = marshal.loads(Path(cache_file(str(tmp_path))).read_bytes())
    assert version == sys.version
    assert table and all(compile(text, "<string>", "exec", dont_inherit=True) == code for text, code in table.items())


def test_an_entry_of_another_interpreter_build_is_never_used(tmp_path, uncached):
    probe(tmp_path)
    path = Path(cache_file(str(tmp_path)))
    _, table = marshal.loads(path.read_bytes())
    poison = compile("raise RuntimeError('poisoned cache')", "<string>", "exec")
    path.write_bytes(marshal.dumps(("another Python", {text: poison for text in table})))
    again = probe(tmp_path)
    assert again.stdout == uncached.stdout
    assert marshal.loads(path.read_bytes())[0] == sys.version  # rewritten for this interpreter


@pytest.mark.parametrize("content", [b"", b"not marshal data", marshal.dumps([1, 2, 3]), marshal.dumps(("x",))])
def test_a_corrupt_cache_is_ignored_and_replaced(tmp_path, uncached, content):
    path = Path(cache_file(str(tmp_path)))
    path.write_bytes(content)
    again = probe(tmp_path)
    assert again.stdout == uncached.stdout and compiled_count(again) > 300
    assert compiled_count(probe(tmp_path)) == 0


def test_an_unwritable_cache_place_costs_nothing_but_time(tmp_path, uncached):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    proc = probe(blocker / "cache")
    assert proc.stdout == uncached.stdout
    assert proc.stderr.startswith("compiled") and blocker.read_text() == "not a folder"


def test_turned_off_writes_nothing(tmp_path, uncached):
    proc = probe(tmp_path, TRANSPLANT_NO_CACHE="1")
    assert proc.stdout == uncached.stdout and list(tmp_path.iterdir()) == []


def test_default_place_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSPLANT_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRANSPLANT_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert codecache.cache_dir() == str(tmp_path / "transplant")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/place")  # not a place to trust: the home's .cache
    assert codecache.cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "transplant")
    monkeypatch.setenv("TRANSPLANT_NO_CACHE", "1")
    assert codecache.cache_dir() is None


def test_classes_made_inside_the_block_behave_as_dataclasses_make_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPLANT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRANSPLANT_NO_CACHE", raising=False)
    for _ in range(2):  # the first round compiles and saves, the second runs what was saved
        with compiled_dataclasses():

            @dataclasses.dataclass(frozen=True, order=True)
            class Point:
                x: int
                label: str = "p"
                tags: tuple = dataclasses.field(default=())

        assert "exec" not in vars(dataclasses)  # the hook is gone after the block
        a, b = Point(1), Point(2, "q", ("t",))
        assert a == Point(1, "p", ()) and a < b and hash(a) == hash(Point(1))
        assert repr(b).endswith("Point(x=2, label='q', tags=('t',))")
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.x = 3  # type: ignore[misc]
    _, table = marshal.loads(Path(cache_file(str(tmp_path))).read_bytes())
    assert any("__init__" in text and "label" in text for text in table)


def test_a_hook_already_in_place_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPLANT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRANSPLANT_NO_CACHE", raising=False)
    with compiled_dataclasses():
        outer = dataclasses.exec
        with compiled_dataclasses():
            assert dataclasses.exec is outer
        assert dataclasses.exec is outer

        @dataclasses.dataclass
        class Inner:
            a: int

    assert Inner(3).a == 3 and "exec" not in vars(dataclasses)


def test_entries_nothing_makes_any_more_are_dropped_when_they_pile_up(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSPLANT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRANSPLANT_NO_CACHE", raising=False)
    path = Path(cache_file(str(tmp_path)))
    stale = {f"x = {i}\n": compile(f"x = {i}\n", "<string>", "exec") for i in range(codecache.STALE_ALLOWANCE + 10)}
    path.write_bytes(marshal.dumps((sys.version, stale)))
    with compiled_dataclasses():

        @dataclasses.dataclass
        class Fresh:
            value: int

    _, table = marshal.loads(path.read_bytes())
    assert Fresh(1).value == 1
    assert table and not set(table) & set(stale)  # only this run's texts were kept
    few = dict(list(stale.items())[:10])
    path.write_bytes(marshal.dumps((sys.version, few)))
    with compiled_dataclasses():

        @dataclasses.dataclass
        class Other:
            name: str

    _, table = marshal.loads(path.read_bytes())
    assert set(few) <= set(table)  # a few entries of other runs stay
