"""Command line: turns argv into a Config and calls the right mode. No conversion logic here."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from . import __version__
from .codecache import compiled_dataclasses
from .stopping import end_workers, exit_status, stop_on_signals

if TYPE_CHECKING:
    from .config import RuleOptions

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


EPILOG = """\
modes:
  transplant -i PROJECT -o OUT [options]
      convert a repository into OUT/PROJECT_msft/ (with reports)
  transplant -i PROJECT -o OUT [options] distributed -m MAIN.py [-t MODEL]
      also turn single-device training into multi-NPU training (OUT/PROJECT_msft_multi/):
      -m/--main MAIN.py          the training script's entry file (a path, or one relative to PROJECT)
      -t/--target-model MODEL    the variable that holds the model (default: model)
  transplant -i PROJECT -o OUT [options] accuracy -m MAIN.py [-t MODEL] [--steps 0,1] [--level both]
                                                  [--data statistics]
      two instrumented trees (original and converted) whose msprobe dumps can be compared
  transplant compare [--task params|loss|overflow|dumps] --golden BENCH_DUMP --target NPU_DUMP
                     [-o FOLDER] [--format text|json] [--xlsx] [--allow-cpu] [--pattern RE] [--tolerance T] [--plot PNG]
      compare the two accuracy runs: parameters, loss curves, first overflow, msprobe dumps
  transplant --check|--diff|--in-place PATH...
      files and folders where they are (pre-commit, editors, CI)
  transplant [--check|--diff] [--stdin-filename NAME] - < FILE
      source on standard input; the converted source (or the report, or the diff) on standard output
  transplant lsp
      the language server for editors, on stdin/stdout (needs the lsp extra; see 'transplant lsp --help')
  transplant emulate [--backing cpu|cuda] [--strict] [--no-device-identity] [--transfer-to-npu
                     [--torch-npu RELEASE]] [--force-emulation] [-q] SCRIPT|-m MODULE [ARGS...]
      run a converted program with torch_npu emulated on the CPU or a CUDA GPU (runs your code);
      --transfer-to-npu runs an unconverted one as torch_npu's zero-edit runtime migration does
  transplant test-rules [RULES.json...]
      check the examples that rule entries carry (the built-in rules when no file is named)

settings: [tool.transplant] in the project's pyproject.toml; flags win.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        raise SystemExit(_fail(f"{message} (see 'transplant --help')"))


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"transplant: error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    from .rules import DEFAULT_PYTORCH_VERSION, DEFAULT_TORCH_NPU, PYTORCH_VERSIONS, TORCH_NPU_RELEASES
    from .runtime_mode import MODES

    p = _Parser(
        prog="transplant",
        description="Migrate CUDA PyTorch code to Ascend NPU (torch_npu).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-i", "--input", type=Path, help="folder or .py file to convert")
    p.add_argument("-o", "--output", type=Path, help="folder that receives <input name>_msft/")
    p.add_argument(
        "-r",
        "--rule",
        type=Path,
        action="append",
        default=[],
        metavar="RULES.json",
        help="user rule file (may be given more than once)",
    )
    p.add_argument(
        "-s",
        "--specify-device",
        action="store_true",
        help="take the device index from the DEVICE_ID environment variable",
    )
    p.add_argument(
        "-sim",
        "--similar",
        action="store_true",
        help="replace some APIs with functionally similar NPU APIs (may change accuracy/speed)",
    )
    p.add_argument(
        "--pytorch-version",
        choices=PYTORCH_VERSIONS,
        default=None,
        help=f"PyTorch version the converted code runs with: its NPU support list is reported "
        f"(default {DEFAULT_PYTORCH_VERSION}, or the recommended one of --torch-npu)",
    )
    p.add_argument(
        "--torch-npu",
        choices=TORCH_NPU_RELEASES,
        default=None,
        metavar="RELEASE",
        help=f"torch_npu release ({', '.join(TORCH_NPU_RELEASES)}); default: the newest final release that "
        f"ships --pytorch-version (the default pair is PyTorch {DEFAULT_PYTORCH_VERSION} with torch_npu "
        f"{DEFAULT_TORCH_NPU})",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="full: convert every CUDA use (default); runtime: leave to torch_npu's runtime migration "
        "(TORCH_TRANSFER_TO_NPU=1, set in the programs) what it patches and change only what it gets wrong",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (default: number of cores; 1 runs in-process)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing result folder")
    p.add_argument(
        "--strict-exit",
        action="store_true",
        help="exit 1 when a file could not be converted (unreadable, does not parse) or the input has no Python file",
    )
    p.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, warnings or summary")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--version", action="version", version=f"transplant {__version__}")
    # file modes (issue 4)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="report only; exit 1 if anything would change or CUDA-only code remains"
    )
    mode.add_argument(
        "--diff", action="store_true", help="print a unified diff; write nothing; exit 1 if there is a diff"
    )
    mode.add_argument("--in-place", action="store_true", help="rewrite the given files; report what remains")
    p.add_argument("--stdin-filename", type=Path, help="path to report for source read from stdin")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="diagnostics format")
    p.add_argument("paths", nargs="*", type=Path, help="files or folders for --check/--diff/--in-place, or - for stdin")
    return p


