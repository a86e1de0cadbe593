"""Which packages run only with CUDA (rules/project/packages.json), and the findings for requirement
strings: CUDA-only packages (TP206, ``api`` = the library, as the Libraries sheet groups them),
indexes of CUDA builds of torch (TP207), ``torch`` listed without ``torch_npu`` (TP207). The files
that list requirements are read by formats/requirements.py, formats/configs.py and
formats/dockerfile.py; ``setup()`` in Python by the project scan (calls.py), with the function below.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from typing import Iterable

from ..records import CODES, Record
from ..resources import project_data
from .pynames import column, nodes

RULE = "packages.json"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_NPU = frozenset({"torch-npu"})
_TRITON_NPU = frozenset({"triton-ascend"})
_VLLM_NPU = frozenset({"vllm-ascend"})  # vLLM's Ascend plugin: vllm beside it is its NPU install


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def package(name: str) -> dict | None:
    norm = normalise(name)
    for entry in project_data("packages.json")["packages"]:
        if fnmatch.fnmatchcase(norm, entry["match"]):
            return entry
    return None


# a URL that installs a package: git+https://..., git+ssh://..., git@host:owner/name, https://... archives and wheels
_URL = re.compile(r"(?:git\+)?(?:https?|ssh|git)://[^\s;\"']+|git@[\w.-]+:[^\s;\"']+")
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
_EDITABLE = re.compile(r"^\s*(?:-e|--editable)(?:\s+|=)")


def url_package(url: str) -> dict | None:
    """The packages.json entry of what a URL installs: its ``#egg=`` name; a wheel's distribution
    name; for a git URL or a GitHub archive, the repository an entry's ``git`` lists
    (``Dao-AILab/flash-attention`` -> flash-attn), else the repository's own name (``.../xformers``)."""
    egg = _EGG.search(url)
    if egg:
        return package(egg.group(1))
    base = url.split("#", 1)[0].split("?", 1)[0]
    if base.endswith(".whl"):  # name-version(-build)-python-abi-platform.whl
        return package(base.rsplit("/", 1)[-1].split("-", 1)[0])
    if base.startswith("git@"):
        host, path = base[len("git@") :].split(":", 1)
    else:
        rest = base.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]
    parts = [p for p in path.split("/") if p]
    is_git = url.startswith(("git+", "git@", "git://")) or base.endswith(".git")
    if len(parts) < 2 or not (is_git or host.lower() in ("github.com", "www.github.com", "gitlab.com")):
        return None
    if not is_git and len(parts) > 2 and parts[2] not in ("archive", "tarball", "zipball"):
        return None  # a page of the repository, not the repository or an archive of it
    owner, name = parts[0], parts[1].split("@", 1)[0]
    name = name[: -len(".git")] if name.endswith(".git") else name
    repo = f"{owner}/{name}".lower()
    for entry in project_data("packages.json")["packages"]:
        if repo in (r.lower() for r in entry.get("git", ())):
            return entry
    return package(name)


def _repository_name(url: str) -> str:
    """The last segment of a URL's path without ``.git``, ``@ref`` or a fragment."""
    tail = url.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    tail = tail.split("@", 1)[0]
    return tail[: -len(".git")] if tail.endswith(".git") else tail


def _shown(entry: dict) -> str:
    """The package an entry is about, as a message names it (its library where it matches a pattern)."""
    return entry["library"] if "*" in entry["match"] else entry["match"]


_UPPER = re.compile(r"(==|<=|<|~=)\s*v?(\d+(?:\.\d+)*)")


def _version(text: str) -> tuple[int, ...]:  # (release numbers only: pre-releases sort as the release)
    return tuple(int(part) for part in text.split("."))


