"""File modes for pre-commit hooks and editors: --check, --diff, --in-place and stdin (``-``).

They convert the named files (and the Python files, notebooks and shell scripts below named
folders) with the same engine and rules as repository mode, but work on the files where they are:
no result folder and no report files. Diagnostics are rendered by :mod:`transplant.reports.diagnostics`.

Exit status: 0 nothing to do; 1 a change is needed (--check, --diff) or was made (--in-place, stdin),
or an error/warning finding remains; 2 usage or input errors (missing path, unreadable file, file that
does not parse). Notes never change the exit status.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TextIO

from .config import RuleOptions
from .reports.diagnostics import Diagnostic, render
from .records import Record, internal_error, needs_hand_rewrite
from .filekinds import detect_kind, labels, small_enough
from .filetypes import FileResult, convert_named, file_kind
from .project import NO_FACTS, gather
from .roots import with_project_fact
from .pool import WORKER_DIED, run_jobs
from . import slowfiles
from .session import Session, load_rules
from .slowfiles import noted_if_slow
from .walk import walk

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
STDIN = "-"


class FileModeError(Exception):
    """A usage error of the file modes: one line, exit status 2."""


@dataclass
class Target:
    display: str  # the path as the user named it (folder + relative path for walked files)
    path: str  # the file to read and, with --in-place, to replace
    kind: str  # a name of filekinds.KINDS


@dataclass
class Outcome:
    """One file converted in memory; nothing has been written yet."""

    target: Target
    old: bytes | None = None  # kept only when the file would change
    new: bytes | None = None
    records: list[Record] = field(default_factory=list)  # of the file as it is now
    remaining: list[Record] = field(default_factory=list)  # findings in the converted file
    error: str | None = None  # cannot read, does not parse, or the converter failed
    stamp: tuple[int, int] | None = None  # (size, mtime_ns) when read

    def diagnostics(self, *, after: bool) -> list[Diagnostic]:
        """Changes and findings of the file as it is (``after=False``), or only the findings
        left in the converted text, with their positions there (``after=True``)."""
        if self.new is not None and after:
            records = self.remaining
        elif after:
            records = [r for r in self.records if not r.is_change]
        else:
            records = self.records
        return [Diagnostic.from_record(self.target.display, r) for r in records]


# --------------------------------------------------------------------------- finding the files


def walk_sources(root: str, errors: list[str]) -> Iterator[str]:
    """Relative paths of the files below ``root`` that transplant converts (filekinds), sorted.

    Same policy as repository mode (walk.walk), but third-party folders are not entered at all,
    and a folder that cannot be listed is an error.
    """

    def unlistable(rel: str, reason: str) -> None:
        errors.append(f"{os.path.join(root, rel) if rel else root}: cannot list folder: {reason}")

    for entry in walk(Path(root), lambda message: None, unlistable=unlistable, vendored_too=False):
        if entry.kind == "file" and small_enough(file_kind(entry.rel), os.path.join(root, entry.rel)):
            yield entry.rel.replace("/", os.sep)


def collect(paths: list[str], errors: list[str]) -> list[Target]:
    """The files to convert, in the order given, each once; problems go to ``errors``."""
    targets: list[Target] = []
    seen: set[str] = set()

    def add(display: str, path: str, kind: str) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            targets.append(Target(display, path, kind))

    for path in paths:
        if not os.path.lexists(path):
            errors.append(f"{path}: no such file or folder")
        elif os.path.isdir(path):
            for rel in walk_sources(path, errors):
                display = rel if os.path.normpath(path) == "." else os.path.join(path, rel)
                add(display, os.path.join(path, rel), file_kind(rel))
        elif os.path.isfile(path):
            try:
                with open(path, "rb") as fh:
                    head = fh.read(256)
            except OSError as exc:
                errors.append(f"{path}: cannot read: {exc.strerror}")
                continue
            kind = detect_kind(path, head)
            if kind is None:
                errors.append(f"{path}: not a file type transplant converts ({labels()}); not converted")
            else:
                add(path, path, kind)
        else:
            errors.append(f"{path}: not a regular file or folder")
    return targets


# --------------------------------------------------------------------------- converting


def _convert_target(session: Session, job: tuple[Target, bool]) -> Outcome:
    target, after = job
    outcome = Outcome(target)
    try:
        with open(target.path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError as exc:
        outcome.error = f"cannot read: {exc.strerror}"
        return outcome
    outcome.stamp = (st.st_size, st.st_mtime_ns)
    if not session.prefilter or session.rules.may_match(data):  # (else the project's facts change nothing)
        facts = with_project_fact(session.facts, target.path)  # the facts repository mode finds (roots.py)
        if facts is not session.facts:
            session = dataclasses.replace(session, facts=facts)
    try:
        with noted_if_slow(session.slow_note, target.display, data):
            result, outcome.remaining = convert_named(session, data, target.kind, target.display, after=after)
    except Exception as exc:  # a bug for this file must not stop the others; nothing is written for it
        if session.debug:
            raise
        outcome.error = internal_error(exc)
        return outcome
    return _outcome(outcome, data, result)


def _outcome(outcome: Outcome, data: bytes, result: FileResult) -> Outcome:
    """``outcome`` completed from the conversion ``result`` of ``data``."""
    outcome.records = result.records
    if result.error:
        outcome.error = f"not converted: {result.error}"
    elif result.new is not None and result.new != data:
        outcome.old, outcome.new = data, result.new
    return outcome


def _shown(outcome: Outcome, args: Namespace) -> list[Diagnostic]:
    """What a mode reports of a file: --check, all of the file as it is; --diff, its findings (the
    diff shows the changes); --in-place and stdin, the findings left in the converted file."""
    if args.check:
        return outcome.diagnostics(after=False)
    if args.diff:
        return [d for d in outcome.diagnostics(after=False) if not d.is_change]
    return outcome.diagnostics(after=True)


def convert_targets(
    targets: list[Target],
    options: RuleOptions,
    *,
    jobs: int,
    prefilter: bool,
    after: bool,
    debug: bool = False,
    slow_note: float | None = None,
) -> list[Outcome]:
    rules = load_rules(options)  # once, before the workers start: they inherit it, and bad -r files fail early
    facts = gather((t.display.replace(os.sep, "/"), t.path) for t in targets)  # the project-wide first pass
    session = Session(rules, facts, prefilter=prefilter, debug=debug, slow_note=slow_note)
    return list(
        run_jobs(
            session,
            _convert_target,
            [(t, after) for t in targets],
            jobs,
            died=lambda job: Outcome(job[0], error=f"not converted: {WORKER_DIED}"),
        )
    )


# --------------------------------------------------------------------------- writing


def write_atomic(path: str, data: bytes, stamp: tuple[int, int] | None = None) -> None:
    """Replace the file's content: a temporary file in the same folder, then os.replace.

    The file keeps its permission bits (and owner, where allowed). A symbolic link is written
    through, not replaced. Raises OSError, and leaves the file alone, when it changed after it
    was read (``stamp``) or cannot be written.
    """
    import tempfile

    real = os.path.realpath(path)
    st = os.stat(real)
    if stamp is not None and (st.st_size, st.st_mtime_ns) != stamp:
        raise OSError(0, "file changed while it was being converted; not written", path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{os.path.basename(real)}.", suffix=".transplant-tmp", dir=os.path.dirname(real)
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        tmp_st = os.stat(tmp)
        if (tmp_st.st_uid, tmp_st.st_gid) != (st.st_uid, st.st_gid):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not ours to give away; the content and mode still match
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(display: str, old: bytes, new: bytes) -> bytes:
    """A unified diff of two byte strings, usable with ``patch -p0`` and ``git apply -p0``."""
    import difflib

    name = os.fsencode(display)
    out: list[bytes] = []
    for line in difflib.diff_bytes(
        difflib.unified_diff, old.splitlines(keepends=True), new.splitlines(keepends=True), name, name
    ):
        out.append(line)
        if not line.endswith((b"\n", b"\r")):
            out.append(b"\n\\ No newline at end of file\n")
    return b"".join(out)


def _write_bytes(stream: TextIO, data: bytes) -> None:
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "surrogateescape"))
        stream.flush()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --------------------------------------------------------------------------- the modes


def run_file_mode(args: Namespace, options_at: Callable[[Path], RuleOptions]) -> int:
    """Entry point from the command line; returns the exit status. ``options_at(folder)``: the
    options of the project that folder belongs to (its [tool.transplant] and the flags)."""
    try:
        paths = [str(p) for p in args.paths]
        if STDIN in paths:
            if len(paths) != 1:
                raise FileModeError("- (standard input) cannot be combined with other paths")
            if args.in_place:
                raise FileModeError("--in-place cannot be used with - (standard input); use - alone")
            named = args.stdin_filename
            return run_stdin(args, options_at(Path(named).parent if named is not None else Path.cwd()))
        if args.stdin_filename is not None:
            raise FileModeError("--stdin-filename is only used with - (standard input)")
        if not paths:
            raise FileModeError("no files or folders given")
        return run_files(args, options_at, paths)
    except FileModeError as exc:
        print(f"transplant: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _exit_status(diagnostics: list[Diagnostic], *, changed: bool, failed: bool) -> int:
    if failed:
        return EXIT_ERROR
    if changed or any(d.counts for d in diagnostics):
        return EXIT_FOUND
    return EXIT_OK


def run_files(args: Namespace, options_at: Callable[[Path], RuleOptions], paths: list[str]) -> int:
    errors: list[str] = []
    targets = collect(paths, errors)
    prefilter = not getattr(args, "no_prefilter", False)
    # each file with the settings of its own project: one conversion per project, in the order given
    projects: dict[RuleOptions, list[Target]] = {}
    for target in targets:
        projects.setdefault(options_at(Path(target.path).parent), []).append(target)
    converted: dict[int, Outcome] = {}
    for options, group in projects.items():
        outcomes = convert_targets(
            group,
            options,
            jobs=args.jobs,
            prefilter=prefilter,
            after=args.in_place,
            debug=args.debug,
            slow_note=None if args.quiet else slowfiles.SLOW_FILE_SECONDS,
        )
        converted.update((id(target), outcome) for target, outcome in zip(group, outcomes))  # in order
    outcomes = [converted[id(t)] for t in targets]
    if any(t.kind in ("python", "notebook") for t in targets) and len(targets) > 1:
        from .project.reminders import settle

        # a project's files: the torch_npu reminder once, as a repository conversion reports it
        by_display = {o.target.display.replace(os.sep, "/"): o.target.path for o in outcomes}

        def read(display: str) -> bytes:
            with open(by_display[display], "rb") as fh:
                return fh.read()

        settle(outcomes, lambda o: o.target.display.replace(os.sep, "/"), read)
    out, err = sys.stdout, sys.stderr
    quiet = args.quiet

    diagnostics: list[Diagnostic] = []
    changed: list[Outcome] = []
    unparsed = 0
    for outcome in outcomes:
        display = outcome.target.display
        if outcome.error and not outcome.records:  # could not read or convert it
            errors.append(f"{display}: {outcome.error}")
            continue
        unparsed += bool(outcome.error)  # reported as a TP900 diagnostic
        if args.in_place and outcome.new is not None:
            try:
                write_atomic(outcome.target.path, outcome.new, outcome.stamp)
            except OSError as exc:
                errors.append(f"{display}: cannot write: {exc.strerror or exc}")
                diagnostics.extend(outcome.diagnostics(after=False))
                continue
            if not quiet:
                n = sum(1 for r in outcome.records if r.is_change)
                print(f"converted {display} ({_plural(n, 'change')})", file=err)
        diagnostics.extend(_shown(outcome, args))
        if outcome.new is not None:
            changed.append(outcome)

    status = _exit_status(diagnostics, changed=bool(changed), failed=bool(errors) or unparsed > 0)
    for message in errors:
        print(f"transplant: error: {message}", file=err)
    if args.diff:
        _write_bytes(
            out,
            b"".join(
                unified_diff(o.target.display, o.old, o.new) for o in changed if o.old is not None and o.new is not None
            ),
        )
    report = render(diagnostics, args.format, notifications=errors, exit_code=status)
    if report:
        print(report, end="", file=err if args.diff else out, flush=True)
    if not quiet:
        print(_summary(args, len(targets), changed, diagnostics, errors, unparsed), file=err)
    return status


def _summary(
    args: Namespace, total: int, changed: list[Outcome], diagnostics: list[Diagnostic], errors: list[str], unparsed: int
) -> str:
    if total == 0 and not errors:
        return "transplant: no Python files, notebooks or shell scripts found"
    parts = [_plural(total, "file") + " checked"]
    if changed:
        verb = "converted" if args.in_place else "would be converted"
        parts.append(f"{_plural(len(changed), 'file')} {verb}")
    remaining = sum(1 for d in diagnostics if needs_hand_rewrite(d))
    if remaining:
        parts.append(f"{_plural(remaining, 'unsupported API use')} to rewrite by hand")
    if unparsed:
        parts.append(f"{_plural(unparsed, 'file')} could not be parsed")
    if len(parts) == 1:
        parts.append("nothing to convert")
    if errors:
        parts.append(_plural(len(errors), "error"))
    return "transplant: " + "; ".join(parts)


def run_stdin(args: Namespace, options: RuleOptions) -> int:
    """Source on stdin. Plain ``-`` writes the converted source (or the input unchanged when it cannot
    be converted) to stdout and diagnostics to stderr; ``--check -`` writes only diagnostics to stdout;
    ``--diff -`` writes the diff to stdout and diagnostics to stderr."""
    data = sys.stdin.buffer.read()
    name = str(args.stdin_filename) if args.stdin_filename is not None else STDIN
    kind = detect_kind(name, data[:256]) or "python"
    prefilter = not getattr(args, "no_prefilter", False)
    plain = not (args.check or args.diff)
    try:
        facts = with_project_fact(NO_FACTS, name) if args.stdin_filename is not None else NO_FACTS
        session = Session(load_rules(options), facts, prefilter=prefilter)
        result, remaining = convert_named(session, data, kind, name, after=True)
    except BaseException:
        if plain:
            _write_bytes(sys.stdout, data)  # an editor that pipes through us keeps its text
        raise
    outcome = _outcome(Outcome(Target(name, name, kind), remaining=remaining), data, result)
    diagnostics = _shown(outcome, args)
    status = _exit_status(diagnostics, changed=outcome.new is not None, failed=outcome.error is not None)
    if plain:
        _write_bytes(sys.stdout, outcome.new if outcome.new is not None else data)
    elif args.diff and outcome.new is not None:
        _write_bytes(sys.stdout, unified_diff(name, data, outcome.new))
    report = render(diagnostics, args.format, exit_code=status)
    if report:
        print(report, end="", file=sys.stdout if args.check else sys.stderr, flush=True)
    return status
