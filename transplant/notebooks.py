"""Jupyter notebooks: code cells go through the Python engine; everything else is kept.

Lines that are IPython syntax rather than Python (``%magic``, ``!shell``, ``?help``) are masked with
a comment of the same length while the cell is converted and put back afterwards. A cell that still
does not parse (``%%bash`` cells, say) is left as it is and reported.
"""

from __future__ import annotations

import json
import re

from .engine import CODES, Conversion, Record, SourceError, convert
from .rules import RuleSet

MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*\w[\w.]*\?\??\s*$")


def _mask(source: str) -> tuple[str, dict[int, str]]:
    lines = source.split("\n")
    masked: dict[int, str] = {}
    for i, line in enumerate(lines):
        if MAGIC.match(line):
            masked[i] = line
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + "#" + "~" * max(0, len(line) - len(indent) - 1)
    return "\n".join(lines), masked


def _unmask(source: str, masked: dict[int, str]) -> str:
    lines = source.split("\n")
    # the engine may add import lines; masked lines keep their order and are found by content
    out = []
    order = sorted(masked.items())
    k = 0
    for line in lines:
        stripped = line.lstrip()
        if k < len(order) and stripped.startswith("#") and set(stripped[1:]) <= {"~"} and len(line) == len(order[k][1]):
            out.append(order[k][1])
            k += 1
        else:
            out.append(line)
    return "\n".join(out)


def convert_notebook(data: bytes, rules: RuleSet) -> Conversion:
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"not a valid notebook (JSON): {exc}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SourceError("not a valid notebook: no 'cells' list")
    records: list[Record] = []
    changed = False
    for index, cell in enumerate(nb["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        as_list = isinstance(source, list)
        text = "".join(source) if as_list else str(source)
        if text.lstrip().startswith("%%"):
            continue  # cell magic: the whole cell is not Python
        masked_text, masked = _mask(text)
        try:
            conv = convert(masked_text.encode("utf-8"), rules)
        except SourceError as exc:
            records.append(Record(exc.line, exc.col, exc.line, exc.col, CODES["syntax"], "note", "parse",
                                  f"cell {index}: not converted: {exc}", "builtin"))
            continue
        for r in conv.records:
            r.message = f"cell {index}: {r.message}"
        records.extend(conv.records)
        if conv.new is None:
            continue
        new_text = _unmask(conv.new.decode("utf-8"), masked)
        changed = True
        if as_list:
            parts = new_text.splitlines(keepends=True)
            cell["source"] = parts
        else:
            cell["source"] = new_text
    if not changed:
        return Conversion(None, records)
    out = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    return Conversion(out.encode("utf-8"), records)
