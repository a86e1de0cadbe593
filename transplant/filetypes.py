"""Conversion of one file by its type: Python, notebook, shell script. Used by every mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from .records import Conversion, Record, Recorded, SourceError, not_converted_record
from .rules import RuleSet

PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")
SHELL_SUFFIXES = (".sh", ".bash")
NOTEBOOK_SUFFIXES = (".ipynb",)


@dataclass
class FileResult(Recorded):
    """What happened to one file. ``new`` is None when the file is copied unchanged."""

    path: str  # relative to the input root, with "/" separators
    kind: str  # python | notebook | shell | other
    new: bytes | None = None
    records: list[Record] = field(default_factory=list)
    error: str | None = None
    skipped: bool = False  # not parsed: the pre-filter found no trigger word


def file_kind(path: str | PurePath) -> str:
    name = str(path).lower()
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(NOTEBOOK_SUFFIXES):
        return "notebook"
    if name.endswith(SHELL_SUFFIXES):
        return "shell"
    return "other"


def convert_file(path: str, data: bytes, rules: RuleSet, *, prefilter: bool = True) -> FileResult:
    """Convert one file's bytes according to its type. Never raises for bad content."""
    kind = file_kind(path)
    result = FileResult(path, kind)
    if kind == "other":
        return result
    if prefilter and not rules.may_match(data):
        result.skipped = True
        return result
    try:
        if kind == "python":
            from .engine import convert  # libcst is loaded only once a file needs parsing

            conv = convert(data, rules)
        elif kind == "notebook":
            from .notebooks import convert_notebook

            conv = convert_notebook(data, rules)
        else:
            from .shell import convert_shell

            conv = convert_shell(data, rules)
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


def as_conversion(result: FileResult) -> Conversion:
    return Conversion(result.new, result.records)
