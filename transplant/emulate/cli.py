"""`transplant emulate [--backing cpu|cuda] [--strict] [--[no-]device-identity] [-q] [--transfer-to-npu [--torch-npu RELEASE]] [--force-emulation] (SCRIPT | -m MODULE) [ARGS...]`.

Checks the request (the script or module exists, torch is importable, no real torch_npu would be
shadowed, the CUDA backing has a GPU), says on stderr that it runs the user's code because asked,
then runs SCRIPT (as ``python SCRIPT``) or MODULE (as ``python -m MODULE``: the current folder first
on sys.path, ``sys.argv[0]`` the module's file) as ``__main__`` with ARGS, in this process, with the
shim ``torch_npu`` importable, and loaded before the program's first line where PyTorch autoloads
device extensions (runtime.py). Bad input is one line on stderr and exit status 2. The program's own
exceptions show their traceback as Python would show them (exit 1); its exit status is passed
through; a strict CUDA use is one line naming file and line (exit 1), also when the program caught
it. No torch import before the checks pass.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
from pathlib import Path

from ..rule_versions import DEFAULT_TORCH_NPU
from ..transfer_api import RELEASES_COVERED
from . import BACKING_ENV, BACKINGS, IDENTITY_ENV, PACKAGE_ENV, QUIET_ENV, RELEASE_ENV, STRICT_ENV, EmulationError

SHIM = Path(__file__).resolve().parent / "shim"
EXIT_USAGE = 2
_VALUED = ("--backing", "--torch-npu")  # the options that take a value (as the next word or after "=")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        if message.startswith("the following arguments are required: script"):  # argparse counts ARGS too
            message = (
                "no SCRIPT given: transplant emulate [options] SCRIPT [ARGS...] "
                "or transplant emulate [options] -m MODULE [ARGS...]"
            )
        raise SystemExit(_fail(f"{message} (see 'transplant emulate --help')"))


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"transplant emulate: error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="transplant emulate",
        usage="%(prog)s [options] SCRIPT [ARGS...]\n       %(prog)s [options] -m MODULE [ARGS...]",
        description="Run a converted program with torch_npu emulated on the CPU (or a CUDA GPU): a "
        "script, or a module as 'python -m' runs it (-m pytest runs a test suite).",
        epilog=f"Defaults come from {BACKING_ENV} and {STRICT_ENV}=1, so processes started by "
        "run_distributed_npu.sh with TRANSPLANT_EMULATE=1 are emulated alike.",
    )
    p.add_argument(
        "--backing",
        choices=BACKINGS,
        default=os.environ.get(BACKING_ENV, "cpu"),
        help="device that stands in for the NPUs (default: %(default)s)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        default=os.environ.get(STRICT_ENV) == "1",
        help="every CUDA use left in the project's own files is an error naming file and line",
    )
    p.add_argument(
        "--device-identity",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get(IDENTITY_ENV) != "0",
        help="tensors moved to npu are npu tensors (device.type == 'npu'), computed on the backing device "
        f"(the default; --no-device-identity or {IDENTITY_ENV}=0: they are tensors of the backing device)",
    )
    p.add_argument(
        "--transfer-to-npu",
        action="store_true",
        default=os.environ.get("TORCH_TRANSFER_TO_NPU") == "1",
        help="run an unconverted CUDA program as torch_npu's zero-edit runtime migration runs it "
        "(TORCH_TRANSFER_TO_NPU=1: torch.cuda is torch_npu.npu, 'cuda' given to the APIs it wraps is 'npu')",
    )
    p.add_argument(
        "--torch-npu",
        metavar="RELEASE",
        choices=RELEASES_COVERED,
        default=os.environ.get(RELEASE_ENV, DEFAULT_TORCH_NPU),
        help=f"the torch_npu release whose runtime migration applies ({', '.join(RELEASES_COVERED)}; "
        f"default {DEFAULT_TORCH_NPU}): later releases patch more",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=os.environ.get(QUIET_ENV) == "1",
        help="no summary of what the run sent to the NPU at the end",
    )
    p.add_argument(
        "--force-emulation",
        action="store_true",
        help="emulate even though a real torch_npu is installed (the emulation hides it)",
    )
    p.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run library module MODULE as a script, as 'python -m MODULE' (e.g. -m pytest)",
    )
    p.add_argument("script", type=Path, nargs="?", help="the converted Python script to run")
    p.add_argument("args", nargs="*", help="arguments for the script or module")
    return p


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """(emulate's own words, the program's arguments): emulate's options end at the script or at
    ``-m MODULE``, as Python's own do; everything after belongs to the program, options included."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[: i + 2], argv[i + 2 :]
        if word == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if word.startswith("-m") and not word.startswith("--"):  # -mpytest
            return argv[: i + 1], argv[i + 1 :]
        if not word.startswith("-") or word == "-":
            return argv[: i + 1], argv[i + 1 :]
        i += 2 if word in _VALUED else 1
    return argv, []


def parse(argv: list[str]) -> argparse.Namespace:
    own, program_args = split(argv)
    args = build_parser().parse_args(own)
    if args.module is not None and args.script is not None:  # "-m X" after the script belongs to it
        raise SystemExit(_fail("give a SCRIPT or -m MODULE, not both"))
    if args.module is None and args.script is None:
        raise SystemExit(
            _fail(
                "no SCRIPT given: transplant emulate [options] SCRIPT [ARGS...] "
                "or transplant emulate [options] -m MODULE [ARGS...] (see 'transplant emulate --help')"
            )
        )
    args.args = program_args
    return args


