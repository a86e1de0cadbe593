"""Repository mode as the user sees it: warnings, a progress bar for long runs, the summary.

Everything is plain text, except in a terminal, where warnings are coloured and a run with many
files to convert shows a progress bar. rich is imported only for those: a small run starts faster
without it, and the summary reads the same in a terminal and in a CI log.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .config import Config
from .pool import POOL_MIN_FILES
from .session import load_rules
from .runner import RunSummary, UsageError, run

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

# --strict-exit: a file could not be converted (could not be read or parsed), or nothing was to convert
EXIT_INCOMPLETE = 1

# Fewer files than this convert in a moment (in this process, without workers): no progress bar.
PROGRESS_MIN_FILES = POOL_MIN_FILES


class _Terminal:
    """Warnings and the progress bar on a terminal's stderr, through rich (imported on first use)."""

    def __init__(self) -> None:
        self.console: Console | None = None
        self.bar: Progress | None = None
        self.task: TaskID | None = None  # (the bar's one task, added with it)

    def _console(self):
        if self.console is None:
            from rich.console import Console

            self.console = Console(stderr=True, highlight=False)
        return self.console

    def warn(self, message: str) -> None:
        from rich.markup import escape

        self._console().print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)

    def progress(self, done: int, total: int) -> None:
        if self.bar is None:
            if total < PROGRESS_MIN_FILES:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("converting"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self._console(),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("convert", total=total)
        if self.task is not None:
            self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _plain_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def run_repository(config: Config, *, quiet: bool = False) -> int:
    from .reports import writer_child

    writer_child.start()  # imports openpyxl in a child while this process converts
    try:
        return _run_repository(config, quiet)
    finally:
        writer_child.stop()  # (when the run ended before its workbook)


def _run_repository(config: Config, quiet: bool) -> int:
    terminal = _Terminal() if not quiet and sys.stderr.isatty() else None
    warn = None if quiet else terminal.warn if terminal is not None else _plain_warning
    rules = load_rules(config.rule_options)
    post = None
    try:
        if config.distributed_main is not None:
            from .distributed import prepare_distributed

            post = prepare_distributed(config)  # validates -m/-t; raises UsageError
        summary = run(
            config, rules, on_progress=terminal.progress if terminal is not None else None, warn=warn, post_process=post
        )
    except UsageError as exc:
        print(f"transplant: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if terminal is not None:
            terminal.close()
    if not quiet:
        print_summary(sys.stdout, summary)
    return EXIT_INCOMPLETE if config.strict_exit and (summary.failed or summary.nothing_to_convert) else 0


def summary_rows(summary: RunSummary) -> list[tuple[str, int]]:
    from .reports.findings import level_counts

    changes = sum(len(r.changes) for r in summary.results)
    levels = level_counts(summary.results)  # files that do not parse: below
    return [
        ("files converted", summary.changed_files),
        ("files copied unchanged", summary.copied),
        ("changes", changes),
        ("errors (rewrite by hand; see unsupported_op.xlsx)", levels["error"]),
        ("warnings (check or port by hand)", levels["warning"]),
        ("notes", levels["note"]),
        ("files that could not be parsed", len(summary.failed)),
    ]


def kind_lines(summary: RunSummary) -> list[str]:
    """The findings by kind (code and name), with their count per level."""
    from .codes import BY_CODE
    from .reports.findings import kind_counts

    counted = kind_counts(summary.results)
    if not counted:
        return []
    labels = [f"{code} {BY_CODE[code].name}" if code in BY_CODE else code for code, _ in counted]
    width = max(map(len, labels))
    lines = ["findings by kind"]
    for label, (_, levels) in zip(labels, counted):
        parts = [f"{n} {level}{'s' if n != 1 else ''}" for level, n in levels.items() if n]
        lines.append(f"  {label:<{width}}  {', '.join(parts)}")
    return lines


def print_summary(out, summary: RunSummary) -> None:
    rows = summary_rows(summary)
    width = max(len(label) for label, _ in rows)
    digits = max(len(str(count)) for _, count in rows)
    lines = ["transplant summary"]
    lines += [f"  {label:<{width}}  {count:>{digits}}" for label, count in rows]
    lines += kind_lines(summary)
    for note in summary.notes:
        lines.append(note)
    for res in summary.failed:
        lines.append(f"not converted: {res.path}: {res.error}")
    for name, actual in summary.report_names.items():
        if actual != name:
            lines.append(f"report {name} written as {actual} (the project has its own {name})")
    lines.append(f"result: {summary.result_dir}")
    print("\n".join(lines), file=out)
