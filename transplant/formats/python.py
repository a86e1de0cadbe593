"""Python files: the engine's conversion (transplant.engine), with what the file's star imports of
project modules provide, plus the project scan's findings (transplant.project.calls). The file
kind "python" of transplant.filekinds; its pre-checks serve notebooks too. The pre-checks run on
every file, so this module imports the engine and the project scan only where a file needs them."""

from __future__ import annotations

from ..entry_points import may_be_program, switch_python
from ..records import CODES, Conversion, Record, skips_file
from ..session import Session


def may_convert(path: str, data: bytes, session: Session) -> bool:
    """Names a star import provides may match rules without being spelled in the file; in runtime
    mode a program gets the migration's variable (entry_points.py)."""
    return (
        may_convert_cells(path, data, session)
        or bool(session.facts.star_names(path)[0])
        or session.rules.mode == "runtime"
        and may_be_program(data)
    )


def may_convert_cells(path: str, data: bytes, session: Session) -> bool:
    """The pre-check of Python code: a trigger word of the rules or of the project scan."""
    return session.rules.may_match(data) or session.facts.may_match(data)


def convert(path: str, data: bytes, session: Session) -> Conversion:
    rules, facts = session.rules, session.facts
    twin = facts.twin_of(path.replace("\\", "/")) if facts.twins else ""
    if twin:  # nccl_engine.py beside the project's own hccl_engine.py: the CUDA version stays
        return Conversion(None, [twin_note(twin, path)])
    adapter = _adapter_note(path, data)
    if adapter is not None:  # deepspeed/comm/mori.py: AMD's MORI, run on ROCm hosts only
        return Conversion(None, [adapter])
    provided, resolved = facts.star_names(path)
    if not session.prefilter or provided or rules.may_match(data):
        from ..engine import StarNames, convert as convert_source  # libcst loads once a file needs parsing

        conv = convert_source(data, rules, StarNames(provided, resolved), facts, path=path)
    else:
        conv = Conversion(None, [])
    if facts.may_match(data):  # cheap; sound by itself (test_surface), so applied with or without prefilter
        from ..project.calls import python_findings  # ast and the project scan: only for a file that may need them

        found = python_findings(data, facts, path.replace("\\", "/"))
        if found:  # a project finding replaces the engine's generic one of the same API at the same line
            mine = {(r.line, r.api) for r in found}
            kept = [r for r in conv.records if r.is_change or (r.line, r.api) not in mine]
            conv = Conversion(conv.new, sorted(kept + found, key=lambda r: (r.line, r.col)), unreached=conv.unreached)
    conv = _library_context(data, conv, session)
    if session.rules.mode == "runtime" and not skips_file(data):
        conv = switch_python(data, conv, path, facts.own_packages, facts.root)
    if facts.hccl_choosers:  # backend=get_nccl_backend(): the project's own choice
        from ..project.backends import settle

        conv = Conversion(conv.new, settle(data, conv.records, facts.hccl_choosers), unreached=conv.unreached)
    if any(r.level in ("error", "warning") for r in conv.records):
        from ..project import mentions
        from ..project.cuda_tests import demote  # findings in code an NPU never runs

        from ..project import attempts, false_tests

        records = mentions.demote(data, demote(data, conv.records, conv.unreached))  # and names it only tests
        records = attempts.demote(data, records)  # and attempts with a fallback
        records = false_tests.demote(data, records)  # and code behind hasattr or the accelerator's name
        conv = Conversion(conv.new, records)
    return conv


def _library_context(data: bytes, conv: Conversion, session: Session) -> Conversion:
    """A Python file's CUDA-only library findings: optional imports and the project's own packages
    are notes (transplant.project.library_context)."""
    if not any(r.code in (CODES["custom_op"], CODES["library"]) and r.level != "note" for r in conv.records):
        return conv
    from ..project.library_context import adjust

    facts = session.facts
    built = frozenset(m.name for m in facts.modules if m.cuda)
    return Conversion(conv.new, adjust(data, conv.records, facts.own_packages, built), unreached=conv.unreached)


def _adapter_note(path: str, data: bytes) -> Record | None:
    """The note of a module that is another accelerator's library adapter (project/other_backends.py)."""
    if not path.lower().endswith(".py"):
        return None
    from ..project.other_backends import adapter_note_text, adapter_of

    found = adapter_of(path, data)
    if found is None:
        return None
    return Record(1, 1, 1, 1, CODES["note"], "note", "", adapter_note_text(*found), "builtin", api=found[0])


def twin_note(twin: str, path: str = "") -> Record:
    from ..project.twins import backend

    word = backend(path) if path else "CUDA"
    if word in ("CUDA", "NCCL", "GPU", "NVTX", ""):
        message = (
            f"kept as it is: the CUDA version of {twin}, the project's own NPU version of this file "
            "(an NPU run uses that one; converting this one would take the CUDA path away)"
        )
    else:
        message = (
            f"kept as it is: the {word} version beside {twin}, the project's own NPU version of this file "
            f"(what {word} hosts run; an NPU run uses the NPU one)"
        )
    return Record(1, 1, 1, 1, CODES["note"], "note", "", message, "builtin", api="cuda")
