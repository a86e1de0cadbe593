"""Where the built-in rule data lives, in a checkout and in an installed wheel."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    """The built-in ``rules/`` folder.

    In a checkout it is the repository's top-level ``rules/``; a wheel ships the same files as
    ``transplant/_rules`` (see pyproject.toml).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if (candidate / "schema.json").is_file():
            return candidate
    raise FileNotFoundError("transplant's built-in rules/ folder is missing from this installation")


@lru_cache(maxsize=None)
def project_data(name: str) -> dict:
    """A data file of rules/project/ (packages.json, configs.json, ...), read once per process."""
    return json.loads((rules_dir() / "project" / name).read_text(encoding="utf-8"))
