"""Frameworks that choose CUDA through a setting (rules/project/frameworks.json), in Python files.

* Hugging Face transformers' attention implementation: ``attn_implementation="flash_attention_2"``
  as a keyword of any call (``from_pretrained``, ``from_config``, a config class, ``dict(...)``), as
  a value assigned to ``<x>.attn_implementation`` / ``<x>._attn_implementation`` or to such a
  key of a mapping, in a dict literal, and ``use_flash_attention_2=True``: one finding at the value,
  with the NPU route (transformers' own NPU flash attention, or ``sdpa``).
* Lightning's ``accelerator="gpu"`` / ``"cuda"`` (a keyword of any call in a file that imports
  lightning, pytorch_lightning or lightning_fabric): reported, not rewritten; Lightning has no NPU
  accelerator upstream.

* Settings that ask for CUDA devices in a library's own terms (``settings`` of the data file):
  ``from_pretrained(load_in_8bit=True)`` (bitsandbytes), Ray's ``num_gpus=`` and ``{"GPU": 1}``
  bundles, Lightning 1.x's ``gpus=`` and ``accelerator="ddp"``: one finding at the value, with the
  NPU route. A keyword given as a variable, ``0``, ``None`` or ``False`` asks for nothing and says
  nothing.

Code that uses DeepSpeed's ``get_accelerator()`` needs nothing and gets nothing. Works on a CPython
``ast`` tree; never rewrites code. The configuration files' side is formats/framework_configs.py.
"""

from __future__ import annotations

import ast
from typing import Protocol

from ..records import CODES, Record
from ..resources import project_data
from .pynames import column, nodes

DATA = "frameworks.json"
RULE = "frameworks.json"
# a file is scanned only when its bytes contain one of these (project.STATIC_WORDS)
WORDS = (
    b"attn_implementation",
    b"use_flash_attention_2",
    b"accelerator",
    b"load_in_8bit",
    b"load_in_4bit",
    b"num_gpus",
    b"gpus",
    b"GPU",
)


class Position(Protocol):
    """Where a finding is, as an ``ast`` node has it (formats/framework_configs.py makes its own)."""

    @property
    def lineno(self) -> int: ...
    @property
    def col_offset(self) -> int: ...
    @property
    def end_lineno(self) -> int | None: ...
    @property
    def end_col_offset(self) -> int | None: ...


def _record(
    lines: list[str],
    node: Position,
    code: str,
    level: str,
    api: str,
    message: str,
    suggestion: str,
) -> Record:
    col = column(lines, node.lineno, node.col_offset)
    end_line = node.end_lineno or node.lineno
    end_col = column(lines, end_line, node.end_col_offset or node.col_offset)
    return Record(
        node.lineno,
        col,
        end_line,
        end_col,
        code,
        level,
        "framework setting",
        message,
        RULE,
        api=api,
        suggestion=suggestion,
    )


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def attention_record(lines: list[str], node: Position, value: str) -> Record | None:
    facts = project_data(DATA)["attention"]
    entry = facts["values"].get(value)
    if entry is None:
        return None
    return _record(lines, node, CODES["library"], entry["level"], value, entry["message"], entry["suggestion"])


def _key_name(target: ast.AST) -> str | None:
    """``x.attn_implementation`` -> its attribute; ``cfg["attn_implementation"]`` -> the key."""
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript):
        return _text(target.slice)
    return None


