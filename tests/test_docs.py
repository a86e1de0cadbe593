"""README and docs/ hold the commands a user copies: every one is run or parsed here, so a renamed
option, a moved file or a changed message fails a test instead of a user.

* ``console`` blocks are sessions: their ``$ `` lines run in bash, in a temporary folder standing for
  /tmp/, from the repository's root at each block's start (the blocks of a page share the folder),
  with this checkout's ``transplant``; the lines after a command must appear in the output in order,
  each run of lines between ``...`` lines contiguously, and a line ending in ``...`` matches a line
  that starts with what comes before.
* every ``transplant`` command of ``console`` and ``sh`` blocks is parsed by the real parsers;
  ``bench/`` and ``tools/`` commands must name scripts that exist and options their ``--help`` lists.
* every block is fenced with a language; files named in commands and relative links exist; a
  link's ``#anchor`` is a heading of its page.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from transplant import cli
from transplant.accuracy import compare
from transplant.emulate import cli as emulate_cli

from conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = {"console", "sh", "text", "diff", "json", "toml", "yaml", "lua"}
TWO_COMMANDS = "## Two commands on a fresh machine"
# top-level folders of this repository a command may name
REPO_DIRS = ("examples/", "tests/", "bench/", "tools/", "rules/", "docs/", "transplant/", ".ci/")


def _rel(page: Path) -> str:
    return str(page.relative_to(REPO))


def blocks(page: Path) -> list[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of each fenced block; an indented code block outside
    README's two commands is an error (it says nothing of what it holds)."""
    found: list[tuple[str, int, list[str]]] = []
    lines = page.read_text(encoding="utf-8").split("\n")
    fence: tuple[str, int, list[str]] | None = None
    section = ""
    previous = ""
    for number, line in enumerate(lines, 1):
        if fence is not None:
            if line.startswith("```"):
                found.append(fence)
                fence = None
            else:
                fence[2].append(line)
            continue
        if line.startswith("```"):
            fence = (line[3:].strip(), number, [])
            continue
        if line.startswith("## "):
            section = line
        if line.startswith("    ") and not previous.strip() and section != TWO_COMMANDS:
            found.append(("indented", number, [line]))
        if not line.startswith("    ") or not line.strip():
            previous = line
    assert fence is None, f"{_rel(page)}: a fenced block is not closed"
    return found


def sessions(page: Path) -> list[tuple[int, list[tuple[str, list[str]]]]]:
    """The console blocks of a page: (line, [(command, expected output lines)])."""
    result = []
    for language, number, lines in blocks(page):
        if language != "console":
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"{_rel(page)}:{number}: a console block starts with a command ($ ...)"
                steps[-1][1].append(line)
        result.append((number, steps))
    return result


