"""`transplant emulate [--backing cpu|cuda] [--strict] [--force-emulation] SCRIPT [ARGS...]`.

Checks the request (the script exists, torch is importable, no real torch_npu would be shadowed,
the CUDA backing has a GPU), says on stderr that it runs the user's code because asked, then runs
SCRIPT as ``__main__`` with ARGS, in this process, with the shim ``torch_npu`` importable. Bad
input is one line on stderr and exit status 2. The script's own exceptions show their traceback
as Python would show them (exit 1); a strict CUDA use is one line naming file and line (exit 1),
also when the script caught it. No torch import before the checks pass.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
from pathlib import Path

from . import BACKING_ENV, BACKINGS, STRICT_ENV, EmulationError

SHIM = Path(__file__).resolve().parent / "shim"
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        if message.startswith("the following arguments are required: script"):  # argparse counts ARGS too
            message = "no SCRIPT given: transplant emulate [options] SCRIPT [ARGS...]"
        raise SystemExit(_fail(f"{message} (see 'transplant emulate --help')"))


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"transplant emulate: error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="transplant emulate",
                description="Run a converted script with torch_npu emulated on the CPU (or a CUDA GPU).",
                epilog=f"Defaults come from {BACKING_ENV} and {STRICT_ENV}=1, so processes started by "
                       "run_distributed_npu.sh with TRANSPLANT_EMULATE=1 are emulated alike.")
    p.add_argument("--backing", choices=BACKINGS, default=os.environ.get(BACKING_ENV, "cpu"),
                   help="device that stands in for the NPUs (default: %(default)s)")
    p.add_argument("--strict", action="store_true", default=os.environ.get(STRICT_ENV) == "1",
                   help="every CUDA use left in the project's own files is an error naming file and line")
    p.add_argument("--force-emulation", action="store_true",
                   help="emulate even though a real torch_npu is installed (the emulation hides it)")
    p.add_argument("script", type=Path, help="the converted Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def _check(args) -> str | None:
    """Why the request cannot run, or None."""
    script = args.script
    if not script.exists():
        return f"{script}: no such file"
    if not script.is_file():
        return f"{script}: not a file"
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed in this Python (emulation runs the script on the real torch)"
    if importlib.util.find_spec("torch_npu") is not None and not args.force_emulation:
        return ("a real torch_npu is installed in this Python; run the script with it, or pass "
                "--force-emulation to hide it behind the emulation")
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    problem = _check(args)
    if problem:
        return _fail(problem)
    if args.backing == "cuda":
        import torch

        if not torch.cuda.is_available():
            return _fail("--backing cuda: this PyTorch sees no CUDA GPU")
    script = args.script.resolve()
    os.environ[BACKING_ENV] = args.backing
    os.environ[STRICT_ENV] = "1" if args.strict else "0"
    # the shim goes first on the path of this process and of the processes the script starts
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH")) if p)
    print(f"transplant emulate: running {args.script} (your code, as you asked) with torch_npu emulated on "
          f"the {args.backing}{', strict' if args.strict else ''}", file=sys.stderr, flush=True)

    from . import runtime

    checker = runtime.start(args.backing, args.strict)
    sys.argv = [str(args.script), *args.args]
    sys.path[0] = str(script.parent)  # as `python SCRIPT` has it (not this command's folder)
    sys.path.insert(0, str(SHIM))
    status = _run(script, checker)
    if checker is not None and checker.uses:
        for use in dict.fromkeys(checker.uses):
            print(f"transplant emulate: error: {use}", file=sys.stderr)
        return 1
    return status


def _run(script: Path, checker) -> int:
    try:
        runpy.run_path(str(script), run_name="__main__")
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
    except BaseException as exc:  # the script's own failure: its traceback, as `python SCRIPT` shows it
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != str(script) and tb.tb_next is not None:
            tb = tb.tb_next  # leave out this module's and runpy's frames
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    return 0
