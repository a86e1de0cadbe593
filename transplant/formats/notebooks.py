"""Jupyter notebooks: code cells go through the Python engine; everything else is kept.

The code cells are converted together, as one program, because they share one namespace (``import
torch`` in one cell, ``torch.cuda`` in the next). Lines that are IPython syntax rather than Python
(``%magic``, ``!shell``, ``?help``) are masked with a comment of the same length while the cells are
converted and put back afterwards. A cell that still does not parse is converted on its own (and
reported as not converted); ``%%bash`` cells, ``!cmd`` and ``%env`` lines get the shell-script
treatment (environment variables). The file keeps its JSON layout (indent, escapes, final newline).
"""

from __future__ import annotations

import json
import re

from ..engine import convert
from ..records import Conversion, Record, SourceError, not_converted_record, skips_file
from ..rules import RuleSet
from .shell import convert_shell

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


SHELL_LINE = re.compile(r"^\s*(!|%env\b|%set_env\b|%%(bash|sh)\b|%%script\s+(ba)?sh\b)")
SHELL_CELL = re.compile(r"^\s*(%%(bash|sh)\b|%%script\s+(ba)?sh\b)")


def _shell_lines(text: str, number: int, rules: RuleSet) -> tuple[str, list[Record]]:
    """Environment variables in shell lines (``!cmd``, ``%env``) and ``%%bash`` cells."""
    lines = _lines(text)
    whole = bool(lines) and SHELL_CELL.match(lines[0]) is not None
    records: list[Record] = []
    for i, line in enumerate(lines):
        if not (whole and i > 0) and not SHELL_LINE.match(line):
            continue
        conv = convert_shell(line.encode("utf-8"), rules)
        for r in conv.records:
            r.line = r.end_line = i + 1
            r.message = f"cell {number}: {r.message}"
            records.append(r)
        if conv.new is not None:
            lines[i] = conv.new.decode("utf-8")
    return "".join(lines), records


MAX_RETRIES = 8


def _lines(text: str) -> list[str]:
    """Lines as Jupyter stores them: split after each "\n" only (not at other line breaks)."""
    return re.findall(r"[^\n]*\n|[^\n]+", text)


CELL_MARK = "__transplant_cell__({})"
_CELL_MARK = re.compile(r"^__transplant_cell__\((\d+)\)$")


def _json_style(text: str) -> tuple[int | None, bool, bool]:
    """(indent, ensure_ascii, trailing newline) of a notebook file, so a rewrite keeps its layout."""
    match = re.search(r"\n([ \t]*)\S", text)
    indent = len(match.group(1)) if match else None
    ensure_ascii = text.isascii() and "\\u" in text
    return indent, ensure_ascii, text.endswith("\n")


