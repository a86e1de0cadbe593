"""What a CUDA test is *for*: tests that must stay CUDA tests, and CUDA capability probes.

Issue 18 (patterns 1, 6, 8) and issue 24 (pattern 3). A device test whose branch reaches CUDA-only
code (a runtime CUDA build, a compiled extension, a Triton kernel, a CUDA-only library or tool, a
CUDA capability read as a number) keeps testing for CUDA, so NPU tensors take the portable path;
rewriting it to "npu" would send them into the CUDA code. The same for ``assert x.is_cuda``
preconditions, ``skipif`` marks of tests of CUDA kernels, and flags (``cuda =
torch.cuda.is_available()``) whose uses choose CUDA-only tools.

``analyse`` runs before the engine's traversal, on CPython's ``ast`` of the whole source (the
engine's skeleton folds away the bodies it needs), only when the source has a word that CUDA-only
code needs (markers.py), or, for a file on disk, imports one of the project's modules (crossfile.py). It gives a
:class:`Guards`: the spans the engine must leave as they are (driver.py drops the rewrites placed
inside them and converts again) and the findings (TP240-TP243), merged into the conversion by
``Guards.apply``. Modules: sites.py (device tests and what they choose), reach.py (CUDA-only code
and what a region reaches), crossfile.py (what the project's other modules reach), markers.py (the
words CUDA-only code needs), probes.py (capability probes), unreached.py (the code a kept test
chooses: an NPU run never enters it, so its CUDA-only findings become notes).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from ..project import NO_FACTS, ProjectFacts
from ..project.builds import NPU_ROUTE
from ..project.modules import on_disk
from ..project.pynames import column, import_bindings, index, parse, source_lines
from ..records import CODES, Conversion, Record
from ..rules import RuleSet
from .crossfile import project_reach
from .markers import DEVICE_TEST, marks
from .probes import probes
from .reach import Reach
from .sites import Sites
from .unreached import spans as unreached_spans

Span = tuple[int, int, int, int]
KINDS = {
    "branch": ("note", "device test kept as a CUDA test: its branch reaches {what}; on an NPU the other path is taken"),
    "raise": (
        "warning",
        "device test kept as a CUDA test: it refuses what is not CUDA in front of {what}; on an NPU it raises",
    ),
    "assert": ("warning", "device test kept as a CUDA precondition of {what}; on an NPU the assert fails"),
    "skip": ("note", "skip condition kept as CUDA: the test exercises {what}, so it is skipped on an NPU"),
    "flag": ("note", "flag `{flag}` kept as the CUDA test: it chooses {what}; on an NPU it is False"),
    "disable": (
        "note",
        "device test kept as a CUDA test: on other devices it turns `{flag}` off, and `{flag}` chooses {what}; "
        "on an NPU it stays off",
    ),
}


@dataclass
class Guards:
    spans: list[Span] = field(default_factory=list)  # what the engine leaves as it is
    names: set[str] = field(default_factory=set)  # names used in them: their imports are not rewritten either
    records: list[Record] = field(default_factory=list)
    replaces: set[tuple[int, str]] = field(default_factory=set)  # (line, api) of engine findings said better here
    risks: dict[int, str] = field(default_factory=dict)  # line -> a warning for the changes made on it
    unreached: list[tuple[int, int, str]] = field(default_factory=list)  # code only CUDA enters (unreached.py)

    def keeps(self, pos: Span) -> bool:
        """Is a node at ``pos`` inside a span that stays as it is?"""
        line, col, end_line, end_col = pos
        return any((s[0], s[1]) <= (line, col) and (end_line, end_col) <= (s[2], s[3]) for s in self.spans)

    def apply(self, conv: Conversion, skip: set[int]) -> Conversion:
        """``conv`` with the findings added (not on lines with a skip comment), the engine's findings
        they replace dropped, and the changes on risky lines warned about in their message."""
        records = []
        for r in conv.records:
            if not r.is_change and (r.line, r.api) in self.replaces:
                continue
            if r.is_change and r.line in self.risks:
                r = _with_warning(r, self.risks[r.line])
            records.append(r)
        records += [r for r in self.records if r.line not in skip]
        records.sort(key=lambda r: (r.line, r.col, r.code))
        return Conversion(conv.new, records, unreached=[*conv.unreached, *self.unreached])


def _with_warning(record: Record, text: str) -> Record:
    return replace(record, message=f"{record.message}; warning: {text}")


def may_guard(source: bytes, rules: RuleSet, facts: ProjectFacts = NO_FACTS) -> bool:
    """Can ``analyse`` find anything in ``source``? (every finding needs "cuda" and one of the marks)"""
    return b"cuda" in source and marks(source, rules, facts)


def analyse(source: bytes, rules: RuleSet, facts: ProjectFacts = NO_FACTS, path: str = "") -> Guards | None:
    """The guards and probes of one Python source; None when it has none (or does not parse).
    ``path``: the file's name in the run (see engine.convert); with it, what a guard's branch
    reaches in the project's other modules counts too (crossfile.py)."""
    origin = on_disk(facts.root, path) if path and b"cuda" in source and DEVICE_TEST.search(source) else ""
    project = project_reach(rules, facts) if origin else None
    if not may_guard(source, rules, facts) and not (project is not None and project.may_be_reached(source, origin)):
        return None
    tree = parse(source)
    if tree is None:
        return None
    nodes, parents = index(tree)
    names: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(import_bindings(node))
    found, numbers = probes(tree, names, nodes, parents, rules.pytorch_version)
    reach = Reach(
        tree, names, rules, facts, numbers, nodes, builds=b"cpp_extension" in source, origin=origin, project=project
    )
    sites = Sites(tree, names, reach, nodes, source.split(b"\n"))
    kept = sites.find()
    if not kept and not found:
        return None
    lines = source_lines(source)
    guards = Guards()

    guards.unreached = unreached_spans(kept, sites.tests, parents, sites.after, sites.is_test)

    def span(node) -> Span:
        end = node.end_lineno or node.lineno
        return (
            node.lineno,
            column(lines, node.lineno, node.col_offset),
            end,
            column(lines, end, node.end_col_offset or 0),
        )

    def keep(node) -> None:
        guards.spans.append(span(node))
        guards.names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))

    def add(node, code: str, level: str, message: str, suggestion: str, api: str) -> None:
        guards.records.append(
            Record(
                *span(node),
                code=code,
                level=level,
                operation="",
                message=message,
                rule="builtin:guards",
                api=api,
                suggestion=suggestion,
            )
        )

    guarded: set[str] = set()  # where the capability queries are that a kept test guards
    said: set[int] = set()  # predicates' tests already reported
    for site in kept:
        for node in (site.node, *site.also):
            keep(node)
        guarded.update(r.where for r in site.reasons if r.kind == "capability")
        if all(r.kind == "capability" and r.where == f"line {site.node.lineno}" for r in site.reasons):
            continue  # the capability's own finding on this line says its guard stays
        tools = [r for r in site.reasons if r.kind == "tool"]
        level, template = KINDS[site.kind]
        what = "; ".join(r.text for r in site.reasons[:3]) + ("; ..." if len(site.reasons) > 3 else "")
        message = template.format(what=what, flag=site.flag)
        routes = list(dict.fromkeys(r.route for r in site.reasons if r.route))
        if tools:  # a CUDA-only tool is chosen: an NPU host must not install or run it
            add(
                site.node,
                CODES["tool_flag"],
                "warning",
                message + "; an NPU route: " + "; ".join(routes),
                "; ".join(routes),
                sites.spelling(site.node),
            )
            continue
        if any(r.kind in ("build", "extension", "triton", "library") for r in site.reasons):
            message += "; porting that kernel to the NPU is what would give NPU the fast path (then test for NPU here)"
        add(site.node, CODES["guard"], level, message, "; ".join(routes) or NPU_ROUTE, sites.spelling(site.node))
        for node in site.also:
            if id(node) in said:
                continue
            said.add(id(node))
            add(
                node,
                CODES["guard"],
                "note",
                f"device test kept as a CUDA test: the test at line {site.node.lineno} "
                "that calls this function chooses CUDA-only code by it",
                "",
                sites.spelling(node),
            )
    for probe in found:
        if probe.keep is not None:
            keep(probe.keep)
        guarded_here = f"line {probe.node.lineno}" in guarded
        guard = (
            "; its CUDA guard stays, so an NPU run takes the other path"
            if guarded_here
            else "; it has no CUDA guard: on an NPU host it raises, put it behind torch.cuda.is_available()"
        )
        if probe.code == "capability":
            message = (
                "torch.cuda.get_device_capability() is read as a number: kept as the CUDA query "
                "(torch_npu.npu.get_device_capability() returns None, so a comparison, index or unpacking "
                "of it would raise TypeError)"
            )
            # behind its CUDA guard nothing fails on an NPU: what the NPU path should do is the guard's
            # note (TP240) to read, so the query is a note too (docs/reports.md, "Levels")
            level = "note" if guarded_here else "warning"
            add(probe.node, CODES["capability"], level, message + guard, probe.suggestion, probe.api)
        else:
            add(
                probe.node,
                CODES["probe"],
                "note" if guarded_here and probe.keep is not None else probe.level,
                probe.message + (guard if probe.keep is not None else ""),
                probe.suggestion,
                probe.api,
            )
            if probe.risk:
                guards.risks[probe.node.lineno] = probe.risk
        if probe.replaces:
            guards.replaces.add((probe.node.lineno, probe.api))
    for node in nodes:  # an import of a name that stays a CUDA name is not rewritten: no rename finding
        if isinstance(node, ast.ImportFrom):
            kept_names = {
                local: qualified
                for local, qualified in import_bindings(node).items()
                if local in guards.names and qualified.startswith("torch.cuda")
            }
            if kept_names:
                guards.replaces.update((node.lineno, qualified) for qualified in kept_names.values())
                add(
                    node,
                    CODES["guard"],
                    "note",
                    f"import left as it is: {', '.join(sorted(kept_names))} is used in "
                    "code kept as a CUDA test or query (so that an NPU run takes the other path)",
                    "",
                    ", ".join(sorted(kept_names.values())),
                )
    return guards


__all__ = ["Guards", "analyse", "may_guard"]
