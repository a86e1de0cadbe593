"""Build the NPU support lists of PyTorch 2.9 ... 2.13 from torch_npu's own documentation.

Run by a developer when the facts change (never at run or test time), with a local clone or
mirror of Ascend/pytorch (a bare git directory is enough):

    python tools/gen_support.py /path/to/Ascend/pytorch.git

Ascend/pytorch publishes, per PyTorch version, ``docs/zh/api/native_api/pytorch_2-<minor>-0/*.md``:
for each PyTorch API a table that says, per product (Atlas A2, Atlas A3, Ascend 950), whether it
runs there (✔/✘), and an optional limits note (限制与说明: dtypes, arguments); ``torch-cuda.md``
also gives the NPU name of each ``torch.cuda`` API (NPU 形式名称). The pages are read at the commits
in SOURCES (the newest that has each version; 2.9 and 2.10 were dropped from master by 8706fedb).

It writes, for each version V:

* ``rules/npu_support/docs/support_V.json``: every documented API with its products and limits
  (the facts, kept with the commit they come from);
* ``rules/npu_support/unsupported_V.json``: an UnsupportedRule per API that no product runs (a
  warning) or that Atlas A2 or A3 cannot run (a note naming them), with its limits note. An API
  only Ascend 950 lacks is kept in the facts, not reported (see rule_for).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "rules" / "npu_support"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_rules import (  # noqa: E402  (a sibling tool, run from anywhere)
    COMPILE_HELPERS,
    CUDA_BACKEND_SWITCHES,
    METHOD_CLASSES,
    VERSION_SUGGESTIONS,
    subsystem_suggestion,
)

# PyTorch version -> (commit of Ascend/pytorch, folder of its support list)
SOURCES = {
    "2.9": ("b9e2ac91ef207f4d7fd697e9ea5b878c46e2b12d", "docs/zh/api/native_api/pytorch_2-9-0"),
    "2.10": ("b9e2ac91ef207f4d7fd697e9ea5b878c46e2b12d", "docs/zh/api/native_api/pytorch_2-10-0"),
    "2.11": ("9e73e708ab9350d203475609f36f8a43f6a0c2ab", "docs/zh/api/native_api/pytorch_2-11-0"),
    "2.12": ("9e73e708ab9350d203475609f36f8a43f6a0c2ab", "docs/zh/api/native_api/pytorch_2-12-0"),
    "2.13": ("9e73e708ab9350d203475609f36f8a43f6a0c2ab", "docs/zh/api/native_api/pytorch_2-13-0"),
}
PRODUCTS = {"Atlas A2": "Atlas A2", "Atlas A3": "Atlas A3", "Ascend 950": "Ascend 950"}

_HEADING = re.compile(r"^###\s+(.*)$")
_NAME = re.compile(r"(?<![\w.])(torch(?:\.\w+)+)")
_ROW = re.compile(r"^\|\s*(?:<term>)?([^|<]+?)(?:</term>)?\s*\|\s*([✔✘])\s*\|")
_NPU_NAME = re.compile(r"\*\*NPU\s*形式名称\*\*[:：]\s*(\S+)")
_LINK = re.compile(r"\*\*原生文档\*\*[:：]\s*\[([^\]]*)\]\(([^)]*)\)")
_SUPPORTED = re.compile(r"\*\*是否支持\*\*[:：]\s*(.*)")  # the 2.9 and 2.10 pages: one line
_LIMITS = re.compile(r"\*\*限制与说明\*\*[:：]\s*(.*)")

# A few words of the limits notes, so that the English report can say what they say; the note
# itself is kept as written in support_V.json.
GLOSSARY = (
    ("仅支持", " supports only "),
    ("不支持", " not supported: "),
    ("支持", " supports "),
    ("，", ", "),
    ("、", ", "),
    ("。", ". "),
    ("；", "; "),
    ("：", ": "),
    ("（", " ("),
    ("）", ") "),
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _product(label: str) -> str | None:
    for key, name in PRODUCTS.items():
        if label.startswith(key):
            return name
    return None


def _api_name(text: str, url: str, heading: str | None) -> str | None:
    """The qualified name of the API a "原生文档" link documents: the link's anchor where it is one
    (members are listed under their class: [Tensor.T](...tensors.html#torch.Tensor.T)), else its
    text, else the section heading."""
    anchor = url.partition("#")[2].replace("torch.torch.", "torch.")
    page = url.partition("#")[0].rsplit("/", 1)[-1].removesuffix(".html")
    member = "torch." + text if text.startswith(("Tensor.", "nn.", "cuda.")) else ""
    for candidate in (anchor, text, member, page if "." in page else "", heading or ""):
        match = _NAME.fullmatch(candidate.strip())
        if match:
            return match.group(1)
    return heading


def parse_page(text: str) -> list[dict]:
    """The APIs of one support page: name, products (name -> bool), limits, npu_name."""
    apis: list[dict] = []
    current: dict | None = None
    heading_name: str | None = None
    limits: list[str] | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            match = _NAME.search(re.sub(r"<[^>]+>", " ", heading.group(1)))
            heading_name = match.group(1) if match else None
            current, limits = None, None
            continue
        link = _LINK.search(line)
        if link:
            name = _api_name(link.group(1), link.group(2), heading_name)
            heading_name = None  # the members that follow name themselves
            current = {"name": name, "products": {}} if name else None
            if current is not None:
                apis.append(current)
            limits = None
            continue
        if current is None:
            continue
        row = _ROW.match(line)
        if row and _product(row.group(1).strip()):
            current["products"][_product(row.group(1).strip())] = row.group(2) == "✔"
            continue
        said = _SUPPORTED.match(line)
        if said:
            current["products"] = products_said(said.group(1))
            continue
        npu = _NPU_NAME.search(line)
        if npu:
            current["npu_name"] = npu.group(1).strip("`")
            continue
        lim = _LIMITS.match(line)
        if lim:
            limits = [lim.group(1).strip()] if lim.group(1).strip() else []
            current["limits"] = limits
            continue
        if line.startswith("</div>") or line.startswith(">"):
            limits = None
        elif limits is not None and line.strip():
            limits.append(line.strip().lstrip("-* ").strip())
    for api in apis:
        if "limits" in api:
            api["limits"] = " ".join(part for part in api["limits"] if part)
            if not api["limits"]:
                del api["limits"]
    return [a for a in apis if a["products"]]


def products_said(text: str) -> dict[str, bool]:
    """The products of a 2.9/2.10 line: "是" (yes), "否" (no), "是，暂不支持Ascend 950DT" (yes, not yet
    on Ascend 950), or per product "Atlas A2 训练系列产品：是，Atlas A3 训练系列产品：否"."""
    text = re.sub(r"<[^>]+>", "", text).strip()
    not_950 = "暂不支持Ascend 950" in text
    text = re.sub(r"[，,]?\s*暂不支持Ascend 950\w*", "", text).strip()
    found: dict[str, bool] = {}
    for part in re.split(r"[，,]", text):
        if "：" in part or ":" in part:
            labels, _, answer = re.split(r"([：:])", part, maxsplit=1)
            for label in labels.split("/"):
                product = _product(label.strip())
                if product is not None and answer.strip() in ("是", "否"):
                    found[product] = answer.strip() == "是"
    if not found and text in ("是", "否"):
        found = {"Atlas A2": text == "是", "Atlas A3": text == "是"}
    if found:
        found["Ascend 950"] = not not_950 and any(found.values())
    return found


def english(limits: str) -> str:
    text = limits.replace("`", "")
    for word, meaning in GLOSSARY:
        text = text.replace(word, meaning)
    return re.sub(r"\s+", " ", text).strip()


# Rows that are not findings: what a conversion writes itself (model.npu() is how torch_npu moves a
# module; the page lists the method from PyTorch's Module, whose npu() torch_npu defines).
NOT_REPORTED = {"torch.nn.Module.npu", "torch.Tensor.npu"}


# Settings torch keeps for itself on the host, whatever the device: how einsum orders its
# contractions, whether determinism only warns. Setting or reading them fails nothing on an NPU.
HOST_SETTINGS = (
    "torch.backends.opt_einsum.",
    "torch.is_deterministic_algorithms_warn_only_enabled",
    "torch.are_deterministic_algorithms_enabled",
    "torch.get_deterministic_debug_mode",
)


def _note_kind(name: str) -> tuple[str, str] | None:
    """(why, suggestion) for an API listed as unsupported whose use asks nothing of a port (the older
    lists' rules in gen_rules.py say the same of CUDA's kernel switches and torch.compile's helpers)."""
    if name.startswith(CUDA_BACKEND_SWITCHES):
        return (
            "a switch of CUDA's kernels, which has no effect on NPU",
            "nothing to rewrite: torch_npu chooses its own kernels (SDPA runs its fused kernel)",
        )
    if name.startswith(COMPILE_HELPERS) and name != "torch.compiler.compile":
        return (
            "it only steers torch.compile",
            "nothing to rewrite here; torch.compile itself runs on the NPU through torch_npu's graph mode "
            "(backend=torch_npu.dynamo.torchair.get_npu_backend())",
        )
    if name.startswith(HOST_SETTINGS):
        return (
            "a setting torch keeps on the host, whatever the device",
            "nothing to rewrite: setting or reading it fails nothing on an NPU",
        )
    return None


def rule_for(api: dict, version: str, commit: str, page: str) -> dict | None:
    if api["name"] in NOT_REPORTED:
        return None
    products = api["products"]
    missing = [p for p, ok in products.items() if not ok]
    if not missing or missing == ["Ascend 950"]:
        # Ascend 950 alone: the newest product, where the pages list what was verified so far
        # ("未经过验证产品暂不纳入"); a note on every use of such an API would bury the rest. The fact
        # stays in support_V.json.
        return None
    name = api["name"]
    where = f"Ascend/pytorch {page} at {commit[:10]}"
    if len(missing) == len(products):
        level, said = "warning", f"not supported on NPU with PyTorch {version} ({', '.join(missing)}: ✘)"
    else:
        runs = [p for p, ok in products.items() if ok]
        level, said = (
            "note",
            f"not supported on {', '.join(missing)} with PyTorch {version} (runs on {', '.join(runs)})",
        )
    quiet = _note_kind(name) if level == "warning" else None
    if quiet is not None:
        level, said = "note", f"{said}: {quiet[0]}"
    entry: dict = {"name": name, "level": level, "message": said}
    if api.get("limits"):
        entry["message"] += f"; limits on NPU: {english(api['limits'])}"
    if quiet is not None:
        entry["suggestion"] = quiet[1]
    elif level == "note":
        entry["suggestion"] = (
            f"nothing to change for {', '.join(runs)}; on {', '.join(missing)} avoid it or run it on the CPU"
        )
    else:  # a warning says what to do, as the older lists' warnings do (gen_rules.py)
        entry["suggestion"] = VERSION_SUGGESTIONS.get(name) or subsystem_suggestion(name)
    entry["source"] = f"torch_npu's support list for PyTorch {version}: {where}"
    if name.startswith(METHOD_CLASSES):
        entry["on"] = "method"  # as tools/gen_rules.py matches Tensor and Module methods
    return entry


def build(repo: Path, version: str) -> tuple[dict, dict]:
    commit, folder = SOURCES[version]
    pages = [p for p in _git(repo, "ls-tree", "--name-only", f"{commit}:{folder}").split() if p.endswith(".md")]
    facts: dict[str, dict] = {}
    rules: dict[str, dict] = {}
    for page in sorted(pages):
        path = f"{folder}/{page}"
        for api in parse_page(_git(repo, "show", f"{commit}:{path}")):
            facts.setdefault(api["name"], {k: v for k, v in api.items() if k != "name"} | {"page": page})
            rule = rule_for(api, version, commit, path)
            if rule is not None and (rule["name"], rule.get("on")) not in rules:
                rules[rule["name"], rule.get("on")] = rule  # type: ignore[index]
    support = {
        "description": f"torch_npu's support list for PyTorch {version}: per API, the products it runs on "
        "and the limits note, as published (generated by tools/gen_support.py)",
        "source": {"repository": "Ascend/pytorch", "commit": commit, "folder": folder},
        "apis": dict(sorted(facts.items())),
    }
    unsupported = {
        "description": f"APIs some product cannot run with PyTorch {version} (generated by tools/gen_support.py "
        f"from Ascend/pytorch {folder} at {commit})",
        "rules": {"UnsupportedRule": sorted(rules.values(), key=lambda e: (e["name"], e.get("on", "")))},
    }
    return support, unsupported


def write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write_facts(path: Path, data: dict) -> None:
    """One API a line: the facts are read by tests and people, diffed when a list changes."""
    order = list(PRODUCTS.values())
    head = {k: v for k, v in data.items() if k != "apis"}
    head["products"] = f"per API, ✔/✘/- for {', '.join(order)} (-: not on the page)"
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "apis": {']
    items = list(data["apis"].items())
    for i, (name, api) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        marks = "".join({True: "✔", False: "✘"}.get(api["products"].get(p), "-") for p in order)
        api = {"products": marks, **{k: v for k, v in api.items() if k != "products"}}
        lines.append(f" {json.dumps(name, ensure_ascii=False)}: {json.dumps(api, ensure_ascii=False)}{comma}")
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone or bare mirror of Ascend/pytorch")
    args = parser.parse_args(argv)
    for version in SOURCES:
        support, unsupported = build(args.repo, version)
        write_facts(OUT / "docs" / f"support_{version}.json", support)
        write(OUT / f"unsupported_{version}.json", unsupported)
        print(f"{version}: {len(support['apis'])} APIs, {len(unsupported['rules']['UnsupportedRule'])} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