def _cell_text(cell: dict) -> str:
    """A cell's source as one string (Jupyter stores it as a string or a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _code_cells(nb: dict) -> list[tuple[int, dict, str]]:
    """(1-based cell number, cell, source text) of the code cells that are Python."""
    out = []
    for index, cell in enumerate(nb["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _cell_text(cell)
        if text.lstrip().startswith("%%"):
            continue  # cell magic: the whole cell is not Python
        if skips_file(text.encode("utf-8")):
            continue  # "# transplant: skip-file" in a notebook applies to its cell
        out.append((index, cell, text))
    return out


def _convert_together(cells: list[tuple[int, dict, str]], rules: RuleSet):
    """Convert all code cells as one program (they share one namespace: an import in one cell
    binds names used in the next). Returns ({cell number: new text or None}, records), or the
    number of a cell that does not parse."""
    parts: list[str] = []
    masks: dict[int, dict[int, str]] = {}
    for number, _cell, text in cells:
        masked, masks[number] = _mask(text)
        parts.append(CELL_MARK.format(number) + "\n" + masked + ("" if masked.endswith("\n") else "\n"))
    combined = "".join(parts)
    # records: combined line -> (cell, line in cell)
    starts: list[tuple[int, int]] = []  # (line of the marker, cell number)
    line = 1
    for (number, _cell, _text), part in zip(cells, parts):
        starts.append((line, number))
        line += part.count("\n")
    try:
        conv = convert(combined.encode("utf-8"), rules)
    except SourceError as exc:
        # the cell the error is in: it is converted on its own (and reported), the rest together
        mark_line, number = next((start for start in reversed(starts) if start[0] < exc.line), starts[0])
        return number
    records = []
    for r in conv.records:
        # the cell whose marker is the last one above the record (an import added at the very top
        # belongs to the first cell)
        mark_line, number = next((start for start in reversed(starts) if start[0] < r.line), (r.line - 1, starts[0][1]))
        span = r.end_line - r.line
        r.line -= mark_line
        r.end_line = r.line + span
        r.message = f"cell {number}: {r.message}"
        records.append(r)
    if conv.new is None:
        return {}, records
    new_texts: dict[int, str] = {}
    current: int | None = None
    chunks: dict[int, list[str]] = {}
    prefix: list[str] = []  # lines the engine put before the first cell (added imports)
    for piece in _lines(conv.new.decode("utf-8")):
        match = _CELL_MARK.match(piece.rstrip("\r\n"))
        if match:
            current = int(match.group(1))
            chunks[current] = prefix if not chunks else []
            prefix = []
            continue
        (chunks[current] if current is not None else prefix).append(piece)
    for number, _cell, text in cells:
        new_text = _unmask("".join(chunks.get(number, [])), masks[number])
        if not text.endswith("\n") and new_text.endswith("\n"):
            new_text = new_text[:-1]
        new_texts[number] = new_text if new_text != text else None
    return new_texts, records


def _convert_each(cells: list[tuple[int, dict, str]], rules: RuleSet):
    """Cell by cell, for notebooks whose cells do not parse together."""
    new_texts: dict[int, str | None] = {}
    records: list[Record] = []
    for number, _cell, text in cells:
        masked_text, masked = _mask(text)
        try:
            conv = convert(masked_text.encode("utf-8"), rules)
        except SourceError as exc:
            record = not_converted_record(str(exc), exc.line, exc.col, level="note")
            record.message = f"cell {number}: {record.message}"
            records.append(record)
            continue
        for r in conv.records:
            r.message = f"cell {number}: {r.message}"
        records.extend(conv.records)
        if conv.new is not None:
            new_texts[number] = _unmask(conv.new.decode("utf-8"), masked)
    return new_texts, records


def _record_order(r: Record) -> tuple[int, int, int]:
    match = re.match(r"cell (\d+): ", r.message)
    return (int(match.group(1)) if match else 0, r.line, r.col)


def convert_notebook(data: bytes, rules: RuleSet) -> Conversion:
    try:
        text = data.decode("utf-8-sig")
        nb = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"not a valid notebook (JSON): {exc}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise SourceError("not a valid notebook: no 'cells' list")
    cells = _code_cells(nb)
    apart: list[tuple[int, dict, str]] = []
    together = _convert_together(cells, rules) if cells else ({}, [])
    while isinstance(together, int):
        apart += [c for c in cells if c[0] == together]
        cells = [c for c in cells if c[0] != together]
        if len(apart) >= MAX_RETRIES:  # many broken cells: no more whole-notebook attempts
            apart, cells = apart + cells, []
        together = _convert_together(cells, rules) if cells else ({}, [])
    new_texts, records = together
    if apart:
        apart_texts, apart_records = _convert_each(apart, rules)
        new_texts.update(apart_texts)
        records += apart_records
    changed = False
    for number, cell in enumerate(nb["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        new_text = new_texts.get(number)
        text_now = new_text if new_text is not None else _cell_text(cell)
        if not skips_file(text_now.encode("utf-8")):
            shell_text, shell_records = _shell_lines(text_now, number, rules)
            if shell_records:
                records.extend(shell_records)
                if shell_text != text_now:  # a variable only reported changes nothing
                    new_text = shell_text
        if new_text is None:
            continue
        changed = True
        cell["source"] = _lines(new_text) if isinstance(cell.get("source"), list) else new_text
    records.sort(key=_record_order)
    if not changed:
        return Conversion(None, records)
    indent, ensure_ascii, newline = _json_style(text)
    out = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")
    if "\r\n" in text:  # a notebook saved with Windows line endings keeps them
        out = out.replace("\n", "\r\n")
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    return Conversion(bom + out.encode("utf-8"), records)
