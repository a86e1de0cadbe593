"""Every torch_npu name a built-in rule can emit exists in torch_npu 2.14 (or, for an npu_* operator, in
the op-plugin of a release transplant supports).

The list of public names is ``rules/npu_support/torch_npu_public_names.txt`` (derived from the
torch_npu 2.14 wheel). Names created by torch_npu's C extension are listed down to their class only
(``torch_npu.profiler.ProfilerActivity``, not ``...ProfilerActivity.NPU``), so a name also counts as
present when its longest listed prefix ends in a class (a component that starts upper-case).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import libcst as cst
import pytest

from conftest import REPO
from transplant.engine import dotted_parts

RULES = REPO / "rules"
NPU_ROOTS = ("torch_npu", "torch.npu")
SUGGESTED = re.compile(r"\b(?:torch_npu|torch\.npu)(?:\.[A-Za-z_]\w*)+")


@lru_cache(maxsize=1)
def public_names() -> frozenset[str]:
    """The names of the torch_npu 2.14 wheel, and the npu_* operators of each release's op-plugin
    (rules/npu_support/docs/deprecated.json, tools/gen_deprecated.py): newer operators than the wheel's."""
    text = (RULES / "npu_support" / "torch_npu_public_names.txt").read_text(encoding="utf-8")
    releases = json.loads((RULES / "npu_support" / "docs" / "deprecated.json").read_text(encoding="utf-8"))
    operators = {f"torch_npu.{op}" for data in releases["releases"].values() for op in data["operators"]}
    return frozenset(line.strip() for line in text.splitlines() if line.strip()) | operators


def exists(name: str, names: frozenset[str]) -> bool:
    if name in names:
        return True
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in names:
            return parts[i - 1][:1].isupper()
    return False


def is_npu_name(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in NPU_ROOTS)


def names_in_expression(text: str) -> set[str]:
    """Every maximal dotted name in a Python expression (``a.b.c``, not also ``a.b``)."""
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            parts = dotted_parts(node)
            if parts is not None:
                found.add(".".join(parts))
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    cst.parse_expression(text).visit(Collect())
    return found


def emitted_names(texts: bool = True) -> list[tuple[str, str]]:
    """(rule origin, name) for every torch_npu / torch.npu name the built-in rules can write, and
    (``texts``) that their suggestions and messages name for people to use (routes such as
    torch_npu.npu_fusion_attention or torch_npu's graph mode)."""
    out: list[tuple[str, str]] = []
    for path in sorted([*RULES.glob("*.json"), *RULES.glob("npu_support/*.json")]):
        if path.name == "schema.json":
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        for kind, entries in data["rules"].items():
            for i, entry in enumerate(entries):
                where = f"{path.name}:{kind}[{i}]"
                candidates: set[str] = set()
                if kind == "FuncNameModifyRule" and entry.get("on", "name") == "name":
                    candidates.add(entry["new_name"])
                elif kind == "ModuleNameModifyRule":
                    candidates.add(f"{entry['parent_module']}.{entry['new_name']}")
                elif kind == "ArgsModifyRule":
                    candidates |= names_in_expression(entry["arg_new"])
                    candidates |= set(entry.get("imports", []))
                for text in (entry.get("suggestion", ""), entry.get("message", "")) if texts else ():
                    candidates |= set(SUGGESTED.findall(text))
                out += [(where, name) for name in sorted(candidates) if is_npu_name(name)]
    return out


EMITTED = emitted_names()


def test_rules_emit_npu_names():
    # the built-in rules are mostly torch.cuda -> torch_npu.npu renames: hundreds of names
    assert len(EMITTED) > 150
    assert any(name == "torch_npu.npu.synchronize" for _, name in EMITTED)
    assert any(name == "torch_npu.profiler.ProfilerActivity.NPU" for _, name in EMITTED)


@pytest.mark.parametrize("origin,name", EMITTED, ids=[f"{o}:{n}" for o, n in EMITTED])
def test_emitted_name_exists(origin: str, name: str):
    assert exists(name, public_names()), f"{origin} emits {name}, which torch_npu 2.14 does not have"


def test_prefix_rule_accepts_class_members_only():
    names = frozenset({"torch_npu.profiler", "torch_npu.profiler.ProfilerActivity", "torch_npu.npu"})
    assert exists("torch_npu.profiler.ProfilerActivity.NPU", names)
    assert not exists("torch_npu.profiler.no_such_function", names)
    assert not exists("torch_npu.npu.no_such_function", names)
    assert not exists("torch_npu.made_up", frozenset())


def test_public_names_file_is_in_the_repository():
    names = public_names()
    assert len(names) > 3000
    assert "torch_npu.npu.synchronize" in names
    assert "torch.npu.synchronize" in names