def commands(page: Path) -> list[tuple[int, str]]:
    """Every command line of the page's console and sh blocks, comments dropped."""
    found = []
    for language, number, lines in blocks(page):
        if language == "console":
            found += [(number, line[2:]) for line in lines if line.startswith("$ ")]
        elif language == "sh":
            found += [(number, line) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if page.name == "README.md":
        section = page.read_text(encoding="utf-8").split(TWO_COMMANDS + "\n", 1)[1].split("\n## ", 1)[0]
        found += [(0, line[4:]) for line in section.splitlines() if line.startswith("    ")]
    return found


def _words(command: str) -> list[list[str]]:
    """The simple commands of a command line (split at &&, ||, ;, |), each without its leading
    VAR=value assignments, and with redirections dropped."""
    tokens = shlex.split(command.split(" #", 1)[0], posix=True)
    simple: list[list[str]] = [[]]
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in ("&&", "||", ";", "|"):
            simple.append([])
        elif token in ("<", ">", "2>", ">>"):
            skip = True
        elif not simple[-1] and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", token):
            continue
        else:
            simple[-1].append(token)
    return [words for words in simple if words]


def _transplant_argv(words: list[str]) -> list[str] | None:
    for prefix in (
        ["transplant"],
        [".venv/bin/transplant"],
        ["python", "-m", "transplant"],
        ["python3", "-m", "transplant"],
    ):
        if words[: len(prefix)] == prefix:
            return words[len(prefix) :]
    if words[:3] in (["python", "-m", "transplant.emulate"], ["python3", "-m", "transplant.emulate"]):
        return ["emulate", *words[3:]]
    return None


def parse(argv: list[str]) -> None:
    """What transplant's own dispatch does with argv, up to the parsers and the checks made before
    any work (cli.main, emulate.cli.parse, compare.build_parser): SystemExit on a usage error."""
    if argv[:1] == ["emulate"]:
        emulate_cli.parse(argv[1:])
    elif argv[:1] == ["compare"]:
        compare.build_parser().parse_args(argv[1:])
    elif argv[:1] == ["lsp"]:
        assert argv == ["lsp"], argv
    else:
        head, tail, mode = cli.split_argv(argv)
        args = cli.build_parser().parse_args(head)
        if mode == "distributed":
            cli.build_distributed_parser().parse_args(tail)
        elif mode == "accuracy":
            cli.build_accuracy_parser().parse_args(tail)
        file_mode = args.check or args.diff or args.in_place or (args.paths and str(args.paths[0]) == "-")
        if file_mode:
            assert not (args.input or args.output or mode), argv
        else:
            assert args.input and args.output and not args.paths, argv


@functools.lru_cache(maxsize=None)
def script_help(script: str) -> str:
    # as after `pip install -e .` (docs/development.md): the checkout's transplant importable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, (script, proc.stderr)
    return proc.stdout


ALL_COMMANDS = [(page, number, command) for page in PAGES for number, command in commands(page)]


def test_the_pages_hold_commands():
    assert len(ALL_COMMANDS) >= 30
    assert sum(len(sessions(page)) for page in PAGES) >= 6


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_code_block_says_what_it_holds(page):
    for language, number, _ in blocks(page):
        assert language in LANGUAGES, f"{_rel(page)}:{number}: a code block must be fenced with one of {LANGUAGES}"


@pytest.mark.parametrize(
    ("page", "number", "command"), ALL_COMMANDS, ids=[f"{_rel(p)}:{n}:{c[:40]}" for p, n, c in ALL_COMMANDS]
)
def test_every_command_parses_and_names_what_exists(page, number, command, capsys):
    where = f"{_rel(page)}:{number}: {command}"
    for words in _words(command):
        argv = _transplant_argv(words)
        if argv is not None:
            try:
                parse(argv)
            except SystemExit:
                pytest.fail(f"{where}: {capsys.readouterr().err.strip()}")
        for word in words:
            for path in re.findall(r"(?:^|=)((?:%s)[\w./-]*)" % "|".join(map(re.escape, REPO_DIRS)), word):
                assert (REPO / path).exists(), f"{where}: {path} does not exist"
        program = [w for w in words[:2] if w.startswith(("bench/", "tools/"))]
        if program and words[0] in ("python", "python3"):
            text = script_help(program[0])
            for option in (w.split("=", 1)[0] for w in words[2:] if w.startswith("--")):
                assert option in text, f"{where}: {program[0]} has no option {option}"


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_link_and_anchor_exists(page):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{_rel(page)}: link to {target}: no such file"
        if anchor:
            assert anchor in _anchors(file), f"{_rel(page)}: link to {target}: no such heading"


def test_every_docs_page_is_linked_from_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name


# ------------------------------------------------------------------------------ running sessions


def _needs(steps: list[tuple[str, list[str]]]) -> list[str]:
    text = " ".join(command for command, _ in steps)
    needs = []
    if " emulate" in text or "python train.py" in text:
        needs.append("torch")
    if " accuracy " in text or " compare " in text:
        needs.append("msprobe")
    return [name for name in needs if importlib.util.find_spec(name) is None]


def expected_found(expected: list[str], output: list[str]) -> str | None:
    """None when the expected lines appear in the output as described above, else what is missing."""
    pieces: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == "...":
            pieces.append([])
        else:
            pieces[-1].append(line)
    start = 0

    def same(want: str, got: str) -> bool:
        return got.startswith(want[:-3]) if want.endswith("...") else got == want

    for piece in pieces:
        if not piece:
            continue
        for i in range(start, len(output) - len(piece) + 1):
            if all(same(want, got) for want, got in zip(piece, output[i : i + len(piece)])):
                start = i + len(piece)
                break
        else:
            return "\n".join(piece)
    return None


def _bin(tmp: Path) -> Path:
    """A folder for PATH with this checkout's transplant and this Python as python/python3."""
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    # scripts, not links: a link to a virtual environment's python outside it leaves the environment
    for name, run in (("transplant", "-m transplant "), ("python", ""), ("python3", "")):
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" {run}"$@"\n')
        (bin_dir / name).chmod(0o755)
    return bin_dir


SESSIONS = [(page, number, steps) for page in PAGES for number, steps in sessions(page)]


@pytest.mark.parametrize("page", sorted({page for page, _, _ in SESSIONS}), ids=_rel)
def test_console_sessions_run_as_written(page, tmp_path):
    bin_dir = _bin(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "PYTHONWARNINGS": "ignore",
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "200",
    }
    ran = 0
    for number, steps in [(n, s) for p, n, s in SESSIONS if p == page]:
        missing = _needs(steps)
        if missing:
            continue
        cwd = REPO
        for command, expected in steps:
            local = command.replace("/tmp/", f"{tmp_path}/")
            # cd in a command moves the session, as in a terminal
            script = f"cd {shlex.quote(str(cwd))} && {{ {local}\n}} ; status=$?; pwd > {tmp_path}/.cwd; exit $status"
            # stdout and stderr in one pipe, unbuffered: in the order a terminal shows them
            proc = subprocess.run(
                ["bash", "-c", script],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=600,
                stdin=subprocess.DEVNULL,
            )
            cwd = Path((tmp_path / ".cwd").read_text().strip())
            output = proc.stdout.replace(f"{tmp_path}/", "/tmp/").replace(str(tmp_path), "/tmp").splitlines()
            problem = expected_found(expected, output)
            assert problem is None, (
                f"{_rel(page)}:{number}: $ {command}\nnot in the output:\n{problem}\n--- output ---\n{proc.stdout}"
            )
            ran += 1
    if not ran:
        pytest.skip("every session of this page needs what is not installed here")
