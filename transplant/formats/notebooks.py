"""Jupyter notebooks: code cells go through the Python engine; everything else is kept.

The code cells are converted together, as one program, because they share one namespace (``import
torch`` in one cell, ``torch.cuda`` in the next). Lines that are IPython syntax rather than Python
(``%magic``, ``!shell``, ``info = !shell``, ``?help``) are masked with a comment of the same length while
the cells are converted and put back afterwards. A cell that still does not parse is converted on its
own (and reported as not converted). ``%%bash`` cells, ``!cmd``, ``x = !cmd``, ``%sx`` and ``%env`` lines get
the shell-script treatment (environment variables; commands such as ``nvidia-smi`` replaced or
reported, see shell.py). The file keeps its JSON layout (indent, escapes, final newline).
"""

from __future__ import annotations

import json
import re

from ..engine import convert as convert_source
from ..records import Conversion, Record, SourceError, not_converted_record, skips_file
from ..project import ProjectFacts
from ..project.calls import python_findings
from ..project.pynames import parse
from ..rules import RuleSet
from ..session import Session
from .shell import convert_shell_script

# IPython lines that are not Python: magics, shell escapes (also assigned: "info = !nvidia-smi"), help
MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*\w[\w.]*\?\??\s*$|^\s*[A-Za-z_][\w.]*\s*=\s*[!%]")


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


# where a line's shell text starts: "!cmd", "!!cmd", "files = !ls", "%sx cmd", "%system cmd", "%env VAR=1"
SHELL_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?(?:!!?|%(?:sx|system|env|set_env)\b)")
# cells that are shell scripts as a whole (their first line is the magic); %%writefile of a script too
SHELL_CELL = re.compile(r"^\s*(%%(bash|sh)\b|%%script\s+(ba)?sh\b|%%writefile\s+(-a\s+)?\S+\.(ba)?sh\s*$)")


def _shell_lines(text: str, number: int, rules: RuleSet) -> tuple[str, list[Record]]:
    """Shell lines (``!cmd``, ``x = !cmd``, ``%sx``, ``%env``) and ``%%bash`` cells get what shell
    scripts get: environment variables renamed, commands replaced or reported (ShellCommandRule).
    Positions are the cell's line and the column in that line."""
    lines = _lines(text)
    whole = bool(lines) and SHELL_CELL.match(lines[0]) is not None
    records: list[Record] = []
    for i, line in enumerate(lines):
        if whole:
            if i == 0:
                continue  # the magic itself
            offset = 0
        else:
            match = SHELL_LINE.match(line)
            if match is None:
                continue
            offset = match.end()
        conv = convert_shell_script(line[offset:].encode("utf-8"), rules)
        for r in conv.records:
            r.line = r.end_line = i + 1
            r.col += offset
            r.end_col += offset
            r.cell = number
            records.append(r)
        if conv.new is not None:
            lines[i] = line[:offset] + conv.new.decode("utf-8")
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


def _program(cells: list[tuple[int, dict, str]]) -> tuple[str, list[tuple[int, int]], dict[int, dict[int, str]]]:
    """The code cells as one program: each cell after a marker line, IPython lines masked. Returns
    (the program, (line of each marker, cell number), the masked lines of each cell)."""
    parts: list[str] = []
    masks: dict[int, dict[int, str]] = {}
    starts: list[tuple[int, int]] = []  # (line of the marker, cell number)
    line = 1
    for number, _cell, text in cells:
        masked, masks[number] = _mask(text)
        parts.append(CELL_MARK.format(number) + "\n" + masked + ("" if masked.endswith("\n") else "\n"))
        starts.append((line, number))
        line += parts[-1].count("\n")
    return "".join(parts), starts, masks


def _to_cells(records: list[Record], starts: list[tuple[int, int]]) -> list[Record]:
    """Records of a program made by ``_program`` as records of its cells: the line in the cell whose
    marker is the last one above the record (an import added at the very top belongs to the first
    cell), ``cell`` the cell's number."""
    out = []
    for r in records:
        mark_line, number = next((start for start in reversed(starts) if start[0] < r.line), (r.line - 1, starts[0][1]))
        span = r.end_line - r.line
        r.line -= mark_line
        r.end_line = r.line + span
        r.cell = number
        out.append(r)
    return out


