"""Repository mode as the user sees it: progress bar, warnings, summary table."""

from __future__ import annotations

import sys

from .config import Config
from .records import needs_hand_rewrite
from .runner import RunSummary, UsageError, run, rules_for


def run_repository(config: Config, *, quiet: bool = False) -> int:
    err = None  # with -q nothing is printed: rich is not even imported
    if not quiet:
        from rich.console import Console

        err = Console(stderr=True, highlight=False)
    rules = rules_for(config.rule_options)
    post = None

    def warn(message: str) -> None:
        if err is not None:
            err.print(f"[yellow]warning:[/] {message}", markup=True, soft_wrap=True)

    try:
        if config.distributed_main is not None:
            from .distributed import prepare_distributed

            post = prepare_distributed(config)  # validates -m/-t; raises UsageError
        if err is None or not err.is_terminal:
            summary = run(config, rules, warn=warn, post_process=post)
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("converting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=err, transient=True) as progress:
                task = progress.add_task("convert", total=None)

                def on_progress(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                summary = run(config, rules, on_progress=on_progress, warn=warn, post_process=post)
    except UsageError as exc:
        print(f"transplant: error: {exc}", file=sys.stderr)
        return 2
    if err is not None:
        print_summary(Console(highlight=False), summary)
    return 0


def print_summary(out, summary: RunSummary) -> None:
    from rich.table import Table

    changes = sum(len(r.changes) for r in summary.results)
    unsupported = sum(1 for r in summary.results for f in r.findings if needs_hand_rewrite(f))  # unparsed: below
    table = Table(title="transplant summary", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("files converted", str(summary.changed_files))
    table.add_row("files copied unchanged", str(summary.copied))
    table.add_row("changes", str(changes))
    table.add_row("unsupported API uses (see unsupported_op.xlsx)", str(unsupported))
    table.add_row("files that could not be parsed", str(len(summary.failed)))
    out.print(table)
    for note in summary.notes:
        out.print(note, markup=False, soft_wrap=True)
    for res in summary.failed:
        out.print(f"not converted: {res.path}: {res.error}", markup=False, soft_wrap=True)
    for name, actual in summary.report_names.items():
        if actual != name:
            out.print(f"report {name} written as {actual} (the project has its own {name})", markup=False,
                      soft_wrap=True)
    out.print(f"result: {summary.result_dir}", markup=False, soft_wrap=True)
