"""The report's .xlsx writer (transplant/reports/xlsx.py), read back with openpyxl."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl

from transplant.reports.xlsx import BOLD, PERCENT, Sheet, column_letter, write_workbook


def test_cells_styles_and_layout_read_back(tmp_path: Path):
    tricky = "a < b & c > \"d\" 'e'  \u4e2d\u6587 \U0001f600"
    sheets = [
        Sheet(
            "Unsupported",
            ["File", "Line", "Note"],
            [40, 8, 20],
            [["x.py", 3, tricky], ["y.py", 10, ""], ["'=1+1", 0, "  padded  "]],
        ),
        Sheet("It's", ["Rate"], [10], [[0.25], [1.0]], styles={(2, 1): PERCENT, (3, 1): BOLD}),
    ]
    path = tmp_path / "out.xlsx"
    write_workbook(path, sheets)
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["Unsupported", "It's"]
    ws = wb["Unsupported"]
    assert [tuple(c.value for c in row) for row in ws.iter_rows()] == [
        ("File", "Line", "Note"),
        ("x.py", 3, tricky),
        ("y.py", 10, None),
        ("'=1+1", 0, "  padded  "),
    ]
    assert ws.freeze_panes == "A2" and ws.auto_filter.ref == "A1:C4"
    assert ws.column_dimensions["A"].width == 40 and ws.column_dimensions["C"].width == 20
    header = ws[1][0]
    assert header.font.b and header.fill.fgColor.rgb == "00305496" and header.font.color.rgb == "00FFFFFF"
    assert ws["A3"].data_type != "f" and ws["A4"].data_type != "f"  # text is never a formula
    rates = wb["It's"]
    assert rates["A2"].number_format == "0.0%" and rates["A2"].value == 0.25
    assert rates["A3"].font.b and rates["A3"].value == 1.0
    # the same sheets give the same bytes (fixed dates in the archive)
    again = tmp_path / "again.xlsx"
    write_workbook(again, sheets)
    assert again.read_bytes() == path.read_bytes()
    assert zipfile.ZipFile(path).testzip() is None


def test_characters_xml_cannot_carry_are_escaped(tmp_path: Path):
    path = tmp_path / "ctl.xlsx"
    write_workbook(path, [Sheet("S", ["Message"], [10], [["bell\x07 and _x0041_ literal"]])])
    xml = zipfile.ZipFile(path).read("xl/worksheets/sheet1.xml").decode()
    # the format's own escape (ECMA-376 ST_Xstring): Excel shows the bell and the literal text again;
    # a literal "_x0041_" has its underscore escaped so that it is not read as an escape
    assert "bell_x0007_ and _x005F_x0041_ literal" in xml
    assert openpyxl.load_workbook(path)["S"]["A2"].value.startswith("bell")  # well-formed XML


def test_column_letters():
    assert [column_letter(n) for n in (1, 7, 26, 27, 52, 703)] == ["A", "G", "Z", "AA", "AZ", "AAA"]
