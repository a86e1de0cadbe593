"""Conversion of one file by its type: Python, notebook, shell script, and the project files of
transplant.formats (C/C++/CUDA sources, requirements, configuration files, Dockerfiles). Used by
every mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from .project import NO_FACTS, ProjectFacts
from .project.cpp_ops import is_cpp
from .records import Conversion, Record, Recorded, SourceError, not_converted_record, skips_file
from .rules import RuleSet

PYTHON_SUFFIXES = (".py", ".pyw", ".pyi")
SHELL_SUFFIXES = (".sh", ".bash")
NOTEBOOK_SUFFIXES = (".ipynb",)
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".ini", ".cfg")
# files larger than this are data, not project files: copied without a look
SIZE_LIMITS = {"cpp": 16 << 20, "config": 1 << 20, "requirements": 1 << 20, "dockerfile": 1 << 20}


@dataclass
class FileResult(Recorded):
    """What happened to one file. ``new`` is None when the file is copied unchanged."""

    path: str  # relative to the input root, with "/" separators
    kind: str  # python | notebook | shell | cpp | requirements | config | dockerfile | build | other
    new: bytes | None = None
    records: list[Record] = field(default_factory=list)
    error: str | None = None
    skipped: bool = False  # not parsed: the pre-filter found no trigger word
    new_lines: dict[int, int] = field(default_factory=dict)  # finding's line -> its line in ``new`` (reports)


def file_kind(path: str | PurePath) -> str:
    name = str(path).replace("\\", "/").lower()
    base = name.rsplit("/", 1)[-1]
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(NOTEBOOK_SUFFIXES):
        return "notebook"
    if name.endswith(SHELL_SUFFIXES):
        return "shell"
    if is_cpp(name):
        return "cpp"
    if base.endswith(".txt") and ("requirements" in base or base.startswith("constraints")
                                  or name.startswith("requirements/") or "/requirements/" in name):
        return "requirements"
    if name.endswith(CONFIG_SUFFIXES):
        return "config"
    if base in ("dockerfile", "containerfile") or base.startswith("dockerfile.") or base.endswith(".dockerfile"):
        return "dockerfile"
    return issue20_kind(name)


# --- Hook of issue 20's file kinds (formats/buildfiles.py, formats/conda.py, formats/framework_configs.py),
# kept apart so that the file-kind registry can take it over: Makefiles and CMake files are the kind
# "build"; conda environments and framework settings (accelerate, transformers, Lightning) are read
# inside the "config" kind, after formats/configs.py.
SIZE_LIMITS["build"] = 1 << 20


def issue20_kind(name: str) -> str:
    from .project.cuda_programs import is_build_file

    return "build" if is_build_file(name) else "other"


def issue20_may_match(data: bytes) -> bool:
    from .project.cuda_programs import may_match

    return may_match(data)


def issue20_convert(path: str, data: bytes, facts: ProjectFacts) -> Conversion:
    from .formats.buildfiles import convert_build_file

    return convert_build_file(path, data, facts)


def issue20_config_may_match(path: str, data: bytes) -> bool:
    from .formats import conda, framework_configs

    return framework_configs.may_match(data) or conda.is_environment(path, data)


def issue20_config(path: str, data: bytes, conv: Conversion) -> Conversion:
    from .formats import conda, framework_configs

    return conda.apply(path, data, framework_configs.apply(path, data, conv))
def issue20_library_context(data: bytes, conv: Conversion, facts: ProjectFacts) -> Conversion:
    """A Python file's CUDA-only library findings: optional imports and the project's own packages are notes."""
    if not any(r.code in ("TP204", "TP206") and r.level != "note" for r in conv.records):
        return conv
    from .project.library_context import adjust

    built = frozenset(m.name for m in facts.modules if m.cuda)
    return Conversion(conv.new, adjust(data, conv.records, facts.own_packages, built))
# --- end of issue 20's hook


def within_limits(kind: str, size: int) -> bool:
    return size <= SIZE_LIMITS.get(kind, size)


def may_convert(path: str, kind: str, data: bytes, rules: RuleSet, facts: ProjectFacts = NO_FACTS) -> bool:
    """The pre-filter of each kind: can its converter change or report anything in ``data``?"""
    if kind == "python":  # names a star import provides may match rules without being spelled here
        return rules.may_match(data) or facts.may_match(data) or bool(facts.star_names(path)[0])
    if kind == "notebook":
        return rules.may_match(data) or facts.may_match(data)
    if kind == "shell":
        return rules.may_match(data) or b"pip" in data  # pip install of CUDA-only packages
    if kind == "cpp":
        from .formats.cpp import may_match

        return may_match(data)
    if kind == "config":
        from .formats.configs import may_match

        return may_match(path, data, rules) or issue20_config_may_match(path, data)
    if kind == "build":
        return issue20_may_match(data)
    if kind == "dockerfile":
        from .formats.dockerfile import may_match

        return may_match(data, rules)
    return kind == "requirements"


def convert_file(path: str, data: bytes, rules: RuleSet, *, prefilter: bool = True,
                 facts: ProjectFacts = NO_FACTS) -> FileResult:
    """Convert one file's bytes according to its type. Never raises for bad content."""
    kind = file_kind(path)
    result = FileResult(path, kind)
    if kind == "other" or not within_limits(kind, len(data)):
        return result
    if prefilter and not may_convert(path, kind, data, rules, facts):
        result.skipped = True
        return result
    try:
        if kind == "python":
            conv = _convert_python(path, data, rules, facts, prefilter)
        elif kind == "build":
            conv = issue20_convert(path, data, facts)
        elif kind in ("cpp", "requirements", "config", "dockerfile"):
            conv = _convert_project_file(path, kind, data, rules, facts)
        elif kind == "notebook":
            conv = _convert_notebook(data, rules, facts)
        else:
            from .formats.requirements import pip_records
            from .formats.shell import convert_shell_script

            conv = convert_shell_script(data, rules)
            extra = [] if skips_file(data) else pip_records(data)
            if extra:
                conv = Conversion(conv.new, sorted(conv.records + extra, key=lambda r: (r.line, r.col)))
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


