"""Dependencies: requirements*.txt, setup.py ``install_requires``/``extras_require``, pyproject.toml
(PEP 621 arrays and Poetry tables), setup.cfg ``install_requires``, ``pip install`` commands.

Reports (never changes) CUDA-only packages (TP206, ``api`` = the library, as the Libraries sheet
groups them), indexes of CUDA builds of torch (TP207), and ``torch`` listed without ``torch_npu``
(TP207). Package facts come from rules/project/packages.json.
"""

from __future__ import annotations

import re

from ..project.packages import package, requirement_records
from ..records import SKIP_LINE, Conversion, Record, skips_file
from ..session import Session

_QUOTED = re.compile(r"""(["'])([A-Za-z0-9][^"'\n]*)\1""")


def _strip_comment(text: str) -> str:
    cut = re.search(r"(^|\s)#", text)
    return text[: cut.start()] if cut else text


def convert_requirements(data: bytes) -> Conversion:
    """A requirements file: one requirement or option per line (``-r``/``-c`` includes are files of
    their own)."""
    if skips_file(data):
        return Conversion(None, [])
    items = []
    for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        text = _strip_comment(raw)
        if text.strip():
            items.append((number, 1, text))
    return Conversion(None, requirement_records(items))


def pip_install_items(number: int, line: str) -> list[tuple[int, int, str]]:
    """The requirement words of a ``pip install`` command line (Dockerfile RUN, shell)."""
    m = re.search(r"\bpip3?\s+install\b", line)
    if not m:
        return []
    items = []
    after_at = False
    for word in re.finditer(r"\S+", line[m.end() :]):
        text = word.group().strip("\"'")
        if text in ("&&", ";", "||", "|", "\\"):
            break
        if (text.startswith("-") and "download.pytorch.org" not in text) or text == "@" or after_at:
            after_at = text == "@"  # name @ URL unquoted: the name says it
            continue
        items.append((number, m.end() + word.start() + 1, text))
    return items


_CLONE = re.compile(r"\bgit\s+clone\b(?:\s+-\S+(?:\s+(?!\S*://)\S+)?)*?\s+(\S+://\S+|git@\S+)")


def pip_records(data: bytes) -> list[Record]:
    """Findings for the ``pip install`` commands of a shell script or Dockerfile (no reminder about
    torch_npu: a script may install torch and torch_npu in different steps or files), and for the
    ``git clone`` of a CUDA-only package's repository, which the script then builds."""
    if b"pip" not in data and b"clone" not in data:
        return []
    items = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not SKIP_LINE.search(line) and not line.lstrip().startswith(b"#"):
            text = line.decode("utf-8", "replace")
            items += pip_install_items(number, text)
            items += [(number, m.start(1) + 1, m.group(1).strip("\"'")) for m in _CLONE.finditer(text)]
    return [r for r in requirement_records(items) if r.api != "torch_npu"]


def toml_code(raw: str) -> str:
    """A TOML/YAML/INI line without its comment (a ``#`` outside quotes)."""
    quote = ""
    for i, ch in enumerate(raw):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return raw[:i]
    return raw


_POETRY_GIT = re.compile(r"""\bgit\s*=\s*["']([^"']+)["']""")
# tables of pyproject.toml that name package indexes by url (uv, Poetry, PDM)
_INDEX_TABLES = ("tool.uv.index", "tool.poetry.source", "tool.pdm.source")


def pyproject_items(text: str) -> list[tuple[int, int, str]]:
    """Requirement strings of pyproject.toml: PEP 621 ``dependencies``/``optional-dependencies``,
    ``build-system.requires``, and Poetry ``[...dependencies]`` tables (``name = "version"``); the
    ``url`` of package indexes (uv, Poetry, PDM), where an index of CUDA builds is reported."""
    items = []
    table = ""
    array_key = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = toml_code(raw)
        header = re.match(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*$", line)
        if header:
            table, array_key = header.group(1), ""
            continue
        key = re.match(r"^\s*([A-Za-z0-9_.-]+|\"[^\"]+\")\s*=(?!=)", line)  # not "pkg==1.0" in an array
        if key:
            array_key = key.group(1).strip('"') if "[" in line[key.end() :] else ""
            if table.endswith("dependencies") and table.startswith("tool.poetry") and not array_key:
                name = key.group(1).strip('"')
                items.append((number, key.start(1) + 1, name))
                git = _POETRY_GIT.search(line)
                if git and package(name) is None:  # flash-attention = { git = "https://github.com/Dao-AILab/..." }
                    items.append((number, git.start(1) + 1, "git+" + git.group(1)))
                continue
        if key and key.group(1) == "url" and table in _INDEX_TABLES:  # a package index: CUDA wheels?
            for m in _QUOTED.finditer(line):
                items.append((number, m.start(2) + 1, m.group(2)))
            continue
        in_dependencies = array_key in ("dependencies", "requires") or table.endswith("optional-dependencies")
        if in_dependencies:
            for m in _QUOTED.finditer(line):
                items.append((number, m.start(2) + 1, m.group(2)))
        if "]" in line and array_key:
            array_key = ""
    return items


def setup_cfg_items(text: str) -> list[tuple[int, int, str]]:
    """Requirement lines of setup.cfg: ``install_requires =`` and ``[options.extras_require]``."""
    items = []
    section = ""
    collecting = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            section, collecting = header.group(1).strip(), False
            continue
        key = re.match(r"^([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$", line)
        if key:
            collecting = section == "options.extras_require" or (
                section == "options" and key.group(1) in ("install_requires", "setup_requires")
            )
            rest = key.group(2)
            if collecting and rest.strip():
                items.append((number, len(line) - len(rest) + 1, rest))
        elif collecting and line.strip():
            items.append((number, len(line) - len(line.lstrip()) + 1, line.strip()))
    return items


def may_convert(path: str, data: bytes, session: Session) -> bool:
    return True  # a requirements file is read whatever it holds


def convert(path: str, data: bytes, session: Session) -> Conversion:
    return convert_requirements(data)
