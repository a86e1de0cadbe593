"""Golden conversions: every ``tests/fixtures/rules/NAME.in.py`` converts to ``NAME.out.py`` exactly.

Fixture conventions (kept deliberately small):

* A first line ``# transplant-test: OPTIONS`` selects options: ``-s`` (specify device), ``-sim``
  (similar APIs), ``-r FILE`` (a user rule file next to the fixture, may be repeated) and
  ``--pytorch-version V`` and ``--torch-npu R`` (default: PyTorch 2.8 with torch_npu 26.0). The line is a comment, so it is the same in the output.
* A line of the input that ends with ``# expect: CODE[, CODE...]`` must get a finding (a record that
  is not a change) with each of those codes on that line; findings on lines without such a comment
  fail the test, so every report a fixture produces is declared where it happens.
* Converting the expected output again must change nothing (idempotence).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from conftest import FIXTURES, cached_ruleset
from goldens import check_bytes
from transplant.engine import convert

RULE_FIXTURES = FIXTURES / "rules"
OPTIONS_LINE = re.compile(rb"^#\s*transplant-test:(.*)$")
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)\s*$")
PAIRS = sorted(RULE_FIXTURES.glob("*.in.py"))


def options_of(source: bytes):
    first = source.split(b"\n", 1)[0].rstrip(b"\r")
    match = OPTIONS_LINE.match(first)
    words = shlex.split(match.group(1).decode()) if match else []
    user: list[str] = []
    specify = similar = False
    version = "2.8"
    release = None
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-s":
            specify = True
        elif word == "-sim":
            similar = True
        elif word == "-r":
            i += 1
            user.append(str(RULE_FIXTURES / words[i]))
        elif word == "--pytorch-version":
            i += 1
            version = words[i]
        elif word == "--torch-npu":
            i += 1
            release = words[i]
        else:
            raise ValueError(f"unknown fixture option {word!r}")
        i += 1
    return cached_ruleset(tuple(user), specify, similar, version, release)


def expected_findings(source: bytes) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for number, line in enumerate(source.decode("utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            out[number] = {code.strip() for code in match.group(1).split(",") if code.strip()}
    return out


def test_fixture_folder_is_populated():
    names = {p.name[: -len(".in.py")] for p in PAIRS}
    outs = {p.name[: -len(".out.py")] for p in RULE_FIXTURES.glob("*.out.py")}
    assert len(names) >= 20
    assert names == outs, f"unpaired fixtures: {sorted(names ^ outs)}"


@pytest.mark.parametrize("path", PAIRS, ids=[p.name[: -len(".in.py")] for p in PAIRS])
def test_golden(path: Path):
    source = path.read_bytes()
    golden = path.with_name(path.name.replace(".in.py", ".out.py"))
    rules = options_of(source)
    conv = convert(source, rules)
    got = source if conv.new is None else conv.new
    check_bytes(golden, got)
    expected = golden.read_bytes()
    # a change is reported when and only when the bytes change
    assert (conv.new is not None) == (source != expected)
    assert bool(conv.changes) == (source != expected)
    for record in conv.records:
        assert 1 <= record.line <= record.end_line
        assert record.code.startswith("TP")

    findings: dict[int, set[str]] = {}
    for record in conv.findings:
        findings.setdefault(record.line, set()).add(record.code)
    assert findings == expected_findings(source)


@pytest.mark.parametrize("path", PAIRS, ids=[p.name[: -len(".in.py")] for p in PAIRS])
def test_idempotent(path: Path):
    expected = path.with_name(path.name.replace(".in.py", ".out.py")).read_bytes()
    rules = options_of(path.read_bytes())
    again = convert(expected, rules)
    assert again.new is None, "converting the converted file changed it again"
    assert again.changes == []


@pytest.mark.parametrize("path", PAIRS, ids=[p.name[: -len(".in.py")] for p in PAIRS])
def test_golden_with_crlf_line_endings(path: Path):
    """The same conversions on a Windows-style copy: the output is the expected one, CRLF throughout."""
    source = path.read_bytes().replace(b"\n", b"\r\n")
    expected = path.with_name(path.name.replace(".in.py", ".out.py")).read_bytes().replace(b"\n", b"\r\n")
    conv = convert(source, options_of(source))
    assert (source if conv.new is None else conv.new) == expected
