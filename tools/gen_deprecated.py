"""Build, per torch_npu release, the list of deprecated torch_npu APIs and their replacements.

Run by a developer when the facts change (never at run or test time), with a local clone or
mirror of Ascend/op-plugin (a bare git directory is enough):

    python tools/gen_deprecated.py /path/to/Ascend/op-plugin.git /path/to/Ascend/pytorch.git

op-plugin keeps one branch per torch_npu release (7.2.0, 26.1.0, ...; master is the coming one) and in
each two lists: ``op_plugin/config/deprecated.yaml`` (operators that warn when called, with the
replacement where one is given: ``replace``) and ``docs/zh/custom_APIs/scrap_API.md`` (the APIs
listed for removal, with a replacement note; also contrib modules). torch_npu's own Python warns
of more (``"torch_npu.npu.amp.custom_fwd(args...) is deprecated"``), read from the release's
branch of Ascend/pytorch (PYTORCH_BRANCHES). A name is deprecated in a release when one of these has it.

It writes:

* ``rules/npu_support/docs/deprecated.json``: per release, name -> replacement (or null) and the
  ``npu_*`` operators its op-plugin defines (op_plugin/config/op_plugin_functions.yaml), with the
  branch and commit read;
* ``rules/modernize.json``: the built-in rules that modernize an old NPU port: a rename where the
  replacement is one API that takes the same arguments (MODERNIZE, checked by hand against both
  signatures), else a finding naming the replacement (or saying there is none), each from the
  first release that deprecates it (``npu_since``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"

# torch_npu release -> branch of Ascend/op-plugin (master: the release in preparation, 26.2)
BRANCHES = {
    "6.0": "6.0.0",
    "7.0": "7.0.0",
    "7.1": "7.1.0",
    "7.2": "7.2.0",
    "7.3": "7.3.0",
    "26.0": "26.0.0",
    "26.1": "26.1.0",
    "26.2": "master",
}

# torch_npu release -> a branch of Ascend/pytorch (its newest PyTorch) whose Python warns of deprecations
PYTORCH_BRANCHES = {
    "6.0": "v2.4.0-6.0.0",
    "7.0": "v2.5.1-7.0.0",
    "7.1": "v2.6.0-7.1.0",
    "7.2": "v2.8.0-7.2.0",
    "7.3": "v2.9.0-7.3.0",
    "26.0": "v2.10.0-26.0.0",
    "26.1": "v2.12.0-26.1.0",
    "26.2": "v26.2.0-beta.1-pytorch2.13.0",
}
_WARNED = re.compile(r"[\"'`]`?(torch_npu(?:\.\w+)+)(?:\(args\.\.\.\))?`? is deprecated")

# Deprecated name -> its replacement, renamed in place: the replacement takes the same positional
# and keyword arguments for every call the old one accepts (op-plugin's prototypes in
# op_plugin/config/op_plugin_functions.yaml against PyTorch's; torch_npu.contrib modules against
# torch.nn's constructors). Not npu_broadcast: its out= overload has no torch.broadcast_to form. A
# call that passes the tensor by keyword (npu_silu(self=x)) is the one spelling that differs.
MODERNIZE = {
    "torch_npu.npu_silu": "torch.nn.functional.silu",  # npu_silu(Tensor self) / silu(input, inplace=False)
    "torch_npu.npu_mish": "torch.nn.functional.mish",  # npu_mish(Tensor self) / mish(input, inplace=False)
    "torch_npu.contrib.module.Mish": "torch.nn.Mish",  # Mish() / Mish(inplace=False)
    "torch_npu.contrib.module.SiLU": "torch.nn.SiLU",  # SiLU() / SiLU(inplace=False)
    "torch_npu.contrib.Swish": "torch.nn.SiLU",  # Swish() / SiLU(inplace=False)
}

# Replacements the lists spell wrongly: the name torch_npu has (torch_npu_public_names.txt).
CORRECTED = {"torch_npu.contrib.ModulationDeformConv": "torch_npu.contrib.ModulatedDeformConv"}

_ROW = re.compile(r"<tr id=.*?</tr>", re.S)
_CELL = re.compile(r"<td.*?</td>", re.S)
_USE = re.compile(r"使用([A-Za-z_][\w.]*(?:\(\))?)接口进行替换")


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else ""


def from_yaml(text: str) -> dict[str, str | None]:
    """name -> replace of deprecated.yaml (a flat list; read without a YAML library)."""
    found: dict[str, str | None] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"\s*-\s*name:\s*(\S+)", line)
        if m:
            name = "torch_npu." + m.group(1).split(".")[0]  # npu_min.dim is an overload of npu_min
            found.setdefault(name, None)
            continue
        m = re.match(r"\s*replace:\s*'?(.*?)'?\s*$", line)
        if m and name is not None and found.get(name) is None:
            found[name] = m.group(1)
    return found


def from_scrap(text: str) -> dict[str, str | None]:
    """name -> replacement of scrap_API.md (None where it names no single API)."""
    found: dict[str, str | None] = {}
    for row in _ROW.findall(text):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in _CELL.findall(row)]
        if len(cells) < 2 or not cells[0].startswith("torch_npu"):
            continue
        use = _USE.search(cells[1])
        found[cells[0]] = use.group(1) if use and "或" not in cells[1] and "与" not in cells[1] else None
    return found


def warned(pytorch: Path, branch: str) -> set[str]:
    """The torch_npu names whose Python code warns that they are deprecated, in a branch of Ascend/pytorch."""
    text = _git(pytorch, "grep", "-h", "is deprecated", branch, "--", "torch_npu/*.py")
    return set(_WARNED.findall(text))


def build(repo: Path, pytorch: Path | None) -> dict:
    releases: dict[str, dict] = {}
    for release, branch in BRANCHES.items():
        commit = _git(repo, "rev-parse", branch).strip()
        names = from_yaml(_git(repo, "show", f"{branch}:op_plugin/config/deprecated.yaml"))
        if pytorch is not None:
            for name in warned(pytorch, PYTORCH_BRANCHES[release]):
                names.setdefault(name, None)
        for name, replacement in from_scrap(_git(repo, "show", f"{branch}:docs/zh/custom_APIs/scrap_API.md")).items():
            if names.get(name) is None:
                names[name] = replacement
        functions = _git(repo, "show", f"{branch}:op_plugin/config/op_plugin_functions.yaml")
        operators = sorted(set(re.findall(r"^\s*-\s*func:\s*(npu_\w+)\(", functions, re.M)))
        releases[release] = {
            "branch": branch,
            "commit": commit,
            "deprecated": dict(sorted(names.items())),
            "operators": operators,  # torch_npu.<name> operators the release's op-plugin defines
        }
    return releases


def modernize_rules(releases: dict) -> dict:
    first: dict[str, str] = {}
    replacement: dict[str, str | None] = {}
    for release, data in releases.items():
        for name, replace in data["deprecated"].items():
            first.setdefault(name, release)
            if replace and not replacement.get(name):
                replacement[name] = replace
            replacement.setdefault(name, None)
    renames, reports = [], []
    for name in sorted(first):
        release = first[name]
        where = (
            f"Ascend/op-plugin branch {releases[release]['branch']} ({releases[release]['commit'][:10]}): "
            "op_plugin/config/deprecated.yaml, docs/zh/custom_APIs/scrap_API.md"
        )
        if name in MODERNIZE:
            renames.append(
                {
                    "old_name": name,
                    "new_name": MODERNIZE[name],
                    "npu_since": release,
                    "message": f"deprecated in torch_npu {release}: the maintained {MODERNIZE[name]} runs "
                    "instead (same arguments; its own NPU kernel)",
                    "source": f"{where}; same arguments: tools/gen_deprecated.py MODERNIZE",
                }
            )
            continue
        replace = replacement[name]
        if replace and re.fullmatch(r"npu_\w+", replace):  # op-plugin names its own operators bare
            replace = f"torch_npu.{replace}"
        replace = CORRECTED.get(replace or "", replace)
        if replace in first:  # npu_ptiou -> npu_iou, itself deprecated from 26.0: no maintained replacement
            replace = None
        entry = {
            "name": name,
            "level": "warning",
            "message": f"deprecated in torch_npu {release} (listed for removal)",
            "suggestion": f"op-plugin names {replace} as its replacement (check the arguments)"
            if replace
            else "op-plugin names no single replacement: compose it from native operators or keep it while "
            "the release has it",
            "npu_since": release,
            "source": where,
        }
        reports.append(entry)
    return {
        "description": "Modernize an old NPU port: torch_npu APIs that op-plugin deprecates, renamed to their "
        "maintained counterparts where it names one with the same arguments, else reported (generated by "
        "tools/gen_deprecated.py)",
        "rules": {"FuncNameModifyRule": renames, "UnsupportedRule": reports},
    }


def write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone or bare mirror of Ascend/op-plugin")
    parser.add_argument("pytorch", type=Path, help="a clone or bare mirror of Ascend/pytorch")
    args = parser.parse_args(argv)
    releases = build(args.repo, args.pytorch)
    write(
        RULES / "npu_support" / "docs" / "deprecated.json",
        {
            "description": "torch_npu APIs deprecated per release, with the replacement op-plugin names (null: "
            "none), generated by tools/gen_deprecated.py",
            "source": "Ascend/op-plugin: op_plugin/config/deprecated.yaml and docs/zh/custom_APIs/scrap_API.md of "
            "each release branch; Ascend/pytorch: the 'is deprecated' warnings of torch_npu/*.py in "
            + ", ".join(PYTORCH_BRANCHES.values()),
            "releases": releases,
        },
    )
    write(RULES / "modernize.json", modernize_rules(releases))
    for release, data in releases.items():
        print(f"{release}: {len(data['deprecated'])} deprecated names, {len(data['operators'])} operators")
    return 0


if __name__ == "__main__":
    sys.exit(main())