def pinned_below(specifier: str, below: str) -> bool:
    """Does the requirement's version specifier (``==0.3.0``, ``<0.5``, ``~=0.6.1``) keep the
    package under ``below``? An unpinned requirement or a lower bound alone does not."""
    limit = _version(below)
    for op, version in _UPPER.findall(specifier.split(";", 1)[0]):
        v = _version(version)
        padded = v + (0,) * (len(limit) - len(v))
        if (op == "<" and padded <= limit) or (op in ("==", "<=") and padded < limit):
            return True
        if op == "~=":  # ~=X.Y.Z: below X.(Y+1)
            prefix = v[:-1] or v
            upper = prefix[:-1] + (prefix[-1] + 1,)
            if upper + (0,) * (len(limit) - len(upper)) <= limit:
                return True
    return False


def _record(line: int, col: int, length: int, code: str, api: str, message: str, suggestion: str) -> Record:
    return Record(
        line, col, line, col + length, code, "warning", "dependency", message, RULE, api=api, suggestion=suggestion
    )


def requirement_records(items: Iterable[tuple[int, int, str]]) -> list[Record]:
    """Findings for requirement strings given as (line, 1-based column, text)."""
    facts = project_data("packages.json")
    index = re.compile(facts["cuda_index"]["pattern"])
    records: list[Record] = []
    torch_at: tuple[int, int] | None = None
    names: set[str] = set()
    for line, col, text in items:
        m = index.search(text)
        if m:
            records.append(
                _record(
                    line,
                    col + m.start(),
                    len(m.group()),
                    CODES["project_file"],
                    m.group(),
                    facts["cuda_index"]["message"],
                    facts["cuda_index"]["suggestion"],
                )
            )
            continue
        url = _URL.search(text)
        named = _NAME.match(text)
        # a URL alone (git+https://github.com/NVIDIA/apex), after -e, or after a name no entry knows (x @ git+...)
        bare = url is not None and (_EDITABLE.match(text) or text.lstrip().startswith(url.group()))
        direct = (
            url is not None
            and named is not None
            and text[named.end() :].lstrip().startswith("@")
            and package(named.group(1)) is None
        )
        if url is not None and (bare or direct):
            names.add(normalise(_repository_name(url.group())))  # git clone .../vllm-ascend.git
            entry = url_package(url.group())
            if entry is not None and "below" not in entry:
                records.append(
                    _record(
                        line,
                        col + url.start(),
                        len(url.group()),
                        CODES["library"],
                        entry["library"],
                        f"{_shown(entry)} from {url.group()}: {entry.get('message', 'CUDA-only package')}",
                        entry["route"],
                    )
                )
                continue
        m = named
        if not m or text.lstrip().startswith("-"):
            continue
        name = normalise(m.group(1))
        names.add(name)
        start = col + m.start(1)
        if name == "torch" and torch_at is None:
            torch_at = (line, start)
        entry = package(name)
        if entry is not None and "below" in entry and not pinned_below(text[m.end(1) :], entry["below"]):
            entry = None  # a release that supports NPUs is allowed
        if entry is not None:
            records.append(
                _record(
                    line,
                    start,
                    len(m.group(1)),
                    CODES["library"],
                    entry["library"],
                    f"{m.group(1)}: {entry.get('message', 'CUDA-only package')}",
                    entry["route"],
                )
            )
    if names & _TRITON_NPU:  # triton beside triton-ascend: the project already has the NPU route
        records = [r for r in records if r.api != "triton"]
    if names & _VLLM_NPU:  # vllm installed with vllm-ascend, as its install guide does
        records = [r for r in records if r.api != "vllm"]
    if torch_at is not None and not names & _NPU:
        records.append(
            _record(
                *torch_at,
                len("torch"),
                CODES["project_file"],
                "torch_npu",
                facts["torch"]["message"],
                facts["torch"]["suggestion"],
            )
        )
    records.sort(key=lambda r: (r.line, r.col))
    return records


def setup_requirement_records(tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[Record]:
    """Findings for the string constants in ``setup(install_requires=[...], extras_require={...})``."""
    items = []
    for node in nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if callee != "setup":
            continue
        for kw in node.keywords:
            if kw.arg in ("install_requires", "extras_require", "setup_requires"):
                for const in ast.walk(kw.value):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str) and "\n" not in const.value:
                        items.append((const.lineno, column(lines, const.lineno, const.col_offset) + 1, const.value))
    return requirement_records(items)
