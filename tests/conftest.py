"""Shared test helpers: rule sets are loaded once per option combination."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from transplant.rules import RuleSet, load_ruleset

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
REPO = TESTS.parent


@lru_cache(maxsize=None)
def cached_ruleset(user_rules: tuple[str, ...] = (), specify_device: bool = False, similar: bool = False,
                   pytorch_version: str = "2.8") -> RuleSet:
    return load_ruleset([Path(p) for p in user_rules], specify_device=specify_device, similar=similar,
                        pytorch_version=pytorch_version)


@pytest.fixture
def rules() -> RuleSet:
    """The built-in rules with default options."""
    return cached_ruleset()
