"""Issue 19: the package as a new user meets it: its name, its declared dependencies, the set-up
commands README gives, and the command line's help and argument errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from transplant.cli import main

from conftest import REPO

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli")

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
DIST = PYPROJECT["project"]["name"]


def _dependency(name: str) -> str:
    (spec,) = [d for d in PYPROJECT["project"]["dependencies"] if re.match(rf"{name}\b", d)]
    return spec


def test_the_distribution_has_its_own_name_and_installs_the_transplant_command():
    assert DIST == "transplant-npu"  # "transplant" on the package index is another project
    assert PYPROJECT["project"]["scripts"] == {"transplant": "transplant.cli:main"}
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["transplant"]


def test_every_install_hint_names_the_distribution():
    texts = {
        str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
        for p in [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    }
    texts.update({str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in (REPO / "transplant").rglob("*.py")})
    hints = {
        (name, hint)
        for name, text in texts.items()
        for hint in re.findall(r"""pip install \\?["']?([A-Za-z][\w.-]*)\[""", text)
    }
    assert hints and {hint for _, hint in hints} == {DIST}, hints


def test_dependencies_are_declared_and_bounded():
    # settings.py reads [tool.transplant] with tomllib, which Python has from 3.11 on
    assert _dependency("tomli") == 'tomli>=1.1; python_version < "3.11"'
    # engine/positions.py subclasses libcst's private CodegenState: a new major version may break it
    assert re.fullmatch(r"libcst>=1\.1,<2", _dependency("libcst"))
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    license_text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text


def test_readme_set_up_commands_install_into_a_virtual_environment():
    """The two commands near the top, which .ci/run runs as written: no global pip install (refused
    by Debian's and Ubuntu's own Python), the environment made in the same command line."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands on a fresh machine\n", 1)[1].split("\n## ", 1)[0]
    commands = [line[4:] for line in section.splitlines() if line.startswith("    ")]
    assert len(commands) == 2
    assert text.index("## Two commands on a fresh machine") < 1000
    for command in commands:
        steps = command.split(" && ")
        assert steps[0] == "python3 -m venv .venv"
        assert all(not s.startswith(("pip ", "python3 -m pip", "python -m pip")) for s in steps), command
        assert any(s.startswith(".venv/bin/python -m pip install ") for s in steps), command
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "## Two commands on a fresh machine" in ci  # where it takes them from


def test_help_names_every_mode_and_the_distributed_options(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for words in (
        "transplant lsp",
        "transplant emulate",
        "distributed -m MAIN.py",
        "-m/--main",
        "-t/--target-model",
        "--check|--diff|--in-place",
    ):
        assert words in out, words


def test_no_arguments_give_a_short_hint(capsys):
    assert main([]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.startswith("usage: transplant -i PROJECT -o OUT")
    assert cap.err.splitlines()[-1] == "try 'transplant --help' for every mode and option"
    assert len(cap.err.splitlines()) < 8  # a hint, not the help


def _emulate_and_compare_options() -> tuple[set[str], set[str]]:
    from transplant.accuracy.compare import build_parser as compare_parser
    from transplant.emulate.cli import build_parser as emulate_parser

    def flags(parser) -> set[str]:
        return {a.option_strings[0] for a in parser._actions if a.option_strings and a.dest != "help"}

    return flags(emulate_parser()), flags(compare_parser())


def test_help_lines_of_emulate_and_compare_name_their_options(capsys):
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    emulate_options, compare_options = _emulate_and_compare_options()
    at = next(i for i, l in enumerate(lines) if l.startswith("  transplant emulate"))
    emulate_line = lines[at] + lines[at + 1]
    at = next(i for i, l in enumerate(lines) if l.startswith("  transplant compare"))
    compare_line = lines[at] + lines[at + 1]
    for flag in emulate_options - {"-m"}:
        spelled = "--no-device-identity" if flag == "--device-identity" else flag
        assert spelled in emulate_line, flag
    for flag in compare_options:
        assert flag in compare_line, flag


def test_lsp_help_says_what_it_does_and_its_options(capsys):
    assert main(["lsp", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: transplant lsp [--stdio]\n")
    for words in ("language server", "--check", "code actions", "[tool.transplant]", "--stdio", "-h, --help"):
        assert words in out, words


def test_option_help_reads_as_the_docs_table():
    """The help of each repository-mode option says what docs/command-line.md's table says."""
    from transplant.cli import build_parser

    table = (REPO / "docs" / "command-line.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(-[\w-]+)`(?:, `[\w-]+`)? \| (.+?) \|$", table, re.M))
    helps = {a.option_strings[0]: a.help for a in build_parser()._actions if a.option_strings}
    assert rows["-q"] == helps["-q"] == "no progress bar, warnings or summary"


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["-i", "proj"], "-o/--output"),
        (["-o", "out"], "-i/--input"),
        (["-q"], "-i/--input, -o/--output"),
    ],
)
def test_a_missing_path_is_named_alone(capsys, argv, missing):
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"transplant: error: the following arguments are required: {missing}\n")


