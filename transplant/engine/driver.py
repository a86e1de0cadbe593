"""One Python source, end to end: parse, fold, traverse once, place records, finish the imports.

Owns ``convert`` (bytes in, ``Conversion`` out): skip-file comments, the footer libcst would lose,
the skeleton (skeleton.py folds the statements no rule can match in; libcst parses only the rest),
the nesting guard in front of libcst's native parser, one traversal by ``Converter``, placing the
records, dropping those on ``# transplant: skip`` lines (with what they change), inserting and
pruning imports, and putting the folds back byte for byte. It holds no rule logic of its own.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import libcst as cst

from ..guards import Guards, analyse
from ..nesting import nesting_error
from ..project import NO_FACTS, ProjectFacts
from ..records import CODES, SKIP_LINE, Conversion, Record, SourceError, skips_file
from ..rules import RuleSet
from ..skeleton import Skeleton, skeleton
from .chunks import parse_chunks
from .bindings import NO_STARS, Bindings, StarNames, analyse_imports, apply_stars, star_module
from .device_index import finish as finish_index_devices
from .finish import Unfold, add_imports, hits, make_records, place, prune
from .flow import flow_of
from .imports import (
    imports_module,
    pruned_aliases,
)
from .device_names import accepted_names
from .device_sets import families_finder, families_result
from .npu_paths import mark_paths
from .npu_arms import arms_elsewhere
from ..project.modules import on_disk
from .legacy_calls import legacy_fallbacks
from .tf_children import tf_programs
from .passed_options import option_locals
from .multi_backend import OTHER_BYTES, helper_regions
from .profiler_pairs import profiler_keeps
from .kept_sources import kept_elsewhere
from .npu_aware import COLLECTION, NPU_STRING_BYTES, NPU_WORD_BYTES, kept_finder, kept_result
from .own_attributes import own_attribute_collector, own_attribute_result
from .phases import timed
from .state import Pending
from .transformer import Converter
from .traverse import walk


def parse(source: bytes) -> cst.Module:
    """The libcst module of ``source``; SourceError when it cannot be parsed."""
    check_nesting(source, None)
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython places syntax errors precisely (libcst often points at the next token); ask it
        try:
            compile(source, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as err:
            if err.lineno:
                raise SourceError(f"syntax error: {err.msg}", err.lineno, err.offset or 1) from None
        except (ValueError, RecursionError, MemoryError):
            pass
        raise SourceError(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(f"cannot decode source: {exc}") from None
    except RecursionError:
        raise SourceError("source is nested too deeply to parse") from None


def check_nesting(text: bytes, skel: Skeleton | None) -> None:
    """Raise SourceError when libcst's native parser would overflow the C stack (SIGSEGV) on
    ``text``: the source, or the skeleton ``skel`` of one (the error names the source line)."""
    deep = nesting_error(text)
    if deep is not None:
        line = skel.line(deep[1]) if skel is not None else deep[1]
        raise SourceError(f"source is nested too deeply to parse: {deep[0]}", line)


def skipped_lines(source: bytes) -> set[int]:
    if b"transplant:" not in source:
        return set()
    return {i + 1 for i, line in enumerate(source.splitlines()) if SKIP_LINE.search(line)}


def convert(
    source: bytes, rules: RuleSet, stars: StarNames = NO_STARS, facts: ProjectFacts = NO_FACTS, *, path: str = ""
) -> Conversion:
    """Convert one Python source; ``stars`` are the names its star imports of project modules
    provide (project/stars.py), ``facts`` the project's extension modules (for the device tests
    that guard them, ../guards/), ``path`` the file's name in the run (relative to ``facts.root``;
    "" for standard input: then guards do not follow the project's modules). Raises SourceError
    when it does not parse."""
    if skips_file(source):
        return Conversion(None, [])
    code, footer = _split_footer(source)
    result = _convert_source(code, rules, stars, facts, path)
    if result.new is not None:
        result.new += footer
        result.records = mark_paths(code, result.records)  # rewrites that change an NPU run's path
    return result


def _split_footer(source: bytes) -> tuple[bytes, bytes]:
    """``source`` as (code, footer) where the footer is the comment and blank lines at its end,
    when one of them is an indented comment: libcst (1.9) keeps only the last of several
    indented comments that end a module. The footer is put back as it is. (In a skeleton this
    is common: a folded last function leaves the comments at the end of its body there.)"""
    lines = source.splitlines(keepends=True)
    start = len(lines)
    while start > 0 and lines[start - 1].strip(b" \t\f\r\n")[:1] in (b"", b"#"):
        start -= 1
    footer = lines[start:]
    if not any(line[:1] in (b" ", b"\t", b"\f") and line.lstrip(b" \t\f").startswith(b"#") for line in footer):
        return source, b""
    return b"".join(lines[:start]), b"".join(footer)


def _convert_source(
    source: bytes, rules: RuleSet, stars: StarNames, facts: ProjectFacts = NO_FACTS, path: str = ""
) -> Conversion:
    skip = skipped_lines(source)
    guards = timed("guards", analyse, source, rules, facts, path)  # device tests that stay CUDA tests (None: none)
    result = None
    # names a star import provides are unknown to the skeleton's folding: such a file goes whole;
    # in a file that names an NPU device, no statement that names NPU is folded: what already
    # handles NPU (npu_aware.py, device_sets.py) often holds no CUDA word, and the analyses must see it
    keep_words = NPU_WORD_BYTES if NPU_STRING_BYTES.search(source) else None
    if facts.npu_support and OTHER_BYTES.search(source):  # the words of multi-backend helpers (multi_backend.py)
        keep_words = OTHER_BYTES
    children = tf_programs(source, path, facts.root)  # TensorFlow programs it starts (tf_children.py)
    if children:  # the statements that start them are not folded away
        names = [re.escape(name.encode()) for name in sorted(children)]
        keep_words = re.compile(b"|".join(([keep_words.pattern] if keep_words is not None else []) + names))
    skel = timed("skeleton", skeleton, source, rules, keep_words) if not stars.provided else None
    if skel is not None:
        check_nesting(skel.text, skel)  # only the skeleton reaches libcst's parser
        try:
            module = timed("parse", parse_chunks, skel.text, skel.tops)  # a long one in pieces (chunks.py)
            result = _convert(
                module, rules, skip, skel, stars=stars, guards=guards, project=facts, children=children, path=path
            )
        except (Unfold, cst.ParserSyntaxError):
            result = None  # (a parse error is reported by parsing the whole source)
    if result is None:
        result = _convert(
            timed("parse", parse, source),
            rules,
            skip,
            None,
            source,
            stars=stars,
            guards=guards,
            project=facts,
            children=children,
            path=path,
        )
    if result.new is not None and source.endswith(b"\r") and not result.new.endswith(b"\r"):
        # libcst drops a final lone "\r" (old Mac line endings); put it back
        result.new += b"\r"
    return guards.apply(result, skip) if guards is not None else result


def _convert(
    module: cst.Module,
    rules: RuleSet,
    skip: set[int],
    skel: Skeleton | None,
    source: bytes | None = None,
    *,
    stars: StarNames = NO_STARS,
    guards: Guards | None = None,
    project: ProjectFacts = NO_FACTS,
    children: frozenset[str] = frozenset(),
    path: str = "",
) -> Conversion:
    """Convert a parsed module: the skeleton ``skel`` of a source, or (skel None) the source
    ``source`` itself. Records on lines with a skip comment are dropped with what they change, and
    so are the changes inside what ``guards`` keeps. ``project``: the facts of the file's project."""
    text = source if skel is None else skel.text
    facts = timed("regions", _regions, module, rules, skel, text, project, children, path)  # the same for every attempt
    excluded: set[int] = set()
    for _attempt in range(4):
        result, hit = _convert_once(module, rules, excluded, skip, skel, text, stars=stars, guards=guards, facts=facts)
        if not hit:
            break
        excluded |= hit
    return result


