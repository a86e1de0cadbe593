"""A small .xlsx (Office Open XML spreadsheet) writer for the reports: tables of text and numbers.

Owns the file format only: sheets of rows (str, int, float) with a styled, frozen, filterable
header row, column widths, and a few cell styles (bold, percent). What goes into the cells is
repository.py's business. Written with the standard library (zipfile) because importing and running
a general spreadsheet library cost about a quarter of a small repository run; openpyxl reads the
result back in the tests.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
# cell styles (indexes into cellXfs of STYLES)
PLAIN, HEADER, PERCENT, BOLD, BOLD_PERCENT = range(5)
STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="{MAIN}"><numFmts count="1"><numFmt numFmtId="164" formatCode="0.0%"/></numFmts><fonts count="3"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><color rgb="00FFFFFF"/><name val="Calibri"/><family val="2"/></font><font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts><fills count="3"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill><fill><patternFill patternType="solid"><fgColor rgb="00305496"/><bgColor indexed="64"/></patternFill></fill></fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="5"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="0" fontId="1" fillId="2" borderId="0" xfId="0" applyFont="1" applyFill="1" applyAlignment="1"><alignment vertical="center"/></xf><xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="0" fontId="2" fillId="0" borderId="0" xfId="0" applyFont="1"/><xf numFmtId="164" fontId="2" fillId="0" borderId="0" xfId="0" applyFont="1" applyNumberFormat="1"/></cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>"""
# characters XML 1.0 cannot carry: written as the format's own escape, _xHHHH_
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|_(?=x[0-9A-Fa-f]{4}_)")


@dataclass
class Sheet:
    title: str
    header: list[str]
    widths: list[float]
    rows: list[list[object]] = field(default_factory=list)
    styles: dict[tuple[int, int], int] = field(default_factory=dict)  # (row, column), 1-based -> style


def column_letter(n: int) -> str:
    letters = ""
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _text(value: str) -> str:
    value = _ILLEGAL.sub(lambda m: f"_x{ord(m.group()):04X}_", value)
    # XML's markup characters, and the quote, as the text also goes into attribute values (sheet
    # names); xml.sax.saxutils would do it, but importing it brings urllib, http and ssl
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _cell(ref: str, value: object, style: int) -> str:
    s = f' s="{style}"' if style else ""
    if value is None or value == "":
        return f'<c r="{ref}"{s}/>' if style else ""
    if isinstance(value, bool):
        return f'<c r="{ref}"{s} t="b"><v>{int(value)}</v></c>'
    if isinstance(value, (int, float)):
        return f'<c r="{ref}"{s} t="n"><v>{value!r}</v></c>'
    text = _text(str(value))
    space = ' xml:space="preserve"' if text != text.strip() else ""
    return f'<c r="{ref}"{s} t="inlineStr"><is><t{space}>{text}</t></is></c>'


def _sheet_xml(sheet: Sheet) -> str:
    last_col = column_letter(len(sheet.header))
    last_row = len(sheet.rows) + 1
    out = [f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{MAIN}" xmlns:r="{REL}">',
           f'<dimension ref="A1:{last_col}{last_row}"/>',
           '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft"'
           ' state="frozen"/><selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>',
           '<sheetFormatPr defaultRowHeight="15"/><cols>']
    out += [f'<col min="{i}" max="{i}" width="{w}" customWidth="1"/>' for i, w in enumerate(sheet.widths, start=1)]
    out.append("</cols><sheetData>")
    for r, row in enumerate([sheet.header, *sheet.rows], start=1):
        cells = "".join(_cell(f"{column_letter(c)}{r}", value, HEADER if r == 1 else sheet.styles.get((r, c), PLAIN))
                        for c, value in enumerate(row, start=1))
        out.append(f'<row r="{r}">{cells}</row>')
    out.append(f'</sheetData><autoFilter ref="A1:{last_col}{last_row}"/>'
               '<pageMargins left="0.75" right="0.75" top="1" bottom="1" header="0.5" footer="0.5"/></worksheet>')
    return "".join(out)


def _quoted(title: str) -> str:
    return "'" + title.replace("'", "''") + "'"


def write_workbook(path: Path, sheets: list[Sheet]) -> None:
    """Write ``sheets`` to ``path`` as one .xlsx file."""
    n = len(sheets)
    content_types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
        + "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
                  for i in range(1, n + 1))
        + "</Types>")
    package_rels = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG_REL}">'
        f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
    names = "".join(
        f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">{_text(_quoted(s.title))}'
        f'!$A$1:${column_letter(len(s.header))}${len(s.rows) + 1}</definedName>' for i, s in enumerate(sheets))
    workbook = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<workbook xmlns="{MAIN}" xmlns:r="{REL}">'
        '<bookViews><workbookView activeTab="0"/></bookViews><sheets>'
        + "".join(f'<sheet name="{_text(s.title)}" sheetId="{i}" r:id="rId{i}"/>' for i, s in enumerate(sheets, start=1))
        + f"</sheets><definedNames>{names}</definedNames></workbook>")
    workbook_rels = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG_REL}">'
        + "".join(f'<Relationship Id="rId{i}" Type="{REL}/worksheet" Target="worksheets/sheet{i}.xml"/>'
                  for i in range(1, n + 1))
        + f'<Relationship Id="rId{n + 1}" Type="{REL}/styles" Target="styles.xml"/></Relationships>')
    parts = [("[Content_Types].xml", content_types), ("_rels/.rels", package_rels), ("xl/workbook.xml", workbook),
             ("xl/_rels/workbook.xml.rels", workbook_rels), ("xl/styles.xml", STYLES)]
    parts += [(f"xl/worksheets/sheet{i}.xml", _sheet_xml(s)) for i, s in enumerate(sheets, start=1)]
    with zipfile.ZipFile(path, "w") as z:
        for name, text in parts:  # a fixed date: the same results give the same bytes
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text.encode("utf-8"),
                       compress_type=zipfile.ZIP_DEFLATED)
