"""--format sarif: a SARIF 2.1.0 log, checked against a hand-written reduced schema of the standard."""

from __future__ import annotations

import copy
import io
import json
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from transplant import __version__
from transplant.cli import main
from transplant.reports.diagnostics import SARIF_LEVEL
from transplant.engine import CODES

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "filemodes"
SCHEMA = json.loads((FIXTURES / "sarif-2.1.0-reduced.schema.json").read_text())

FORMATS = jsonschema.FormatChecker(formats=())


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    has_target = bool(parts.netloc) or parts.scheme == "file" or bool(parts.path)
    return bool(parts.scheme) and has_target and " " not in value


@FORMATS.checks("uri-reference")
def _is_uri_reference(value: object) -> bool:
    return not isinstance(value, str) or (" " not in value and "\\" not in value and bool(value))


VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=FORMATS)


def errors_of(log: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(log)]


@pytest.fixture
def work(tmp_path, monkeypatch):
    target = tmp_path / "proj dir"  # a space, so that URIs must be percent-encoded
    shutil.copytree(FIXTURES, target)
    monkeypatch.chdir(target)
    return target


def sarif(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["--format", "sarif", *argv])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def as_json(capsys, *argv: str) -> list[dict]:
    main(["--format", "json", *argv])
    return json.loads(capsys.readouterr().out)


def test_schema_itself_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_check_log_is_valid_and_matches_the_json_diagnostics(work, capsys):
    argv = ("--check", "train.py", "run.sh", "broken.py", "clean.py")
    code, log = sarif(capsys, *argv)
    assert code == 2  # broken.py does not parse
    assert errors_of(log) == []
    assert log["version"] == "2.1.0" and log["$schema"].startswith("https://")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("transplant", __version__)
    assert {r["id"] for r in driver["rules"]} == set(CODES.values())
    items = as_json(capsys, *argv)
    assert len(run["results"]) == len(items) > 0
    for result, item in zip(run["results"], items):
        assert result["ruleId"] == item["code"]
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == SARIF_LEVEL[item["level"]]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": item["path"], "uriBaseId": "%SRCROOT%"}
        assert physical["region"] == {
            "startLine": item["line"],
            "startColumn": item["column"],
            "endLine": item["end_line"],
            "endColumn": item["end_column"],
        }
        assert item["message"] in result["message"]["text"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {
        "TP106": "warning",
        "TP102": "warning",
        "TP104": "warning",
        "TP101": "warning",
        "TP105": "warning",
        "TP201": "error",
        "TP203": "note",
        "TP900": "error",
    }
    fix = next(r for r in run["results"] if r["ruleId"] == "TP101")
    assert fix["properties"]["old"] == "torch.cuda.synchronize"
    assert fix["properties"]["new"] == "torch_npu.npu.synchronize"
    assert run["invocations"][0]["exitCode"] == 2


def test_relative_uris_resolve_against_srcroot_to_the_files(work, capsys):
    _, log = sarif(capsys, "--check", ".")
    run = log["runs"][0]
    root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root.startswith("file://") and " " not in root
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert "train.py" in uris
    for uri in uris:
        path = Path(unquote(urlsplit(root + uri).path))
        assert path.is_file() and path.parent == work


def test_absolute_paths_become_file_uris(work, capsys):
    _, log = sarif(capsys, "--check", str(work / "train.py"))
    assert errors_of(log) == []
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"]]
    assert locations and all("uriBaseId" not in loc for loc in locations)
    assert {loc["uri"] for loc in locations} == {(work / "train.py").as_uri()}
    assert "%20" in locations[0]["uri"]


def test_input_errors_are_tool_execution_notifications(work, capsys):
    code, log = sarif(capsys, "--check", "missing.py", "clean.py")
    assert code == 2
    assert errors_of(log) == []
    (invocation,) = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "missing.py" in note["message"]["text"]


def test_clean_run_is_a_valid_log_without_results(work, capsys):
    code, log = sarif(capsys, "--check", "clean.py")
    assert code == 0 and errors_of(log) == []
    run = log["runs"][0]
    assert run["results"] == []
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": 0, "toolExecutionNotifications": []}]


def test_columns_count_code_points(work, capsys):
    text = 's = "\u00e9t\u00e9 \U0001f600"; torch.cuda.synchronize()\n'
    Path("uni.py").write_text("import torch\n" + text, encoding="utf-8")
    _, log = sarif(capsys, "--check", "uni.py")
    assert errors_of(log) == []
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "TP101")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == region["endLine"] == 2
    assert text[region["startColumn"] - 1 : region["endColumn"] - 1] == "torch.cuda.synchronize"


def test_stdin_check_as_sarif(work, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((FIXTURES / "only_unsupported.py").read_bytes())))
    code, log = sarif(capsys, "--check", "-", "--stdin-filename", "src/only_unsupported.py")
    assert code == 1 and errors_of(log) == []
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "TP201" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/only_unsupported.py"


def test_levels_of_rules_and_results(work, capsys):
    """Changes still to make (TP30x of distributed mode too) and TP202 are warnings, TP201 and TP900
    errors, TP203 notes."""
    code, log = sarif(capsys, "--check", "train.py", "only_version_unsupported.py", "broken.py")
    assert code == 2 and errors_of(log) == []
    run = log["runs"][0]
    defaults = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert defaults == {
        "TP101": "warning",
        "TP102": "warning",
        "TP103": "warning",
        "TP104": "warning",
        "TP105": "warning",
        "TP106": "warning",
        "TP201": "error",
        "TP202": "warning",
        "TP203": "note",
        "TP900": "error",
        "TP107": "warning",
        "TP108": "warning",
        "TP109": "warning",  # the runtime migration's switch (--mode runtime): a change to make
        "TP204": "error",
        "TP205": "warning",
        "TP206": "warning",
        "TP207": "warning",
        "TP240": "note",
        "TP241": "warning",
        "TP242": "warning",
        "TP243": "warning",  # guards
        **{f"TP30{i}": "warning" for i in range(1, 7)},
    }  # distributed mode
    seen = {r["ruleId"]: r["level"] for r in run["results"]}
    assert seen["TP202"] == "warning"
    assert all(defaults[rule] == level for rule, level in seen.items())


@pytest.mark.parametrize(
    "mutate, complaint",
    [
        (lambda log: log["runs"][0]["results"][0].__setitem__("level", "fix"), "is not one of"),
        (lambda log: log["runs"][0]["results"][0].pop("ruleId"), "'ruleId' is a required property"),
        (
            lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].__setitem__(
                "startLine", 0
            ),
            "less than the minimum",
        ),
        (lambda log: log["runs"][0]["results"][0].__setitem__("ruleID", "TP101"), "Additional properties"),
        (lambda log: log.__setitem__("version", "2.0.0"), "was expected"),
        (lambda log: log["runs"][0]["tool"]["driver"]["rules"][0].pop("shortDescription"), "required"),
        (
            lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
                "artifactLocation"
            ].__setitem__("uri", "C:\\x y.py"),
            "is not a 'uri-reference'",
        ),
        (lambda log: log["runs"][0]["tool"]["driver"].__setitem__("informationUri", "not a uri"), "is not a 'uri'"),
    ],
)
def test_the_reduced_schema_rejects_broken_logs(work, capsys, mutate, complaint):
    _, log = sarif(capsys, "--check", "train.py")
    assert errors_of(log) == []
    broken = copy.deepcopy(log)
    mutate(broken)
    problems = errors_of(broken)
    assert problems and any(complaint in p for p in problems), problems