@dataclasses.dataclass
class _Regions:
    """What the read-only analyses found in a module, before any conversion (phase "regions")."""

    npu_kept: dict[int, str]  # code that already handles NPU (npu_aware.py) -> why
    kept: dict[int, str]  # that, the project's own flags (own_attributes.py) and NPU families
    quiet: set[int]  # kept nodes in tests and collections
    convert_strings: set[int]  # device strings of families converted whole (device_sets.py)
    text: bytes  # the whole source, folded statements too
    accepted: dict[int, cst.CSTNode]  # collections of accepted device names: "npu" added (device_names.py)
    passed: dict  # values the project's scripts and configs pass (project/passed.py)
    fallbacks: dict[int, str]  # callees of the calls an older torch falls back to (legacy_calls.py)
    # where the project shows that it runs on NPU (project/npu_support.py), for a file that names neither
    # CUDA nor a GPU (its device-less calls are the project's backend-neutral code), or ""
    neutral_npu: str


_CUDA_WORD = re.compile(rb"(?i)cuda|gpu")  # a file that says neither is backend-neutral code


def _regions(
    module: cst.Module,
    rules: RuleSet,
    skel: Skeleton | None,
    source: bytes | None,
    project: ProjectFacts = NO_FACTS,
    children: frozenset[str] = frozenset(),
    path: str = "",
) -> _Regions:
    """The read-only analyses of ``module``, in one walk of it (traverse.py), with what the project
    says of it (its NPU registries, the values its scripts pass)."""
    whole = source if skel is None else b"\n".join([skel.text, *skel.folds])  # folded uses count too
    text = whole if whole is not None else module.bytes  # (module.bytes generates the code: once)
    finder = kept_finder(text, bool(project.npu_support))
    collector = own_attribute_collector(module, text, rules.rename_attribute)
    families = families_finder(text)
    visitors = [v for v in (finder, collector, families) if v is not None]
    if visitors:
        walk(module, visitors)
    npu_kept, quiet = kept_result(finder, module)  # code that already handles NPU
    origin = on_disk(project.root, path) if project.npu_support and path else ""
    elsewhere = arms_elsewhere(module, origin, project.root) if origin else None
    for node_id, why in helper_regions(module, text, project.npu_support, elsewhere).items():
        npu_kept.setdefault(node_id, why)  # multi-backend helpers of a project that runs on NPU
    kept = dict(npu_kept)
    own_flags = own_attribute_result(collector, rules.rename_attribute, npu_kept)
    for node_id, why in kept_elsewhere(module, text, rules, project, children, own_flags).items():
        kept.setdefault(node_id, why)  # CUDA code the file keeps for reasons of its own (kept_sources.py)
    for node_id, why in profiler_keeps(module, text, kept).items():
        kept.setdefault(node_id, why)  # torch.profiler.profile fed the torch activities kept above
    convert_strings, keep_strings = families_result(families)
    for node_id in keep_strings:
        kept.setdefault(node_id, COLLECTION)
    accepted = accepted_names(module, text)  # collections of accepted names: "npu" added, "cuda" kept
    if accepted:
        convert_strings -= {id(el.value) for n in accepted.values() for el in getattr(n, "elements", ())}
    return _Regions(
        npu_kept,
        kept,
        quiet | keep_strings,
        convert_strings,
        text,
        accepted,
        dict(project.passed_values),
        legacy_fallbacks(module, text),
        project.npu_support if _CUDA_WORD.search(text) is None else "",
    )