def _convert_python(path: str, data: bytes, rules: RuleSet, facts: ProjectFacts, prefilter: bool) -> Conversion:
    """The engine's conversion (with what the file's star imports of project modules provide), plus
    the project scan's findings (transplant.project.calls) when the file has one of its trigger words."""
    provided, resolved = facts.star_names(path)
    if not prefilter or provided or rules.may_match(data):
        from .engine import StarNames, convert  # libcst is loaded only once a file needs parsing

        conv = convert(data, rules, StarNames(provided, resolved), facts)
    else:
        conv = Conversion(None, [])
    if facts.may_match(data):  # cheap; sound by itself (test_surface), so applied with or without prefilter
        from .project.calls import python_findings

        found = python_findings(data, facts, path.replace("\\", "/"))
        if found:  # a project finding replaces the engine's generic one of the same API at the same line
            mine = {(r.line, r.api) for r in found}
            kept = [r for r in conv.records if r.is_change or (r.line, r.api) not in mine]
            conv = Conversion(conv.new, sorted(kept + found, key=lambda r: (r.line, r.col)))
    return issue20_library_context(data, conv, facts)


def _convert_notebook(data: bytes, rules: RuleSet, facts: ProjectFacts) -> Conversion:
    """The conversion of the code cells, plus the project scan's findings in them (as for a Python file)."""
    from .formats.notebooks import convert_notebook, project_findings, record_order

    conv = convert_notebook(data, rules)
    if not facts.may_match(data):
        return conv
    found = project_findings(data, facts)
    if not found:
        return conv
    # a project finding replaces the engine's generic one of the same API at the same place
    mine = {(r.message.split(":", 1)[0], r.line, r.api) for r in found}
    kept = [r for r in conv.records if r.is_change or (r.message.split(":", 1)[0], r.line, r.api) not in mine]
    return Conversion(conv.new, sorted(kept + found, key=record_order))


def _convert_project_file(path: str, kind: str, data: bytes, rules: RuleSet, facts: ProjectFacts) -> Conversion:
    if kind == "cpp":
        from .formats.cpp import convert_cpp

        return convert_cpp(path, data, facts)
    if kind == "requirements":
        from .formats.requirements import convert_requirements

        return convert_requirements(data)
    if kind == "config":
        from .formats.configs import convert_config

        return issue20_config(path, data, convert_config(path, data, rules))
    from .formats.dockerfile import convert_dockerfile

    return convert_dockerfile(data, rules)


def as_conversion(result: FileResult) -> Conversion:
    return Conversion(result.new, result.records)