def _convert_together(cells: list[tuple[int, dict, str]], rules: RuleSet):
    """Convert all code cells as one program (they share one namespace: an import in one cell
    binds names used in the next). Returns ({cell number: new text or None}, records), or the
    number of a cell that does not parse."""
    combined, starts, masks = _program(cells)
    try:
        conv = convert_source(combined.encode("utf-8"), rules)
    except SourceError as exc:
        # the cell the error is in: it is converted on its own (and reported), the rest together
        mark_line, number = next((start for start in reversed(starts) if start[0] < exc.line), starts[0])
        return number
    records = _to_cells(conv.records, starts)
    if conv.new is None:
        return {}, records
    new_texts: dict[int, str | None] = {}
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
            conv = convert_source(masked_text.encode("utf-8"), rules)
        except SourceError as exc:
            record = not_converted_record(str(exc), exc.line, exc.col, level="note")
            record.cell = number
            records.append(record)
            continue
        for r in conv.records:
            r.cell = number
        records.extend(conv.records)
        if conv.new is not None:
            new_texts[number] = _unmask(conv.new.decode("utf-8"), masked)
    return new_texts, records


def project_findings(data: bytes, facts: ProjectFacts) -> list[Record]:
    """The project scan of a notebook's code cells (project/calls.py: calls of the project's custom
    operators, TP204; CUDA builds such as ``load_inline``, TP205), read as one program as the
    conversion reads them (``import my_ext`` in one cell, ``my_ext.op()`` in the next); when they do
    not parse together, cell by cell. Positions are the cell's line and column."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return []  # (the conversion reports it)
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return []
    cells = _code_cells(nb)
    if not cells:
        return []
    combined = _program(cells)[0].encode("utf-8")
    groups = [cells] if parse(combined) is not None else [[cell] for cell in cells]
    records: list[Record] = []
    for group in groups:
        program, starts, _masks = _program(group)
        records += _to_cells(python_findings(program.encode("utf-8"), facts), starts)
    return records


def record_order(r: Record) -> tuple[int, int, int]:
    return (r.cell, r.line, r.col)


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
        original = _cell_text(cell)
        text_now = new_text if new_text is not None else original
        if not skips_file(text_now.encode("utf-8")):
            shell_text, shell_records = _shell_lines(text_now, number, rules)
            if shell_records:
                if new_text is not None:  # the engine may have added import lines: records count the cell's own
                    shell_records = _shell_lines(original, number, rules)[1]
                records.extend(shell_records)
            if shell_text != text_now:  # (findings alone change nothing)
                new_text = shell_text
        if new_text is None:
            continue
        changed = True
        cell["source"] = _lines(new_text) if isinstance(cell.get("source"), list) else new_text
    records.sort(key=record_order)
    if not changed:
        return Conversion(None, records)
    indent, ensure_ascii, newline = _json_style(text)
    out = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")
    if "\r\n" in text:  # a notebook saved with Windows line endings keeps them
        out = out.replace("\n", "\r\n")
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    return Conversion(bom + out.encode("utf-8"), records)


def convert(path: str, data: bytes, session: Session) -> Conversion:
    """The file kind "notebook" (transplant.filekinds): the conversion of the code cells, plus the
    project scan's findings in them (as for a Python file)."""
    conv = convert_notebook(data, session.rules)
    if not session.facts.may_match(data):
        return conv
    found = project_findings(data, session.facts)
    if not found:
        return conv
    # a project finding replaces the engine's generic one of the same API at the same place
    mine = {(r.cell, r.line, r.api) for r in found}
    kept = [r for r in conv.records if r.is_change or (r.cell, r.line, r.api) not in mine]
    return Conversion(conv.new, sorted(kept + found, key=record_order))