def test_bare_emulate_asks_for_the_script():
    proc = subprocess.run(
        [sys.executable, "-m", "transplant", "emulate"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "transplant emulate: error: no SCRIPT given: transplant emulate [options] SCRIPT "
        "[ARGS...] or transplant emulate [options] -m MODULE [ARGS...] "
        "(see 'transplant emulate --help')\n"
    )


def test_the_pre_commit_snippet_pins_a_revision_that_exists():
    """The rev of docs/editors.md's .pre-commit-config.yaml: a tag of this repository, or, while none
    is tagged, the placeholder that says to pin a commit (a made-up tag makes pre-commit fail)."""
    text = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    (rev,) = re.findall(r"^\s+rev: (\S+)", text, re.M)
    tags = subprocess.run(["git", "tag", "--list"], cwd=REPO, capture_output=True, text=True)
    if tags.returncode != 0:
        pytest.skip("not a git checkout")
    if rev != "FULL_COMMIT_SHA":
        assert rev in tags.stdout.split(), f"rev {rev} is not a tag of this repository"
    else:
        assert not tags.stdout.split(), "a release is tagged: name it in the snippet"
        assert "pin a commit (git rev-parse HEAD" in text


def test_emulate_without_pytorch_says_how_to_get_the_cpu_wheel(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    code = (
        "import sys; sys.modules['torch'] = None\n"  # a Python without PyTorch
        "import importlib.util; real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'torch' else real(name, *a)\n"
        f"from transplant.cli import main; raise SystemExit(main(['emulate', {str(script)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "PyTorch is not installed" in proc.stderr
    assert "-m pip install torch --index-url https://download.pytorch.org/whl/cpu" in proc.stderr


def test_readme_never_rewrites_the_shipped_example_in_place():
    """A reader who runs README's commands in the clone keeps examples/ as shipped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [l.split("#")[0] for l in text.splitlines() if "--in-place" in l.split("#")[0]]
    assert lines, "README shows --in-place somewhere"
    for line in lines:
        command = line.split("&&")[-1]
        paths = [w for w in command.split()[1:] if not w.startswith("-") and "`" not in w]
        assert paths and not any(p.startswith("examples/") for p in paths), line


def test_the_index_page_has_the_metadata_it_shows():
    project = PYPROJECT["project"]
    assert project["authors"] and project["keywords"] and "npu" in project["keywords"]
    classifiers = project["classifiers"]
    assert all(re.fullmatch(r"[A-Z][\w /.+-]*( :: [\w /.+()-]+)+", c) for c in classifiers), classifiers
    assert "License :: OSI Approved :: Apache Software License" in classifiers  # as LICENSE and license say
    assert project["license"] == {"text": "Apache-2.0"} and "Apache License" in (REPO / "LICENSE").read_text()
    # no invented addresses: an URL is named only when it is real
    assert not any("example" in url for url in project.get("urls", {}).values())


def test_readme_and_docs_links_resolve_in_the_source_distribution():
    """The index page cannot show README's relative links; the sdist holds every file they name."""
    include = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\((?!https?:|#)([^)#\s]+)", page.read_text(encoding="utf-8")):
            rel = (page.parent / target).resolve().relative_to(REPO).as_posix()
            assert any(rel == i or rel.startswith(i.rstrip("/") + "/") for i in include), (page.name, target)
