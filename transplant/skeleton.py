"""Fold away the statements of a source in which no rule can match, before libcst sees it.

Parsing with libcst, walking its tree and generating code from it cost in proportion to the code
given to it, and most statements of a file that uses CUDA never touch CUDA. CPython's own parser
is several times faster: it gives the statements' line spans, and the rules' pre-filter
(``RuleSet.inert_words``) tells which of them no rule can change or report. Each run of such
statements is replaced by one marker line, ``__transplant_folded_<n>__``, at the same
indentation; libcst parses the much smaller skeleton, the engine converts it, and ``restore``
puts the folded lines back byte for byte.

A statement is folded only when it

- starts its own line and ends its line (no other statement shares its lines),
- passes the pre-filter, with every import-bound name in it standing also for the parts of the
  qualified name it is bound to (``tc`` for ``torch.cuda``), the same soundness argument as the
  file-level pre-filter's (rules._triggers),
- spells no word through an escape sequence,
- holds no import (the engine needs every import to resolve names), and
- is not the module docstring (new imports are placed after it).

A compound statement that cannot be folded keeps its header, and its blocks are folded in turn.
Sources the line arithmetic would be wrong for (byte order mark, lone or mixed CR line ends, an
encoding other than an ASCII superset, the marker text itself) and sources CPython's parser
rejects get no skeleton: the engine parses them whole.
"""

from __future__ import annotations

import ast
import codecs
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Iterator

from .project.pynames import nodes, parse
from .rules import RuleSet, escapes_words, foreign_encoding

MARK = b"__transplant_folded_"
_MARK_LINE = re.compile(rb"^[ \t\f]*__transplant_folded_(\d+)__(?:\r\n|\n)?", re.MULTILINE)
_SPACE = b" \t\f"