def build_distributed_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="transplant ... distributed", description="single-GPU -> multi-NPU conversion")
    p.add_argument("-m", "--main", type=Path, required=True, help="entry Python file of the training script")
    p.add_argument(
        "-t",
        "--target-model",
        "--target_model",
        dest="target",
        default="model",
        help="variable that holds the model (default: model)",
    )
    return p


def build_accuracy_parser() -> argparse.ArgumentParser:
    from .accuracy.cli import add_accuracy_arguments

    p = _Parser(
        prog="transplant ... accuracy",
        description="two instrumented trees (original and converted) whose msprobe dumps compare",
    )
    add_accuracy_arguments(p)
    return p


MODES = ("distributed", "accuracy")


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str] | None, str | None]:
    """The repository-mode arguments, those of the mode that follows them, and that mode's name."""
    argv = list(argv)
    for i, word in enumerate(argv):
        if word in MODES:
            return argv[:i], argv[i + 1 :], word
    return argv, None, None


def _flags(args: argparse.Namespace) -> dict:
    """The command-line flags that override [tool.transplant]."""
    return dict(
        rules=args.rule,
        specify_device=args.specify_device,
        similar=args.similar,
        pytorch_version=args.pytorch_version,
        torch_npu=args.torch_npu,
        mode=args.mode,
    )


def _options(args: argparse.Namespace) -> RuleOptions:
    """The [tool.transplant] table of the input's project (-i), overridden by the flags given."""
    from .settings import project_options

    start = (args.input if args.input.is_dir() else args.input.parent) if args.input else Path.cwd()
    return project_options(start, **_flags(args))[0]


def _options_at(args: argparse.Namespace) -> Callable[[Path], RuleOptions]:
    """For file modes: the options of the project a file belongs to (the nearest pyproject.toml at
    or above its folder, as ruff and the language server find it), overridden by the flags given."""
    from .settings import find_pyproject, options_for, read_table

    flags = _flags(args)
    tables: dict[Path | None, RuleOptions] = {}

    def at(folder: Path) -> RuleOptions:
        path = find_pyproject(folder)
        if path not in tables:
            tables[path] = options_for(read_table(path) if path is not None else {}, **flags)
        return tables[path]

    return at


