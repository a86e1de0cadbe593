"""Rules that carry their own examples, and ``transplant test-rules`` that checks them.

A rule entry may have ``examples``: ``valid`` snippets must come out unchanged with no record of
the rule; ``invalid`` ones must convert to the given ``output`` and/or get a record with the given
``code`` (of the rule's records, when it has any), and the rule must act on them: a record of the
rule, or an ``output`` that differs from the source (the engine records an import it rewrites as
its own). An example is converted as a file named ``file``
(default ``example.py``: a shell script, Dockerfile or notebook example names one) with the rule
set the rule belongs to: the built-in rules for a shipped file, the built-in rules plus the file
(as ``-r`` loads it) for any other; with the rule's ``option`` switched on, at the example's
``pytorch_version`` (default: the converter's) and ``torch_npu`` release (default: the newest that ships it). The schema is rules/schema.json (``$defs.examples``).

Everything is reported as one line per failing example, then a summary; the exit status is 1 when
an example fails, 2 when a rule file cannot be read or is invalid.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

from .filetypes import convert_file
from .records import Record
from .rules import (
    DEFAULT_PYTORCH_VERSION,
    PYTORCH_VERSIONS,
    RuleError,
    RuleSet,
    builtin_rule_files,
    load_ruleset,
    read_rule_file,
)
from .resources import rules_dir

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Example:
    path: Path  # the rule file
    kind: str
    index: int
    entry: dict[str, Any]
    valid: bool
    number: int  # its place in the list of valid or invalid examples
    data: dict[str, Any]  # source, file, pytorch_version; for an invalid one output and/or code

    @property
    def where(self) -> str:
        return f"{self.path}: rules.{self.kind}[{self.index}].examples.{'valid' if self.valid else 'invalid'}[{self.number}]"

    @property
    def origin(self) -> str:
        """What the records of this rule carry as ``rule`` (rules.load_ruleset)."""
        return f"{self.path.name}:{self.kind}[{self.index}]"


def shipped_rule_files() -> list[Path]:
    """Every built-in rule file, the per-version lists included."""
    base = rules_dir()
    return sorted(p for p in base.glob("*.json") if p.name != "schema.json") + sorted(
        (base / "npu_support").glob("*.json")
    )


def _builtin_version(path: Path) -> str | None:
    """The PyTorch version a shipped file is loaded with ('' for files of every version), None for
    a file that is not shipped."""
    resolved = path.resolve()
    for version in PYTORCH_VERSIONS:
        if resolved in {p.resolve() for p in builtin_rule_files(version)}:
            return "" if resolved.parent == rules_dir().resolve() else version
    return None


def examples(path: Path) -> Iterator[Example]:
    """The examples of one rule file (checked against the schema, unless it is a shipped one)."""
    data = read_rule_file(path, validate=_builtin_version(path) is None)
    for kind, entries in data.get("rules", {}).items():
        for index, entry in enumerate(entries):
            given = entry.get("examples") or {}
            for valid in (True, False):
                for number, example in enumerate(given.get("valid" if valid else "invalid", [])):
                    example = {"source": example} if isinstance(example, str) else example
                    yield Example(path, kind, index, entry, valid, number, example)


@lru_cache(maxsize=None)
def _ruleset(user_file: str, option: str, version: str | None, release: str | None) -> RuleSet:
    return load_ruleset(
        [Path(user_file)] if user_file else [],
        specify_device=option == "specify_device",
        similar=option == "similar",
        pytorch_version=version,
        torch_npu=release,
    )


def ruleset_for(example: Example) -> RuleSet:
    shipped = _builtin_version(example.path)
    release = example.data.get("torch_npu")
    # a release alone chooses its own PyTorch version (rule_versions.resolve_stack)
    version = example.data.get("pytorch_version") or shipped or (None if release else DEFAULT_PYTORCH_VERSION)
    if shipped and version != shipped:
        raise RuleError(f"{example.where}: this file holds for PyTorch {shipped} only, not {version}")
    user_file = "" if shipped is not None else str(example.path)
    return _ruleset(user_file, example.entry.get("option", ""), version, release)


def check(example: Example) -> str | None:
    """None when the example holds, else what is wrong (one line, without the place)."""
    source = example.data["source"]
    result = convert_file(example.data.get("file", "example.py"), source.encode("utf-8"), ruleset_for(example))
    if result.error:
        return f"not converted: {result.error}"
    mine = [r for r in result.records if r.rule == example.origin]
    got = source if result.new is None else result.new.decode("utf-8")
    if example.valid:
        if got != source:
            return f"a valid example must stay as it is; {_difference(got, source)}"
        if mine:
            return f"a valid example must not be reported by the rule; it gets {_describe(mine[0])}"
        return None
    output = example.data.get("output")
    if output is not None and got != output:
        return _difference(got, output)
    # the rule acts: a record of it, or (an import rewrite is recorded as the engine's) the output it shows
    if not mine and (output is None or output == source):
        others = ", ".join(sorted({r.code for r in result.records})) or "nothing"
        return f"the rule does nothing on this example (all records: {others})"
    code = example.data.get("code")
    if code is not None and code not in {r.code for r in mine or result.records}:
        return f"expected {code}, got {', '.join(_describe(r) for r in mine or result.records) or 'no record'}"
    return None


def _describe(record: Record) -> str:
    return f"{record.code} at line {record.line} ({' '.join(record.shown_message.split())[:80]})"


def _difference(got: str, want: str) -> str:
    """Where two texts first differ, on one line."""
    got_lines, want_lines = got.splitlines(keepends=True), want.splitlines(keepends=True)
    for number, (g, w) in enumerate(zip(got_lines, want_lines), start=1):
        if g != w:
            return f"line {number} is {g!r}, expected {w!r}"
    if len(got_lines) != len(want_lines):
        number = min(len(got_lines), len(want_lines)) + 1
        extra = got_lines[number - 1] if len(got_lines) > len(want_lines) else None
        return (
            f"the output has an extra line {number}: {extra!r}"
            if extra is not None
            else f"the output ends before line {number}: {want_lines[number - 1]!r}"
        )
    return "the texts differ"  # (not reached: equal lines make equal texts)


@dataclass
class Outcome:
    files: int = 0
    rules: int = 0
    passed: int = 0
    failures: list[str] = field(default_factory=list)  # one line each

    def summary(self) -> str:
        failed = len(self.failures)
        total = self.passed + failed
        if not total:
            return f"transplant test-rules: no examples in {self.files} rule file{'s' if self.files != 1 else ''}"
        return (
            f"transplant test-rules: {total} example{'s' if total != 1 else ''} of {self.rules} "
            f"rule{'s' if self.rules != 1 else ''} in {self.files} file{'s' if self.files != 1 else ''}: "
            f"{self.passed} passed, {failed} failed"
        )


def run(paths: Sequence[Path]) -> Outcome:
    """Check every example of the files (raises RuleError for a file that cannot be used)."""
    outcome = Outcome()
    rules: set[tuple[str, str, int]] = set()
    for path in paths:
        outcome.files += 1
        for example in examples(path):
            rules.add((str(path), example.kind, example.index))
            problem = check(example)
            if problem is None:
                outcome.passed += 1
            else:
                outcome.failures.append(f"{example.where}: {problem}")
    outcome.rules = len(rules)
    return outcome


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transplant test-rules",
        description='Check the examples rule files carry ("examples": valid snippets stay unchanged, invalid ones '
        "convert to their output or get their code). Exit status 1 when an example fails.",
    )
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="rule files (default: the built-in rules)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    paths = list(args.paths) or shipped_rule_files()
    try:
        outcome = run(paths)
    except RuleError as exc:
        print(f"transplant test-rules: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for failure in outcome.failures:
        print(failure)
    print(outcome.summary())
    return EXIT_FAILED if outcome.failures else EXIT_OK
