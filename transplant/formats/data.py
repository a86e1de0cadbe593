"""The data files of rules/project/, read once per process."""

from __future__ import annotations

import json
from functools import lru_cache

from ..resources import rules_dir


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads((rules_dir() / "project" / name).read_text(encoding="utf-8"))