def _check(args) -> str | None:
    """Why the request cannot run, or None (a module is looked for once torch is set up: run_module)."""
    script = args.script
    if script is not None and not script.exists():
        return f"{script}: no such file"
    if script is not None and not script.is_file():
        return f"{script}: not a file"
    if importlib.util.find_spec("torch") is None:
        return (
            "PyTorch is not installed in this Python (emulation runs the program on the real torch); the CPU "
            f"wheel: {sys.executable} -m pip install torch --index-url https://download.pytorch.org/whl/cpu"
        )
    if importlib.util.find_spec("torch_npu") is not None and not args.force_emulation:
        return (
            "a real torch_npu is installed in this Python; run the program with it, or pass "
            "--force-emulation to hide it behind the emulation"
        )
    return None


def _find_module(name: str) -> str | None:
    """Why ``python -m name`` would not find what to run, or None."""
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            if importlib.util.find_spec(f"{name}.__main__") is None:
                return f"{name} is a package and has no __main__ module to run"
    except ModuleNotFoundError:
        spec = None
    except (ImportError, ValueError) as exc:
        return f"{name}: {exc}"
    return None if spec is not None else f"no module named {name}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    problem = _check(args)
    if problem:
        return _fail(problem)
    os.environ[BACKING_ENV] = args.backing
    os.environ[STRICT_ENV] = "1" if args.strict else "0"
    os.environ[IDENTITY_ENV] = "1" if args.device_identity else "0"
    os.environ[QUIET_ENV] = "1" if args.quiet else "0"
    os.environ[RELEASE_ENV] = args.torch_npu
    if args.transfer_to_npu:  # read where the emulated torch_npu is imported, as torch_npu reads it
        os.environ["TORCH_TRANSFER_TO_NPU"] = "1"
    # a child started by another Python (`accelerate` or `torchrun` found on PATH outside this
    # environment) loads transplant from its folder alone (shim/torch_npu)
    os.environ[PACKAGE_ENV] = str(Path(__file__).resolve().parent.parent)
    # the shim goes first on the path of this process and of the processes the program starts
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH")) if p)
    what = f"-m {args.module}" if args.module else str(args.script)
    if args.module:
        sys.path[0] = os.getcwd()  # as `python -m MODULE` has it (not this command's folder)
    else:
        sys.path[0] = str(args.script.resolve().parent)  # as `python SCRIPT` has it
    sys.path.insert(1, str(SHIM))  # before torch is imported: its autoload finds the emulated torch_npu
    if args.backing == "cuda":
        if not args.device_identity:
            # ATen takes the renamed PrivateUse1 ("npu") for this process's accelerator before CUDA,
            # and the autograd engine then fails every backward pass on GPU tensors (an internal
            # assertion on streams, with or without a device guard for npu; seen on an H200 with torch 2.11)
            return _fail("--backing cuda needs device identity: drop --no-device-identity (or use --backing cpu)")
        if args.transfer_to_npu:
            # on a GPU the emulated torch_npu.npu is made of torch.cuda's own functions, which the
            # migration would put in place of themselves (recursion, seen on an H200)
            return _fail("--transfer-to-npu runs on the CPU backing only: drop --backing cuda")
        import torch

        if not torch.cuda.is_available():
            return _fail("--backing cuda: this PyTorch sees no CUDA GPU")
    if args.module:
        problem = _find_module(args.module)
        if problem:
            return _fail(problem)
    print(
        f"transplant emulate: running {what} (your code, as you asked) with torch_npu emulated on "
        f"the {args.backing}{', strict' if args.strict else ''}",
        file=sys.stderr,
        flush=True,
    )

    from . import runtime

    checker = runtime.start(args.backing, args.strict)
    from . import summary

    summary.gather()  # the processes the program starts leave their summaries for this one's
    runtime.autoload()
    npu = sys.modules.get("torch_npu")  # (autoloaded; without autoload its own import reads the variable)
    if npu is not None and args.backing == "cpu" and os.environ.get("TORCH_TRANSFER_TO_NPU", "0") == "0":
        from . import transfer

        # the program may switch the migration on itself before it imports torch (runtime mode)
        transfer.watch(npu)
    if args.module:
        sys.argv = [args.module, *args.args]  # run_module puts the module's file first, as python -m does
        status = _run(lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True), checker)
    else:
        sys.argv = [str(args.script), *args.args]
        status = _run(lambda: runpy.run_path(str(args.script.resolve()), run_name="__main__"), checker)
    # after a run that went well: a failure's own message stays the last line
    summary.report(show=not args.quiet and status == 0 and not (checker is not None and checker.uses))
    if checker is not None and checker.uses:
        for use in dict.fromkeys(checker.uses):
            print(f"transplant emulate: error: {use}", file=sys.stderr)
        return 1
    return status


def _ours(filename: str) -> bool:
    """A frame of this module or of runpy, which the program's traceback leaves out."""
    return filename in (__file__, runpy.__file__) or filename.startswith("<frozen runpy")


def _run(program, checker) -> int:
    try:
        program()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except EmulationError as exc:
        if checker is None or str(exc) not in checker.uses:  # recorded uses are listed by main()
            print(f"transplant emulate: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("transplant emulate: interrupted", file=sys.stderr)
        return 130
    except BaseException as exc:  # the program's own failure: its traceback, as `python SCRIPT` shows it
        tb = exc.__traceback__
        while tb is not None and _ours(tb.tb_frame.f_code.co_filename) and tb.tb_next is not None:
            tb = tb.tb_next  # leave out this module's and runpy's frames
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    return 0
