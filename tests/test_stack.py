"""No name a built-in rule writes or suggests is deprecated in the torch_npu release it is chosen for.

The deprecations per release come from Ascend/op-plugin's release branches (deprecated.yaml and
scrap_API.md), kept in rules/npu_support/docs/deprecated.json by tools/gen_deprecated.py. For every
pair transplant supports (PyTorch version, torch_npu release), the rules that hold for it
(rule_versions.holds) are read, and every torch_npu name they can write (rename targets) or name
for people (suggestions, messages) is checked against that release's list.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest

from conftest import REPO
from transplant.engine import convert
from transplant.rule_versions import PYTORCH_VERSIONS, RELEASES, TORCH_NPU_RELEASES, holds
from transplant.rules import builtin_rule_files, load_ruleset

RULES = REPO / "rules"
NAME = re.compile(r"\b(?:torch_npu|torch\.npu)(?:\.[A-Za-z_]\w*)+")


@lru_cache(maxsize=1)
def deprecations() -> dict[str, dict[str, str | None]]:
    data = json.loads((RULES / "npu_support" / "docs" / "deprecated.json").read_text(encoding="utf-8"))
    return {release: entry["deprecated"] for release, entry in data["releases"].items()}


PAIRS = [(v, r) for r in TORCH_NPU_RELEASES if r in deprecations() for v in RELEASES[r] if v in PYTORCH_VERSIONS]


def emitted(version: str, release: str) -> list[tuple[str, str]]:
    """(origin, name) for every torch_npu name the rules holding for the pair write or suggest."""
    out = []
    for path in sorted(RULES.glob("project/*.json")):  # the project scan's data: routes in its texts
        out += [(path.name, n) for n in sorted(set(NAME.findall(_texts(json.loads(path.read_text("utf-8"))))))]
    for path in builtin_rule_files(version):
        for kind, entries in json.loads(path.read_text(encoding="utf-8"))["rules"].items():
            for i, entry in enumerate(entries):
                if not holds(entry, version, release):
                    continue
                names = set()
                if kind == "FuncNameModifyRule":
                    names.add(entry["new_name"])
                elif kind == "ModuleNameModifyRule":
                    names.add(f"{entry['parent_module']}.{entry['new_name']}")
                for key in ("suggestion", "message", "arg_new"):
                    names |= set(NAME.findall(entry.get(key, "")))
                out += [(f"{path.name}:{kind}[{i}]", n) for n in sorted(names)]
    return out


def _texts(value) -> str:
    """Every string in a JSON value but its sources (a source says where a fact is, not what to use)."""
    if isinstance(value, dict):
        return " ".join(_texts(v) for k, v in value.items() if k != "source")
    if isinstance(value, list):
        return " ".join(_texts(v) for v in value)
    return value if isinstance(value, str) else ""


def test_pairs_cover_the_supported_releases():
    assert ("2.12", "26.1") in PAIRS and ("2.13", "26.2") in PAIRS and ("2.1", "7.2") in PAIRS
    assert len(deprecations()["26.1"]) > 50  # 57 entries of deprecated.yaml, 30-odd of scrap_API.md


@pytest.mark.parametrize("version, release", PAIRS)
def test_no_emitted_name_is_deprecated_in_the_release(version: str, release: str):
    gone = deprecations()[release]
    bad = [(origin, name) for origin, name in emitted(version, release) if name in gone]
    assert bad == [], f"PyTorch {version} with torch_npu {release}: deprecated names emitted: {bad}"


def test_the_check_would_see_a_deprecated_target():
    # the -sim rule torch.nn.Mish -> torch_npu.contrib.module.Mish holds up to 7.1 only
    assert ("similar.json:FuncNameModifyRule[4]", "torch_npu.contrib.module.Mish") in emitted("2.1", "7.0")
    assert "torch_npu.contrib.module.Mish" in deprecations()["7.1"]
    assert "torch_npu.contrib.module.Mish" not in deprecations()["7.0"]


MISH = b"import torch\n\nact = torch.nn.Mish()\n"


@pytest.mark.parametrize(
    "version, release, expected",
    [
        ("2.1", "7.0", b"act = torch_npu.contrib.module.Mish()"),  # -sim: the contrib module is maintained
        ("2.1", "7.1", b"act = torch.nn.Mish()"),  # deprecated from 7.1: the native API stays
        ("2.12", None, b"act = torch.nn.Mish()"),
    ],
)
def test_similar_rules_follow_the_release(version, release, expected):
    result = convert(MISH, load_ruleset(similar=True, pytorch_version=version, torch_npu=release))
    assert expected in (result.new or MISH)


OLD_PORT = b"""import torch
import torch_npu
from torch_npu.contrib.module import Mish

y = torch_npu.npu_silu(x)
z = torch_npu.npu_mish(x)
act = Mish()
box = torch_npu.npu_ptiou(a, b)
score = torch_npu.npu_fused_attention_score(q, k, v, mask, scale, keep_prob)
keep = x.npu_silu  # an attribute of something else: not torch_npu's
"""


def test_modernize_an_old_port():
    result = convert(OLD_PORT, load_ruleset(pytorch_version="2.12"))  # torch_npu 26.1
    new = result.new.decode()
    assert "y = torch.nn.functional.silu(x)" in new and "z = torch.nn.functional.mish(x)" in new
    assert "from torch.nn import Mish" in new and "act = Mish()" in new
    assert "box = torch_npu.npu_ptiou(a, b)" in new and "keep = x.npu_silu" in new
    found = {r.api: r for r in result.records if not r.is_change}
    assert "no maintained replacement" in found["torch_npu.npu_ptiou"].suggestion or (
        "names no single replacement" in found["torch_npu.npu_ptiou"].suggestion
    )
    assert "torch_npu.npu_fusion_attention" in found["torch_npu.npu_fused_attention_score"].suggestion
    assert found["torch_npu.npu_fused_attention_score"].level == "warning"


def test_modernize_holds_from_the_release_that_deprecates():
    src = b"import torch_npu\nfrom torch_npu.contrib.module import Mish\nact = Mish()\n"
    assert convert(src, load_ruleset(pytorch_version="2.1", torch_npu="7.0")).new is None  # not deprecated yet
    assert b"from torch.nn import Mish" in convert(src, load_ruleset(pytorch_version="2.1", torch_npu="7.1")).new