SHORT_USAGE = """\
usage: transplant -i PROJECT -o OUT [options]        convert a repository
       transplant --check|--diff|--in-place PATH...  files where they are
       transplant emulate|compare|lsp|test-rules ...   the other modes
try 'transplant --help' for every mode and option"""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a first try: a hint, not the full help or an error about -i/-o
        print(SHORT_USAGE, file=sys.stderr)
        return EXIT_USAGE
    if argv[:1] == ["emulate"]:  # runs user code: kept apart from the converter (transplant/emulate/)
        from .emulate.cli import main as emulate

        return emulate(argv[1:])
    if argv[:1] == ["compare"]:  # reads msprobe dumps (transplant/accuracy/compare.py): no converter, no libcst
        from .accuracy.compare import main as compare

        return compare(argv[1:])
    debug = "--debug" in argv
    with stop_on_signals():  # Ctrl-C and SIGTERM raise KeyboardInterrupt here, once (stopping.py)
        try:
            if argv[:1] == ["lsp"]:  # a long-lived server: its own start-up (transplant/lsp/)
                return _main(argv)
            # the converter's modules and libcst are imported below: see codecache.py
            with compiled_dataclasses():
                return _main(argv)
        except KeyboardInterrupt as exc:
            end_workers()  # the pool that was running ended its own, unless the signal came between files
            print("transplant: interrupted; no result was written", file=sys.stderr)
            return exit_status(exc)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        except Exception as exc:
            return _failure(exc, debug)


def _failure(exc: Exception, debug: bool) -> int:
    """One line on stderr for an error that ended the run; the traceback only with --debug."""
    from .records import internal_error
    from .rules import RuleError

    if isinstance(exc, RuleError):
        return _fail(str(exc))
    if debug:
        raise exc
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", EXIT_USAGE)
    return _fail(internal_error(exc), 3)  # last line of defence: one line, not a traceback


def _main(argv: list[str]) -> int:
    if argv[:1] == ["lsp"]:
        from .lsp import main as lsp_main

        return lsp_main(argv[1:])
    if argv[:1] == ["test-rules"]:  # the examples rule entries carry (ruleexamples.py)
        from .ruleexamples import main as test_rules

        return test_rules(argv[1:])
    head, tail, mode = split_argv(argv)
    args = build_parser().parse_args(head)
    dist = build_distributed_parser().parse_args(tail) if mode == "distributed" else None
    accuracy = build_accuracy_parser().parse_args(tail) if mode == "accuracy" else None
    if args.jobs < 1:
        return _fail("--jobs must be at least 1")

    file_mode = args.check or args.diff or args.in_place or (args.paths and str(args.paths[0]) == "-")
    if file_mode:
        if args.input or args.output or mode is not None:
            return _fail(f"-i/-o/{mode or 'distributed'} cannot be combined with --check/--diff/--in-place/-")
        from .filemodes import run_file_mode

        return run_file_mode(args, _options_at(args))
    if args.paths:
        return _fail(
            "unexpected arguments " + " ".join(map(str, args.paths)) + " (use -i/-o, or --check/--diff/--in-place)"
        )
    missing = [flag for flag, value in (("-i/--input", args.input), ("-o/--output", args.output)) if value is None]
    if missing:
        return _fail(f"the following arguments are required: {', '.join(missing)}")

    from .config import Config

    rule_options = _options(args)
    if mode is not None and rule_options.mode == "runtime":
        return _fail(
            f"{mode} mode converts for the full conversion: --mode runtime (or [tool.transplant] mode) cannot be combined with it"
        )
    config = Config(
        input=args.input,
        output=args.output,
        rule_options=rule_options,
        jobs=args.jobs,
        force=args.force,
        prefilter=not args.no_prefilter,
        progress=not args.quiet,
        suffix="_msft_multi" if dist is not None else "_msft",
        distributed_main=dist.main if dist is not None else None,
        distributed_target=dist.target if dist is not None else "model",
        debug=args.debug,
        strict_exit=args.strict_exit,
    )
    if accuracy is not None:
        from .accuracy.cli import options_from
        from .accuracy.trees import run_accuracy

        return run_accuracy(config, options_from(accuracy), quiet=args.quiet)
    from .console import run_repository

    return run_repository(config, quiet=args.quiet)
