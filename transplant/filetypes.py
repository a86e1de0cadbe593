"""Conversion of one file by its kind (transplant.filekinds: Python, notebook, shell script, and the
project files of transplant.formats). Used by every mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import filekinds
from .filekinds import OTHER, file_kind, within_limits
from .project import NO_FACTS, ProjectFacts
from .records import CODES, Record, Recorded, SourceError, not_converted_record
from .rules import RuleSet
from .runtime_mode import explain
from .session import Session

__all__ = ["FileResult", "convert_file", "convert_in", "convert_named", "file_kind", "may_convert", "within_limits"]


@dataclass
class FileResult(Recorded):
    """What happened to one file. ``new`` is None when the file is copied unchanged."""

    path: str  # relative to the input root, with "/" separators
    kind: str  # a name of transplant.filekinds.KINDS, or "other"
    new: bytes | None = None
    records: list[Record] = field(default_factory=list)
    error: str | None = None
    skipped: bool = False  # not parsed: the pre-filter found no trigger word
    new_lines: dict[int, int] = field(default_factory=dict)  # finding's line -> its line in ``new`` (reports)


def may_convert(path: str, kind: str, data: bytes, rules: RuleSet, facts: ProjectFacts = NO_FACTS) -> bool:
    """The pre-filter of each kind: can its converter change or report anything in ``data``?"""
    return kind != OTHER and filekinds.may_convert(kind, path, data, Session(rules, facts))


def convert_file(
    path: str, data: bytes, rules: RuleSet, *, prefilter: bool = True, facts: ProjectFacts = NO_FACTS
) -> FileResult:
    """Convert one file's bytes according to its kind. Never raises for bad content."""
    return convert_in(Session(rules, facts, prefilter), path, data)


def convert_in(session: Session, path: str, data: bytes) -> FileResult:
    """Convert one file's bytes with ``session``, by the kind of ``path``."""
    kind = file_kind(path)
    result = FileResult(path, kind)
    if kind == OTHER or not within_limits(kind, len(data)):
        return result
    if session.prefilter and not filekinds.may_convert(kind, path, data, session):
        result.skipped = True
        return result
    try:
        conv = filekinds.convert(kind, path, data, session)
    except SourceError as exc:
        result.error = str(exc)
        result.records = [not_converted_record(str(exc), exc.line, exc.col)]
        return result
    except RecursionError:
        result.error = "source is nested too deeply to convert"
        return result
    result.new = conv.new
    result.records = conv.records if session.rules.mode != "runtime" else explain(conv.records)
    return result


def convert_named(
    session: Session, data: bytes, kind: str, name: str = "", *, after: bool = False
) -> tuple[FileResult, list[Record]]:
    """Convert ``data`` as ``kind``, for the file modes and the language server: under ``name`` when
    that is a name of the kind (it chooses a config's format, ...), else under the kind's stand-in
    name (content whose kind a ``#!`` line or an editor's language gave). A file that is not
    converted gets its TP900 record. With ``after``, also the findings of the converted text, found
    by converting it again (conversion is idempotent), so that their lines are those of the new text."""
    path = name if name and file_kind(name) == kind else filekinds.BY_NAME[kind].stand_in or name
    result = convert_in(session, path, data)
    if result.error and not any(r.code == CODES["syntax"] and r.level == "error" for r in result.records):
        result.records.append(not_converted_record(result.error))
    remaining: list[Record] = []
    if after and result.new is not None:
        again = convert_in(session, path, result.new)
        source = again.records if again.error is None else result.records
        remaining = [r for r in source if not r.is_change]
    return result, remaining