@dataclass
class Skeleton:
    text: bytes  # the source with each fold replaced by its marker line
    folds: list[bytes]  # the original lines of each fold, by number
    words: list[frozenset[bytes]]  # the identifier words of each fold
    starts: list[int]  # the line of each fold's marker in ``text``
    shift: list[int]  # lines folded away by folds 0..i
    # lines of ``text`` where a top-level statement starts after only blank lines (engine/chunks.py)
    tops: list[int] = field(default_factory=list)
    source: bytes = b""  # the source it was made from

    def folded_uses(self, names: set[str]) -> set[str] | None:
        """Which of the import-bound ``names`` (roots whose every use in the skeleton was rewritten
        away) a folded statement uses, as the whole source's conversion would count them (every
        reference to the name); None when only that conversion can tell: the name is bound other
        than by an import (a parameter, an assignment, a def), or is a keyword argument's name.
        Read from CPython's tree of the source (the one the skeleton was made from)."""
        tree = parse(self.source)
        if tree is None:
            return None
        spans = []
        for i, start in enumerate(self.starts):
            before = self.shift[i - 1] if i else 0
            spans.append((start + before, start + self.shift[i]))
        used: set[str] = set()
        for node in nodes(tree):
            if isinstance(node, ast.Name):
                if node.id not in names:
                    continue
                if not isinstance(node.ctx, ast.Load):
                    return None
                i = bisect_left(spans, (node.lineno + 1,)) - 1
                if i >= 0 and spans[i][0] <= node.lineno <= spans[i][1]:
                    used.add(node.id)
            elif _binds(node, names):
                return None
        return used

    def line(self, line: int) -> int:
        """The source line of a line of ``text`` (never a marker line)."""
        i = bisect_left(self.starts, line)
        return line + self.shift[i - 1] if i else line

    def position(self, pos: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        line, col, end_line, end_col = pos
        return self.line(line), col, self.line(end_line), end_col

    def restore(self, text: bytes) -> bytes | None:
        """``text`` (converted from the skeleton) with the folds put back; None unless every
        marker line is found exactly once."""
        seen: list[int] = []

        def unfold(m: re.Match[bytes]) -> bytes:
            n = int(m.group(1))
            seen.append(n)
            return self.folds[n] if n < len(self.folds) else m.group(0)

        out = _MARK_LINE.sub(unfold, text)
        return out if sorted(seen) == list(range(len(self.folds))) else None


def skeleton(source: bytes, rules: RuleSet, keep_words: re.Pattern[bytes] | None = None) -> Skeleton | None:
    """The skeleton of ``source``, or None when nothing can be folded (or it should not be). A
    statement whose lines match ``keep_words`` is not folded (its blocks are folded in turn)."""
    if MARK in source or source.startswith(codecs.BOM_UTF8) or foreign_encoding(source):
        return None
    cr = source.count(b"\r")
    if cr and (cr != source.count(b"\r\n") or cr != source.count(b"\n")):
        return None  # lone "\r" or mixed line ends: keep the engine's newline handling exact
    tree = parse(source)  # (shared with the guards and the project scan of the same source)
    if tree is None:
        return None
    lines = source.splitlines(keepends=True)
    folds: list[list] = []  # [first line, last line, words], in source order
    aliases = _aliases(tree, source, lines)
    keep = _rebinding_lines(tree, lines, aliases)
    _fold_block(tree.body, lines, rules, aliases, folds, top=True, keep=keep, keep_words=keep_words)
    if not folds:
        return None

    out: list[bytes] = []
    texts: list[bytes] = []
    starts: list[int] = []
    shift: list[int] = []
    done = 0  # source lines consumed
    line = 1  # the next line of the skeleton
    for first, last, _words in folds:
        out += lines[done : first - 1]
        line += first - 1 - done
        head = lines[first - 1]
        end = lines[last - 1]
        newline = b"\r\n" if end.endswith(b"\r\n") else b"\n" if end.endswith(b"\n") else b""
        out.append(head[: len(head) - len(head.lstrip(_SPACE))] + MARK + str(len(texts)).encode() + b"__" + newline)
        starts.append(line)
        line += 1
        shift.append((shift[-1] if shift else 0) + last - first)
        texts.append(b"".join(lines[first - 1 : last]))
        done = last
    out += lines[done:]
    return Skeleton(
        b"".join(out), texts, [frozenset(f[2]) for f in folds], starts, shift, _tops(tree, lines, folds), source
    )


def _binds(node: ast.AST, names: set[str]) -> bool:
    """Does ``node`` bind one of ``names`` other than as an import or a plain name (whose context
    says it), or pass it as a keyword argument's name?"""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name in names
    if isinstance(node, ast.arg):
        return node.arg in names
    if isinstance(node, ast.keyword):
        return node.arg in names
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return any(name in names for name in node.names)
    if isinstance(node, ast.ExceptHandler):
        return node.name in names
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name in names
    if isinstance(node, ast.MatchMapping):
        return node.rest in names
    return False


def _tops(tree: ast.Module, lines: list[bytes], folds: list[list]) -> list[int]:
    """The skeleton's lines where a top-level statement (or the marker of a fold that starts with one)
    starts after nothing but empty lines since the end of the statement before it."""
    out: list[int] = []
    fold = 0  # the next fold that could start at or before a statement
    folded = 0  # lines folded away before it
    previous = 0  # the last line of the statement before
    for first, last, _group, own in _units(tree.body, lines):
        while fold < len(folds) and folds[fold][1] < first:
            folded += folds[fold][1] - folds[fold][0]
            fold += 1
        inside = fold < len(folds) and folds[fold][0] < first  # within a fold, not at its start
        if previous and own and not inside and all(line in (b"\n", b"\r\n") for line in lines[previous : first - 1]):
            out.append(first - folded)
        previous = last
    return out


def _fold_block(
    stmts: list[ast.stmt],
    lines: list[bytes],
    rules: RuleSet,
    aliases: dict[bytes, frozenset[bytes]],
    folds: list[list],
    *,
    top: bool,
    keep: frozenset[int],
    keep_words: re.Pattern[bytes] | None = None,
) -> None:
    """Fold the runs of ``stmts`` no rule can match in; a statement on a line of ``keep`` (it binds
    an imported name: the engine must see that, see _rebinding_lines) or whose text matches
    ``keep_words`` is never folded."""
    run: list | None = None  # the fold being extended over consecutive foldable statements
    for index, (first, last, group, own) in enumerate(_units(stmts, lines)):
        words = None
        if (
            own
            and not (top and index == 0 and _is_docstring(group[0]))
            and not any(first <= line <= last for line in keep)
        ):
            text = b"".join(lines[first - 1 : last])
            if b"import" not in text and not escapes_words(text) and not (keep_words and keep_words.search(text)):
                words = rules.inert_words(text, aliases)
        if words is not None:
            if run is None:
                run = [first, last, set(words)]
            else:  # one marker for both, with the blank lines and comments between them
                run[1] = last
                run[2] |= words
            continue
        if run is not None:
            folds.append(run)
            run = None
        if own and len(group) == 1:
            for block in _blocks(group[0], lines):
                _fold_block(block, lines, rules, aliases, folds, top=False, keep=keep, keep_words=keep_words)
    if run is not None:
        folds.append(run)


def _units(stmts: list[ast.stmt], lines: list[bytes]) -> list[tuple[int, int, list[ast.stmt], bool]]:
    """Statements grouped by shared lines (``a = 1; b = 2``): (first line, last line, statements,
    whether the group has its lines to itself)."""
    units: list[list] = []
    for stmt in stmts:
        decorators = getattr(stmt, "decorator_list", None)
        first = min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno
        last = stmt.end_lineno or stmt.lineno
        if units and first <= units[-1][1]:
            units[-1][1] = max(units[-1][1], last)
            units[-1][2].append(stmt)
            continue
        head = lines[first - 1]
        rest = head.lstrip(_SPACE)
        starts_line = rest.startswith(b"@") if decorators else len(head) - len(rest) == stmt.col_offset
        units.append([first, last, [stmt], starts_line])
    out = []
    for first, last, group, own in units:
        end = group[-1]
        tail = lines[last - 1][end.end_col_offset or 0 :].lstrip(_SPACE + b";")
        ends_line = tail in (b"", b"\n", b"\r\n") or tail.startswith(b"#")
        out.append((first, last, group, own and ends_line))
    return out


def _blocks(stmt: ast.stmt, lines: list[bytes]) -> Iterator[list[ast.stmt]]:
    """The statement lists nested in a compound statement, in source order; an ``elif`` belongs
    to its ``if``."""
    body = getattr(stmt, "body", None)
    if isinstance(body, list):
        yield body
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, list) and orelse:
        if (
            isinstance(stmt, ast.If)
            and len(orelse) == 1
            and isinstance(orelse[0], ast.If)
            and lines[orelse[0].lineno - 1][orelse[0].col_offset :].startswith(b"elif")
        ):
            yield from _blocks(orelse[0], lines)
        else:
            yield orelse
    finalbody = getattr(stmt, "finalbody", None)
    if isinstance(finalbody, list) and finalbody:
        yield finalbody


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _rebinding_lines(tree: ast.Module, lines: list[bytes], aliases: dict[bytes, frozenset[bytes]]) -> frozenset[int]:
    """The lines of statements that bind an imported name other than by an import (``torch = x``,
    ``for amp in ...``, ``with ... as cuda``, ``except E as F``, ``del nn``, a nested ``def``), and
    of ``global``/``nonlocal`` statements naming one: in a function the first make the name local to
    all of it, the second keep it global, and the engine's scopes must see both."""
    if not aliases:
        return frozenset()
    names = {name.decode() for name in aliases}
    found: set[int] = set()
    stack: list[tuple[list[ast.stmt], bool]] = [(tree.body, False)]  # (statements, inside a function)
    while stack:
        block, inside = stack.pop()
        for stmt in block:
            nested = inside or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            stack += [(body, nested) for body in _blocks(stmt, lines)]
            if not inside:
                continue  # a module's own bindings are no function's locals
            targets: list[ast.AST] = []
            if isinstance(stmt, (ast.Assign, ast.Delete)):
                targets = list(stmt.targets)
            elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                targets = [stmt.target]
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
            if (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and stmt.name in names
                or isinstance(stmt, (ast.Global, ast.Nonlocal))
                and names.intersection(stmt.names)
            ):
                found.add(stmt.lineno)  # (a global statement undoes what the binding would do)
            if any(isinstance(n, ast.Name) and n.id in names for t in targets for n in ast.walk(t)):
                found.add(stmt.lineno)
            for handler in getattr(stmt, "handlers", ()):
                if handler.name in names:
                    found.add(handler.lineno)
    return frozenset(found)


def _aliases(tree: ast.Module, source: bytes, lines: list[bytes]) -> dict[bytes, frozenset[bytes]]:
    """Each name an import binds anywhere in the file -> the parts of the qualified names it is
    bound to (all of them, when it is bound more than once)."""
    found: dict[bytes, set[bytes]] = {}
    if b"import" not in source:
        return {}

    def bind(local: str, qualified: str) -> None:
        found.setdefault(local.encode(), set()).update(p.encode() for p in qualified.split("."))

    stack = [tree.body]
    while stack:
        for stmt in stack.pop():
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        bind(alias.asname, alias.name)
                    else:
                        root = alias.name.split(".")[0]
                        bind(root, root)
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.module and not stmt.level:
                    for alias in stmt.names:
                        if alias.name != "*":
                            bind(alias.asname or alias.name, f"{stmt.module}.{alias.name}")
            else:
                stack += _blocks(stmt, lines)
    return {name: frozenset(parts) for name, parts in found.items()}