def test_legacy_type_strings_have_torch_npu_names():
    # the engine turns "torch.cuda.HalfTensor" strings into "torch.npu.HalfTensor"
    data = json.loads((RULES / "device_api.json").read_text(encoding="utf-8"))
    renames = {r["old_name"]: r["new_name"] for r in data["rules"]["FuncNameModifyRule"]}
    types = {
        old: new
        for old, new in renames.items()
        if old.startswith("torch.cuda.") and old.endswith("Tensor") and old.count(".") == 2
    }
    assert len(types) >= 10
    for old, new in types.items():
        assert new.startswith("torch_npu.npu."), (old, new)
        assert "torch.npu." + new.rsplit(".", 1)[1] in public_names(), old


def member_lists() -> list[tuple[str, dict]]:
    """(origin, rule) for every built-in rename that lists the members of its target (class or enum)."""
    out = []
    for path in sorted(RULES.glob("*.json")):
        if path.name != "schema.json":
            rules = json.loads(path.read_text(encoding="utf-8"))["rules"].get("FuncNameModifyRule", [])
            out += [(f"{path.name}:{i}", r) for i, r in enumerate(rules) if "members" in r]
    return out


def test_enum_renames_list_the_members_of_their_target():
    listed = {r["old_name"]: r for _, r in member_lists()}
    # torch_npu's ProfilerActivity has CPU and NPU only: XPU, HPU, MTIA stay on torch.profiler
    assert listed["torch.profiler.ProfilerActivity"]["members"] == ["CPU", "NPU"]
    assert "torch.profiler.ProfilerAction" in listed


@pytest.mark.parametrize("origin,rule", member_lists(), ids=[o for o, _ in member_lists()])
def test_listed_members_have_a_source_and_exist(origin: str, rule: dict):
    assert rule.get("source"), f"{origin}: a list of members needs its source"
    assert rule["members"], origin
    klass = rule["new_name"].rsplit(".", 1)[-1]
    # where the public names list a class's members (Python classes), each listed member is one of them
    known = {n.rsplit(".", 1)[-1] for n in public_names() if n.rsplit(".", 2)[-2:-1] == [klass]}
    if known:
        assert set(rule["members"]) <= known, f"{origin}: {set(rule['members']) - known} not in torch_npu"


def test_fused_operators_named_in_routes_have_their_prototype_and_arguments():
    """A route that names a torch_npu fused operator (torch_npu.npu_fusion_attention, npu_rms_norm, ...)
    rests on its prototype (rules/npu_support/torch_npu_ops.csv, from torch_npu 2.14's operator
    docs): the operator is listed there and every keyword the route passes to it is a parameter."""
    import csv

    with open(RULES / "npu_support" / "torch_npu_ops.csv", newline="", encoding="utf-8") as fh:
        prototypes = {row["op"]: row["prototype"] for row in csv.DictReader(fh)}
    # (modernize.json names the deprecated operators it replaces, not routes: tests/test_stack.py checks it)
    texts = [
        p.read_text(encoding="utf-8")
        for p in sorted([*RULES.glob("*.json"), *RULES.glob("project/*.json")])
        if p.name != "modernize.json"
    ]
    calls = [m for t in texts for m in re.finditer(r"torch_npu\.(npu_\w+)(\((?:[^()]|\([^()]*\))*\))?", t)]
    named = {m.group(1) for m in calls}
    assert {"npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "npu_swiglu"} <= named
    for m in calls:
        op, args = m.group(1), m.group(2) or ""
        assert op in prototypes, op
        assert exists(f"torch_npu.{op}", public_names()), op
        for keyword in re.findall(r"(\w+)=", args):
            assert re.search(rf"\b{keyword}\b", prototypes[op]), (op, keyword)


def project_data_names() -> list[tuple[str, str]]:
    """(file:JSON path, name) for every torch_npu / torch.npu name in the texts of rules/project/*.json
    (routes, messages, suggestions of the project scan and the project files); ``NpuFused*`` is a
    pattern for people, not a name."""
    out: list[tuple[str, str]] = []

    def walk(value, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key != "source":  # a source says where a fact comes from, not what to use
                    walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, str):
            for m in SUGGESTED.finditer(value):
                if not value[m.end() : m.end() + 1] == "*":
                    out.append((where, m.group()))

    for path in sorted(RULES.glob("project/*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), path.name)
    return out


PROJECT_NAMES = project_data_names()


@pytest.mark.parametrize("origin,name", PROJECT_NAMES, ids=[f"{o}:{n}" for o, n in PROJECT_NAMES])
def test_project_data_names_exist(origin: str, name: str):
    assert exists(name, public_names()), f"{origin} names {name}, which torch_npu 2.14 does not have"


def test_project_data_names_are_found():
    found = {name for _, name in PROJECT_NAMES}
    assert {"torch_npu.npu_fusion_attention", "torch_npu.npu.device_count"} <= found