def _convert_once(
    module: cst.Module,
    rules: RuleSet,
    excluded: set[int],
    skip: set[int],
    skel: Skeleton | None = None,
    source: bytes | None = None,
    *,
    stars: StarNames = NO_STARS,
    guards: Guards | None = None,
    facts: _Regions | None = None,
) -> tuple[Conversion, set[int]]:
    """One conversion of ``module``, whose source is ``source`` (when known), in phases: the
    imports' plans, the traversal, the findings, their places, the records, the new imports, the
    pruning of the old ones and the new bytes. Returns the conversion, or the ids of the nodes
    whose changes must be left out (a skip comment, a kept device test) for another attempt."""
    if facts is None:
        facts = _regions(module, rules, skel, source)
    bindings, assumed_at = timed("imports", _plan_imports, module, rules, stars, excluded, facts)
    conv, new_module = timed("rewrite", _rewrite, module, rules, bindings, excluded, facts, skel)
    unused = {name for name in conv.touched if conv.uses.get(name, 0) == 0}
    if skel is not None:
        maybe = _maybe_used_in_folds(unused, skel)
        if maybe:  # an import whose uses were all rewritten away may still be used in folded code
            used = skel.folded_uses(maybe)
            if used is None:  # only the whole source can count its uses
                raise Unfold
            unused -= used
    pending = _pending(conv, bindings, unused, assumed_at)
    if not pending:
        return Conversion(None, []), set()
    placed = timed("place", place, module, conv, bindings, pending, skel, source)
    hit = hits(placed.positions, pending, bindings, skip, guards)
    if hit:
        return Conversion(None, []), hit
    records = timed("records", make_records, module, pending, placed.positions)
    if not any(r.is_change for r in records) and not conv.needs_npu:
        return Conversion(None, sorted(records, key=_order)), set()
    # imports are added before pruning, so an anchor statement that pruning removes is still there
    new_module = timed("add imports", add_imports, module, new_module, conv, bindings, placed, records)
    new_module = timed("prune", prune, module, new_module, bindings, unused, placed.positions, records)
    new_bytes = timed("print", lambda: new_module.bytes)
    if new_bytes == placed.original_bytes:  # module.bytes, without generating it again
        return Conversion(None, sorted([r for r in records if not r.is_change], key=_order)), set()
    if skel is not None:
        restored = skel.restore(new_bytes)
        if restored is None:  # a marker line went missing or was duplicated
            raise Unfold
        new_bytes = restored
    return Conversion(new_bytes, sorted(records, key=_order)), set()