def _attention(tree: ast.Module, lines: list[str]) -> list[Record]:
    facts = project_data(DATA)["attention"]
    keys, flags = set(facts["keys"]), set(facts["flags"])
    found: list[tuple[ast.expr | ast.keyword, str]] = []
    for node in nodes(tree):
        if isinstance(node, ast.keyword) and node.arg in keys and (text := _text(node.value)):
            found.append((node.value, text))
        elif (
            isinstance(node, ast.keyword)
            and node.arg in flags
            and isinstance(node.value, ast.Constant)
            and node.value.value is True
        ):
            found.append((node, "flash_attention_2"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value and (text := _text(node.value)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_key_name(t) in keys for t in targets):
                found.append((node.value, text))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if _text(key) in keys and (text := _text(value)):
                    found.append((value, text))
    records = [attention_record(lines, node, value) for node, value in found]
    return [r for r in records if r is not None]


def lightning_record(lines: list[str], node: Position, value: str) -> Record:
    facts = project_data(DATA)["lightning"]
    return _record(
        lines,
        node,
        CODES["project_file"],
        "warning",
        "lightning accelerator",
        facts["message"].format(value=value),
        facts["suggestion"],
    )


def _imports_lightning(names: dict[str, str]) -> bool:
    roots = set(project_data(DATA)["lightning"]["modules"])
    return any(q.split(".", 1)[0] in roots for q in names.values())


def _lightning(tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[Record]:
    facts = project_data(DATA)["lightning"]
    if not _imports_lightning(names):
        return []
    records = []
    for node in nodes(tree):
        if (
            isinstance(node, ast.keyword)
            and node.arg == facts["keyword"]
            and (text := _text(node.value)) is not None
            and text in facts["values"]
        ):
            records.append(lightning_record(lines, node.value, text))
    return records


def _asks(value: ast.expr, wanted: object) -> str | None:
    """The constant ``value`` as text when it is one that asks for CUDA (see the data file)."""
    if not isinstance(value, ast.Constant) or value.value is None or value.value is False:
        return None
    if wanted == "nonzero":
        if isinstance(value.value, bool) or not isinstance(value.value, (int, float, str)):
            return None
        text = str(value.value)
        return None if text.strip() in ("", "0", "0.0", "[]") else text
    if (
        isinstance(wanted, list)
        and value.value in wanted
        and type(value.value) is type(wanted[wanted.index(value.value)])
    ):
        return str(value.value)
    return None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _fill(text: str, keyword: str, value: str) -> str:
    """``{keyword}`` and ``{value}`` filled in (the texts hold other braces: ``{"NPU": n}``)."""
    return text.replace("{keyword}", keyword).replace("{value}", value)


def _setting_record(lines: list[str], node: Position, entry: dict, keyword: str, value: str) -> Record:
    return _record(
        lines,
        node,
        CODES[entry["code"]],
        entry["level"],
        entry["api"],
        _fill(entry["message"], keyword, value),
        _fill(entry["suggestion"], keyword, value),
    )


def _settings(tree: ast.Module, names: dict[str, str], lines: list[str], data: bytes) -> list[Record]:
    roots = {q.split(".", 1)[0] for q in names.values()}
    records: list[Record] = []
    for entry in project_data(DATA)["settings"]["entries"]:
        if "modules" in entry and not roots & set(entry["modules"]):
            continue
        if not any(w.encode() in data for w in entry.get("keywords", entry.get("dict_keys", []))):
            continue
        calls = set(entry.get("calls", ()))
        for node in nodes(tree):
            if "keywords" in entry and isinstance(node, ast.Call) and (not calls or _callee(node) in calls):
                for kw in node.keywords:
                    if (
                        kw.arg
                        and kw.arg in entry["keywords"]
                        and (text := _asks(kw.value, entry["values"])) is not None
                    ):
                        records.append(_setting_record(lines, kw.value, entry, kw.arg, text))
            elif "dict_keys" in entry and isinstance(node, ast.Dict):
                for key in node.keys:
                    if key is not None and (text := _text(key)) is not None and text in entry["dict_keys"]:
                        records.append(_setting_record(lines, key, entry, text, text))
    return records


def framework_records(data: bytes, tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[Record]:
    """The findings of one Python file (its bytes contain one of ``WORDS``)."""
    records: list[Record] = []
    if b"attn_implementation" in data or b"use_flash_attention_2" in data:
        records += _attention(tree, lines)
    if b"accelerator" in data:
        records += _lightning(tree, names, lines)
    records += _settings(tree, names, lines, data)
    return records
