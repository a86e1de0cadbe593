"""Project settings: the ``[tool.transplant]`` table of a ``pyproject.toml``.

Owns: finding the project's ``pyproject.toml``, reading and checking the table, and merging it
with command-line flags into :class:`~transplant.config.RuleOptions`. The command line, the
pre-commit hook and the language server all go through :func:`options_for`, so they agree.
It reads one file and never loads rules (a bad ``rules`` entry is reported when rules load).

    [tool.transplant]
    rules = ["migration/my_rules.json"]   # like -r; relative to the pyproject.toml's folder
    specify_device = true                 # like -s
    similar = false                       # like -sim
    pytorch_version = "2.9"               # like --pytorch-version
    torch_npu = "26.0"                    # like --torch-npu (default: the newest release with that PyTorch)
    mode = "runtime"                      # like --mode (default "full"; runtime_mode.py)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .config import RuleOptions
from .runtime_mode import MODES, ModeError, check
from .rule_versions import StackError, resolve_stack
from .rules import PYTORCH_VERSIONS, TORCH_NPU_RELEASES, RuleError

PYPROJECT = "pyproject.toml"
KEYS = ("rules", "specify_device", "similar", "pytorch_version", "torch_npu", "mode")
# [tool.transplant], [tool."transplant"], tool.transplant.x = ..., or a [tool] table that may hold it
_MENTIONS_TABLE = re.compile(r'tool\s*\.\s*["\']?transplant\b|^\s*\[\s*tool\s*\]', re.M)


def find_pyproject(start: str | os.PathLike) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` (a folder) or above it."""
    folder = Path(os.path.abspath(start))
    for candidate in (folder, *folder.parents):
        path = candidate / PYPROJECT
        if path.is_file():
            return path
    return None


def _toml_loads(text: str) -> dict:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            # (no-redef where the checker's environment has tomli, as on Python 3.10: unused elsewhere)
            import tomli as tomllib  # type: ignore[no-redef, unused-ignore]
        except ImportError:
            raise RuleError("reading [tool.transplant] needs Python 3.11 or the tomli package") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"not valid TOML: {exc}") from None


def read_table(path: Path) -> dict:
    """The checked ``[tool.transplant]`` table of ``path`` ({} when absent); RuleError names the
    file and the key when the file cannot be read or the table is wrong. ``rules`` entries come
    back as paths made absolute against the file's folder."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if not _MENTIONS_TABLE.search(text):
        return {}  # most projects: no need to parse the TOML at all
    try:
        table = _toml_loads(text).get("tool", {}).get("transplant", {})
    except RuleError as exc:
        raise RuleError(f"{path}: {exc}") from None
    if not isinstance(table, dict):
        raise RuleError(f"{path}: [tool.transplant] must be a table")
    for key, value in table.items():
        where = f"{path}: [tool.transplant] {key}"
        if key not in KEYS:
            raise RuleError(f"{path}: [tool.transplant] has unknown key {key!r} (known: {', '.join(KEYS)})")
        if key == "rules" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise RuleError(f"{where} must be a list of rule file paths")
        if key in ("specify_device", "similar") and not isinstance(value, bool):
            raise RuleError(f"{where} must be true or false")
        if key == "pytorch_version" and value not in PYTORCH_VERSIONS:
            raise RuleError(f"{where} must be one of {', '.join(PYTORCH_VERSIONS)}, not {value!r}")
        if key == "torch_npu" and value not in TORCH_NPU_RELEASES:
            raise RuleError(f"{where} must be one of {', '.join(TORCH_NPU_RELEASES)}, not {value!r}")
        if key == "mode" and value not in MODES:
            raise RuleError(f"{where} must be one of {', '.join(MODES)}, not {value!r}")
    checked = dict(table)
    if "rules" in checked:
        checked["rules"] = [path.parent / Path(r).expanduser() for r in checked["rules"]]
    return checked


def options_for(
    table: dict,
    *,
    rules: list[Path] | None = None,
    specify_device: bool | None = None,
    similar: bool | None = None,
    pytorch_version: str | None = None,
    torch_npu: str | None = None,
    mode: str | None = None,
) -> RuleOptions:
    """RuleOptions from the table, each overridden by its command-line flag when given
    (``-r`` replaces the table's ``rules``; ``-s``/``-sim`` turn an option on). The stack is taken
    as a pair: a ``--pytorch-version`` or ``--torch-npu`` flag replaces both of the table's, the
    other one derived from it (rule_versions.resolve_stack); a pair no release ships is a
    RuleError, and so is runtime mode for a release without the migration variable (``--mode``
    replaces the table's ``mode``)."""
    if pytorch_version is None and torch_npu is None:
        pytorch_version, torch_npu = table.get("pytorch_version"), table.get("torch_npu")
    try:
        version, release = resolve_stack(pytorch_version, torch_npu)
    except StackError as exc:
        raise RuleError(str(exc)) from None
    mode = mode or table.get("mode", "full")
    try:
        check(mode, release)
    except ModeError as exc:
        raise RuleError(str(exc)) from None
    return RuleOptions(
        tuple(rules) if rules else tuple(table.get("rules", ())),
        bool(specify_device) or table.get("specify_device", False),
        bool(similar) or table.get("similar", False),
        version,
        release,
        mode,
    )


def project_options(start: str | os.PathLike, **flags) -> tuple[RuleOptions, Path | None]:
    """The options for work started in folder ``start``: its project's table plus ``flags``."""
    path = find_pyproject(start)
    table = read_table(path) if path is not None else {}
    return options_for(table, **flags), path
