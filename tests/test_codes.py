"""The one table of diagnostic codes (transplant/codes.py): the documentation's tables are generated
from it (``readme_table``), and records, SARIF and the console read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from goldens import updating
from transplant.codes import BY_CODE, DISTRIBUTED, MAIN_HEADER, DISTRIBUTED_HEADER, TABLE, readme_table
from transplant.records import CODES, OPERATION, not_converted_record
from transplant.reports.diagnostics import sarif_log

LEVELS = {"error", "warning", "note"}


def documents() -> list[Path]:
    """README and the docs pages it links to (the tables may live in either)."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def markdown_tables(text: str) -> list[str]:
    """Every Markdown table of a document, as its lines (a table: consecutive lines starting with '|')."""
    return [m.group(0) for m in re.finditer(r"(?m)^(?:\|.*\n)+", text)]


@pytest.mark.parametrize("which, header", [("main", MAIN_HEADER), ("distributed", DISTRIBUTED_HEADER)])
def test_the_documented_table_is_exactly_the_generated_one(which, header):
    first = f"| {header[0]} | {header[1]} |\n"
    found = [
        (path, table)
        for path in documents()
        if path.is_file()
        for table in markdown_tables(path.read_text(encoding="utf-8"))
        if table.startswith(first)
    ]
    assert len(found) == 1, f"the {which} table of codes should be in exactly one document: {found}"
    path, table = found[0]
    if updating() and table != readme_table(which):  # the regenerate switch writes the table in
        path.write_text(path.read_text(encoding="utf-8").replace(table, readme_table(which)), encoding="utf-8")
        table = readme_table(which)
    assert table == readme_table(which), (
        f"{path.name}'s {which} table of codes differs from transplant/codes.py; regenerate it with "
        f"pytest --update-goldens tests/test_codes.py"
    )


def test_every_code_has_one_row_with_what_the_outputs_need():
    codes = [c.code for c in TABLE]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    assert len({c.key for c in TABLE}) == len(TABLE) and len({c.name for c in TABLE}) == len(TABLE)
    for c in TABLE:
        assert re.fullmatch(r"TP\d{3}", c.code), c
        assert c.level in LEVELS, c
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c.name), c
        assert c.description and "\n" not in c.description and "|" not in c.description, c
        assert c.help and "\n" not in c.help and "|" not in c.help, c
    assert [c.code for c in DISTRIBUTED] == [f"TP30{i}" for i in range(1, 7)]


def test_records_and_sarif_derive_from_the_table():
    assert CODES == {c.key: c.code for c in TABLE}
    assert OPERATION["rename"] == "API rename" and OPERATION["dist_ddp"] == "distributed"
    assert "no_counterpart" not in OPERATION  # findings have no change-list operation
    assert not_converted_record("x").code == "TP900"
    rules = sarif_log([])["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [c.code for c in TABLE]
    for rule in rules:
        code = BY_CODE[rule["id"]]
        assert rule["name"] == code.name and rule["defaultConfiguration"]["level"] == code.level
        assert rule["shortDescription"]["text"] == code.description
        assert rule["help"]["markdown"] == code.help and "`" not in rule["help"]["text"]


def test_an_unknown_table_is_refused():
    with pytest.raises(ValueError, match="unknown table"):
        readme_table("nope")
