"""Framework settings in YAML and JSON configuration files (rules/project/frameworks.json).

* accelerate's config files (``accelerate config`` writes them; any YAML or JSON file with a
  ``distributed_type`` key and another of accelerate's keys): ``distributed_type: MULTI_GPU`` becomes
  ``MULTI_NPU`` (TP103); only the value's bytes change.
* ``attn_implementation: flash_attention_2`` (also ``_attn_implementation``, a model's config.json):
  reported with the NPU route (TP206), as in Python (project/frameworks.py).
* Lightning's ``accelerator: gpu`` / ``cuda`` (LightningCLI configs): reported (TP207), not rewritten.

Works on bytes with ASCII patterns, line by line; comments are not read. Hooked into the config
conversion by filetypes.py (``apply``).
"""

from __future__ import annotations

import re

from ..project.frameworks import DATA, RULE
from ..records import CODES, OPERATION, SKIP_LINE, Conversion, Record
from ..resources import project_data

WORDS = (b"distributed_type", b"attn_implementation", b"accelerator")
# key, then value: a YAML/INI line ``key: value`` (quotes optional) or a JSON pair anywhere on the line
_YAML = re.compile(
    rb"^[ \t]*(?:-[ \t]+)?([\"']?)([A-Za-z_]\w*)\1[ \t]*:[ \t]*([\"']?)([A-Za-z_][\w]*)\3[ \t]*(?:#.*)?\r?\n?$"
)
_JSON = re.compile(rb'"([A-Za-z_]\w*)"\s*:\s*"([A-Za-z_]\w*)"')
_KEY = re.compile(rb"^[ \t]*[\"']?([A-Za-z_]\w*)[\"']?[ \t]*:", re.MULTILINE)


def may_match(data: bytes) -> bool:
    return any(word in data for word in WORDS)


def _pairs(line: bytes, is_json: bool):
    """(key, value, offset of the value) of the line's simple string pairs."""
    if is_json:
        for m in _JSON.finditer(line):
            yield m.group(1).decode(), m.group(2).decode(), m.start(2)
        return
    pair = _YAML.match(line)
    if pair:
        yield pair.group(2).decode(), pair.group(4).decode(), pair.start(4)


def _is_accelerate(data: bytes) -> bool:
    keys = {k.decode() for k in _KEY.findall(data)} | {k.decode() for k in re.findall(rb'"(\w+)"\s*:', data)}
    return "distributed_type" in keys and bool(keys & set(project_data(DATA)["accelerate"]["config_keys"]))


def framework_config(path: str, data: bytes) -> Conversion:
    """The framework settings of one configuration file: accelerate's MULTI_GPU converted, the rest reported."""
    from ..project.frameworks import attention_record, lightning_record

    if not may_match(data):
        return Conversion(None, [])
    facts = project_data(DATA)
    accelerate = facts["accelerate"]
    lightning = facts["lightning"]
    is_json = path.lower().endswith(".json")
    convert_accelerate = b"distributed_type" in data and _is_accelerate(data)
    records: list[Record] = []
    out: list[bytes] = []
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        if SKIP_LINE.search(line) or not may_match(line):
            out.append(line)
            continue
        edit = None
        for key, value, at in _pairs(line, is_json):
            col = at + 1
            if key == accelerate["key"] and value == accelerate["old"] and convert_accelerate:
                new = accelerate["new"]
                records.append(
                    Record(
                        number,
                        col,
                        number,
                        col + len(value),
                        CODES["args"],
                        "fix",
                        OPERATION["args"],
                        f"{key}: {value} -> {new}",
                        RULE,
                        api=key,
                        old=value,
                        new=new,
                    )
                )
                edit = (at, at + len(value), new.encode())
            elif key in facts["attention"]["keys"]:
                found = attention_record([], _At(number, at, len(value)), value)
                if found is not None:
                    records.append(found)
            elif key == lightning["keyword"] and value in lightning["values"]:
                records.append(lightning_record([], _At(number, at, len(value)), value))
        out.append(line[: edit[0]] + edit[2] + line[edit[1] :] if edit else line)
    new = b"".join(out)
    return Conversion(new if new != data else None, records)


class _At:
    """A place in a configuration file, shaped as the ``ast`` positions project/frameworks.py reads
    (given no lines, its columns are the byte offset + 1: these patterns are ASCII)."""

    def __init__(self, line: int, offset: int, length: int) -> None:
        self.lineno = self.end_lineno = line
        self.col_offset = offset
        self.end_col_offset = offset + length


def apply(path: str, data: bytes, conv: Conversion) -> Conversion:
    """The hook into the config conversion: ``conv`` (formats/configs.py's result) plus the framework
    settings. A value this module reports replaces the generic "cuda value not converted" finding there."""
    if not may_match(data):
        return conv
    base = conv.new if conv.new is not None else data
    extra = framework_config(path, base)
    if not extra.records:
        return conv
    mine = {(r.line, r.old or r.api) for r in extra.records} | {(r.line, "cuda") for r in extra.records}
    kept = [r for r in conv.records if r.is_change or (r.line, r.api) not in mine]
    records = sorted(kept + extra.records, key=lambda r: (r.line, r.col))
    new = extra.new if extra.new is not None else conv.new
    return Conversion(new, records)