def _plan_imports(
    module: cst.Module, rules: RuleSet, stars: StarNames, excluded: set[int], facts: _Regions
) -> tuple[Bindings, cst.ImportFrom | None]:
    """The module's imports and how each is rewritten (bindings.py), less those excluded and those
    in code that already handles NPU; and the star import a free ``torch`` is taken from, if any."""
    bindings = analyse_imports(module, rules)
    assumed_at = apply_stars(bindings, stars)  # the star import a free ``torch`` is taken from, if any
    for node in bindings.import_nodes:
        plan = bindings.plans.get(id(node))
        if plan is not None and id(node) in excluded:
            del bindings.plans[id(node)]
            for name in plan.names:
                bindings.rewritten.pop(name, None)
    for node in bindings.import_nodes:
        if id(node) in facts.npu_kept and bindings.plans.get(id(node)) is not None:
            for name in bindings.plans.pop(id(node)).names:
                bindings.rewritten.pop(name, None)
    return bindings, assumed_at


def _rewrite(
    module: cst.Module, rules: RuleSet, bindings: Bindings, excluded: set[int], facts: _Regions, skel: Skeleton | None
) -> tuple[Converter, cst.Module]:
    """The one traversal (transformer.py): the converted module, and the Converter with what it
    found (pending records, names used and touched, imports needed)."""
    conv = Converter(module, rules, bindings, excluded, flow_of(facts.text))
    conv.kept, conv.kept_quiet, conv.force_devices = facts.kept, facts.quiet, facts.convert_strings  # (read only)
    conv.passed = facts.passed  # (read only)
    conv.fallbacks, conv.neutral_npu = facts.fallbacks, facts.neutral_npu
    conv.passed_locals = option_locals(facts.text) if facts.passed else {}
    conv.accepted_names = set(facts.accepted)
    conv.folds = skel.folds if skel is not None else []  # folded statements still define class members
    try:
        new_module = module.visit(conv)
    except RecursionError:
        raise SourceError("source is nested too deeply to convert") from None
    finish_index_devices(
        conv, any(q.split(".")[0] == "torch" for q in bindings.original.values()), imports_module(bindings, "torch_npu")
    )
    if (shim := conv.shim_note()) is not None:  # another backend's layer over torch.cuda: left whole
        conv.pending, conv.touched, conv.needs_npu, conv.needs_imports = [shim], set(), False, set()
    else:
        conv.pending += conv.redirect_notes()
    return conv, new_module


def _pending(conv: Converter, bindings: Bindings, unused: set[str], assumed_at: cst.ImportFrom | None) -> list[Pending]:
    """The records the traversal left, less those on imports that pruning removes, plus the note
    on the star import torch is assumed to come from."""
    # a finding on an import that pruning removes (every use of it was rewritten) has nothing left to point at
    gone = pruned_aliases(bindings, unused)
    pending = [p for p in conv.pending if id(p.anchor) not in gone]
    if assumed_at is not None and any(p.level == "fix" for p in pending):
        module_text = star_module(assumed_at)
        pending.append(
            Pending(
                assumed_at,
                Record(
                    0,
                    0,
                    0,
                    0,
                    CODES["note"],
                    "note",
                    "",
                    f"torch is used in this file without an import of its own: it is "
                    f"taken as the torch module, assumed to come from `from {module_text} import *`",
                    "builtin",
                    api="torch",
                ),
            )
        )
    return pending


def _maybe_used_in_folds(unused: set[str], skel: Skeleton) -> set[str]:
    """The imports whose every use in the skeleton was rewritten away (``unused``) that a folded
    statement spells, and may still use (Skeleton.folded_uses tells)."""
    return {name for name in unused if any(name.encode() in words for words in skel.words)}


def _order(r: Record) -> tuple[int, int, str]:
    return (r.line, r.col, r.code)
