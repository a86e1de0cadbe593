"""Conda environment files (``environment.yml``, any YAML file with top-level ``dependencies:`` and
``channels:``), read like requirements files: never changed, reported.

* conda packages that exist only for CUDA (``cudatoolkit``, ``pytorch-cuda``, ``cuda-*``, ``cudnn``,
  ``nccl``, ...: rules/project/conda.json) and conda packages with a PyPI twin that packages.json
  names (``cupy``, ``pynvml``, ...): TP206, ``api`` = the library;
* the ``nvidia`` channel, a CUDA build string of ``pytorch`` (``pytorch=2.1=*cuda*``): TP207;
* ``pytorch`` without a ``torch_npu`` in the ``pip:`` section: TP207;
* the ``pip:`` section: as a requirements file (project/packages.py).

Line-based YAML reading (block lists under ``channels:`` / ``dependencies:``, flow lists on the
key's line); comments are skipped. Hooked into the config conversion by filetypes.py (``apply``).
"""

from __future__ import annotations

import fnmatch
import re

from ..project.packages import normalise, package, requirement_records
from ..records import CODES, SKIP_LINE, Conversion, Record, skips_file
from ..resources import project_data
from .requirements import toml_code

RULE = "conda.json"
_TOP = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")
_ITEM = re.compile(r"^(\s*)-\s+(.*?)\s*$")
_SPEC = re.compile(r"^(?:([\w.-]+)::)?([A-Za-z0-9_][\w.-]*)(.*)$")


def is_environment(path: str, data: bytes) -> bool:
    base = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if not base.endswith((".yml", ".yaml")) or b"dependencies" not in data:  # the regex only for a candidate
        return False
    tops = set(re.findall(rb"^([A-Za-z_][\w-]*)\s*:", data, re.MULTILINE))
    return b"dependencies" in tops and (b"channels" in tops or base.startswith(("environment", "conda", "env")))


def _record(line: int, col: int, length: int, code: str, api: str, message: str, suggestion: str) -> Record:
    return Record(
        line, col, line, col + length, code, "warning", "dependency", message, RULE, api=api, suggestion=suggestion
    )


def _items(text: str):
    """(section, pip?, line, column, item text) of every list item under channels: / dependencies:."""
    section, pip_indent = "", -1
    for number, raw in enumerate(text.splitlines(), start=1):
        line = toml_code(raw).rstrip()
        if not line.strip():
            continue
        top = _TOP.match(line)
        if top:
            section, pip_indent = top.group(1), -1
            rest = top.group(2).strip()
            if rest.startswith("[") and rest.endswith("]"):  # channels: [pytorch, nvidia]
                start = line.index("[") + 1
                for m in re.finditer(r"[^,\[\]\s]+", line[start : line.rindex("]")]):
                    yield section, False, number, start + m.start() + 1, m.group().strip("'\"")
            continue
        item = _ITEM.match(line)
        if not item or section not in ("channels", "dependencies"):
            continue
        indent, value = len(item.group(1)), item.group(2).strip("'\"")
        if pip_indent >= 0 and indent <= pip_indent:
            pip_indent = -1
        if value.rstrip(":") == "pip" and value.endswith(":"):
            pip_indent = indent
            continue
        col = line.index(item.group(2)) + 1 + (1 if item.group(2)[:1] in "'\"" else 0)
        yield section, pip_indent >= 0, number, col, value


def environment_records(data: bytes) -> list[Record]:
    facts = project_data("conda.json")
    records: list[Record] = []
    pip_items: list[tuple[int, int, str]] = []
    torch_at: tuple[int, int] | None = None
    for section, in_pip, number, col, value in _items(data.decode("utf-8", "replace")):
        if SKIP_LINE.search(data.splitlines()[number - 1]):
            continue
        if section == "channels":
            if value.rstrip("/").rsplit("/", 1)[-1] in facts["channel"]["names"]:
                records.append(
                    _record(
                        number,
                        col,
                        len(value),
                        CODES["project_file"],
                        value,
                        f"channel {value}: {facts['channel']['message']}",
                        facts["channel"]["suggestion"],
                    )
                )
            continue
        if in_pip:
            pip_items.append((number, col, value))
            continue
        spec = _SPEC.match(value)
        if not spec:
            continue
        name, rest = normalise(spec.group(2)), spec.group(3)
        name_col = col + spec.start(2)
        pypi = facts["pypi_names"].get(name, name)
        entry = package(pypi)  # a PyPI twin first: cuda-python is not a piece of the toolkit
        conda = (
            None
            if entry is not None
            else next((e for e in facts["packages"] if fnmatch.fnmatchcase(name, e["match"])), None)
        )
        if pypi == "torch":
            torch_at = torch_at or (number, name_col)
            if re.search(facts["cuda_build"]["pattern"], rest):
                records.append(
                    _record(
                        number,
                        name_col,
                        len(spec.group(2)),
                        CODES["project_file"],
                        "pytorch",
                        f"{value}: {facts['cuda_build']['message']}",
                        facts["cuda_build"]["suggestion"],
                    )
                )
            continue
        if conda is not None:
            records.append(
                _record(
                    number,
                    name_col,
                    len(spec.group(2)),
                    CODES["library"],
                    conda["library"],
                    f"{spec.group(2)}: CUDA-only conda package",
                    conda["route"],
                )
            )
        elif entry is not None:
            records.append(
                _record(
                    number,
                    name_col,
                    len(spec.group(2)),
                    CODES["library"],
                    entry["library"],
                    f"{spec.group(2)}: {entry.get('message', 'CUDA-only package')}",
                    entry["route"],
                )
            )
    pip_records = requirement_records(pip_items)
    has_npu = any(normalise(re.split(r"[^\w.-]", v, maxsplit=1)[0]) == "torch-npu" for _, _, v in pip_items)
    if torch_at is not None:  # conda's pytorch: torch_npu comes from pip
        pip_records = [r for r in pip_records if r.api != "torch_npu"]
        if not has_npu:
            records.append(
                _record(
                    *torch_at,
                    len("pytorch"),
                    CODES["project_file"],
                    "torch_npu",
                    facts["torch_npu"]["message"],
                    facts["torch_npu"]["suggestion"],
                )
            )
    records += pip_records
    records.sort(key=lambda r: (r.line, r.col))
    return records


def apply(path: str, data: bytes, conv: Conversion) -> Conversion:
    """The hook into the config conversion: ``conv`` (formats/configs.py's result) plus the
    environment's findings; a line they report loses the generic "cuda/nccl value" finding there."""
    if skips_file(data) or not is_environment(path, data):
        return conv
    found = environment_records(data)
    if not found:
        return conv
    lines = {r.line for r in found}
    kept = [r for r in conv.records if r.is_change or r.line not in lines]
    return Conversion(conv.new, sorted(kept + found, key=lambda r: (r.line, r.col)))
