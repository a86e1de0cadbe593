"""Diagnostics of the file modes (--check, --diff, --in-place, stdin) rendered as text, JSON or SARIF.

One :class:`Diagnostic` is one engine :class:`~transplant.records.Record` tied to the path the user
named. The renderers are pure functions from a list of diagnostics to a string; the caller decides
which stream receives it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..codes import BY_CODE, TABLE
from ..records import Record

FORMATS = ("text", "json", "sarif")
# The project has no public home yet; the same placeholder host as rules/schema.json's $id.
INFORMATION_URI = "https://transplant.invalid/"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SARIF_VERSION = "2.1.0"

# What each stable code means (codes.py; docs/reports.md, "Diagnostic codes"), and the SARIF level its
# results carry. A change that still has to be made is a "warning": the code runs, just not on an NPU.
RULE_INFO: dict[str, tuple[str, str, str]] = {c.code: (c.name, c.description, c.level) for c in TABLE}
SARIF_LEVEL = {"fix": "warning", "error": "error", "warning": "warning", "note": "note"}


@dataclass
class Diagnostic:
    path: str  # as the user named it (or --stdin-filename, or "-")
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    level: str  # fix | error | warning | note
    message: str
    old: str = ""
    new: str = ""
    suggestion: str = ""
    rule: str = ""
    cell: int = 0  # a notebook's cell (its number is also in the message), 0 elsewhere

    @classmethod
    def from_record(cls, path: str, r: Record) -> "Diagnostic":
        return cls(
            path,
            r.line,
            r.col,
            r.end_line,
            r.end_col,
            r.code,
            r.level,
            r.shown_message,
            r.old,
            r.new,
            r.suggestion,
            r.rule,
            r.cell,
        )

    @property
    def is_change(self) -> bool:
        return self.level == "fix"

    @property
    def counts(self) -> bool:
        """True when this diagnostic makes the exit status 1 (a change, an error or a warning)."""
        return self.level in ("fix", "error", "warning")

    @property
    def has_fix(self) -> bool:
        return self.is_change and bool(self.old or self.new)

    def text_message(self) -> str:
        message = " ".join(self.message.split())  # one physical line, whatever the rule says
        if self.suggestion:
            message += f" (suggestion: {' '.join(self.suggestion.split())})"
        return message


def render(
    diagnostics: Iterable[Diagnostic],
    fmt: str,
    *,
    notifications: Iterable[str] = (),
    exit_code: int = 0,
    base: Path | None = None,
) -> str:
    diagnostics = list(diagnostics)
    if fmt == "text":
        return render_text(diagnostics)
    if fmt == "json":
        return render_json(diagnostics)
    if fmt == "sarif":
        return render_sarif(diagnostics, notifications=notifications, exit_code=exit_code, base=base)
    raise ValueError(f"unknown format {fmt!r}")


def render_text(diagnostics: Iterable[Diagnostic]) -> str:
    """``path:line:col: CODE message``, one a line: the form editors and quickfix lists understand."""
    return "".join(f"{d.path}:{d.line}:{d.column}: {d.code} {d.text_message()}\n" for d in diagnostics)


def as_json_object(d: Diagnostic) -> dict:
    return {
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "code": d.code,
        "level": d.level,
        "message": d.message,
        "fix": {"old": d.old, "new": d.new} if d.has_fix else None,
        "suggestion": d.suggestion or None,
        "rule": d.rule,
    }


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps([as_json_object(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- SARIF 2.1.0


def artifact_uri(path: str) -> tuple[str, bool]:
    """(uri, relative?) for a path as the user named it: relative paths stay relative to %SRCROOT%."""
    from urllib.parse import quote

    if path == "-":
        return "stdin", True
    p = Path(path)
    if p.is_absolute():
        return p.as_uri(), False
    return quote(Path(os.path.normpath(path)).as_posix()), True


def _rules() -> list[dict]:
    out = []
    for code in sorted(RULE_INFO):
        name, description, level = RULE_INFO[code]
        out.append(
            {
                "id": code,
                "name": name,
                "shortDescription": {"text": description},
                "fullDescription": {"text": f"{code}: {description}. See README, 'Diagnostic codes'."},
                "help": {"text": BY_CODE[code].help.replace("`", ""), "markdown": BY_CODE[code].help},
                "defaultConfiguration": {"level": level},
            }
        )
    return out


def _result(d: Diagnostic, rule_index: dict[str, int]) -> dict:
    uri, relative = artifact_uri(d.path)
    location: dict = {"uri": uri}
    if relative:
        location["uriBaseId"] = "%SRCROOT%"
    start_col = max(1, d.column)
    end_line = max(d.line, d.end_line)
    end_col = d.end_column if d.end_column >= 1 else start_col
    if end_line == d.line and end_col < start_col:
        end_col = start_col
    text = d.text_message()
    if d.has_fix:
        text += " [fixable: transplant --in-place]"
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": SARIF_LEVEL[d.level],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": {
                        "startLine": max(1, d.line),
                        "startColumn": start_col,
                        "endLine": max(1, end_line),
                        "endColumn": end_col,
                    },
                }
            }
        ],
        "properties": {"transplantLevel": d.level, "rule": d.rule},
    }
    if d.code in rule_index:
        result["ruleIndex"] = rule_index[d.code]
    if d.has_fix:
        result["properties"]["old"] = d.old
        result["properties"]["new"] = d.new
    return result


def sarif_log(
    diagnostics: Iterable[Diagnostic],
    *,
    notifications: Iterable[str] = (),
    exit_code: int = 0,
    base: Path | None = None,
) -> dict:
    rules = _rules()
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    notes = [{"level": "error", "message": {"text": n}} for n in notifications]
    root = (base or Path.cwd()).resolve().as_uri().rstrip("/") + "/"
    run = {
        "tool": {
            "driver": {
                "name": "transplant",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root}},
        "columnKind": "unicodeCodePoints",
        "invocations": [{"executionSuccessful": not notes, "exitCode": exit_code, "toolExecutionNotifications": notes}],
        "results": [_result(d, rule_index) for d in diagnostics],
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(
    diagnostics: Iterable[Diagnostic],
    *,
    notifications: Iterable[str] = (),
    exit_code: int = 0,
    base: Path | None = None,
) -> str:
    log = sarif_log(diagnostics, notifications=notifications, exit_code=exit_code, base=base)
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
