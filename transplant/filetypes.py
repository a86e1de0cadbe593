"""Conversion of one file by its kind (transplant.filekinds: Python, notebook, shell script, and the
project files of transplant.formats). Used by every mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import filekinds
from .filekinds import OTHER, file_kind, within_limits
from .project import NO_FACTS, ProjectFacts
from .records import Record, Recorded, SourceError, not_converted_record
from .rules import RuleSet
from .session import Session

__all__ = ["FileResult", "convert_file", "convert_in", "file_kind", "may_convert", "within_limits"]


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


def convert_file(path: str, data: bytes, rules: RuleSet, *, prefilter: bool = True,
                 facts: ProjectFacts = NO_FACTS) -> FileResult:
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
    result.records = conv.records
    return result
