"""Shared test helpers: rule sets are loaded once per option combination."""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (a seed from each test's own code), so CI can
# never fail on an example no earlier run drew; HYPOTHESIS_PROFILE=explore draws new ones locally.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

# transplant keeps a compiled-code cache between runs (transplant/codecache.py); the runs of the
# tests, in this process and in the subprocesses they start, keep theirs in a folder of the
# session's, not in the home folder of whoever runs the tests. Set before transplant is imported.
_CODE_CACHE = tempfile.mkdtemp(prefix="transplant-test-cache-")
os.environ["TRANSPLANT_CACHE_DIR"] = _CODE_CACHE

from transplant.rules import RuleSet, load_ruleset  # noqa: E402  (after the cache folder is set)

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
# the fixtures are projects to convert, their own test files too (cuda_guarded/test_kernel.py): never collected
collect_ignore_glob = ["fixtures/*"]
REPO = TESTS.parent


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="write the golden files under tests/fixtures from what the tests produce (tests/goldens.py); "
        "also TRANSPLANT_UPDATE_GOLDENS=1",
    )


def pytest_configure(config):
    from goldens import set_updating

    set_updating(config.getoption("--update-goldens"))


@lru_cache(maxsize=None)
def cached_ruleset(
    user_rules: tuple[str, ...] = (),
    specify_device: bool = False,
    similar: bool = False,
    pytorch_version: str = "2.8",
    torch_npu: str | None = None,
) -> RuleSet:
    return load_ruleset(
        [Path(p) for p in user_rules],
        specify_device=specify_device,
        similar=similar,
        pytorch_version=pytorch_version,
        torch_npu=torch_npu,
    )


@pytest.fixture
def rules() -> RuleSet:
    """The built-in rules with default options."""
    return cached_ruleset()


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CODE_CACHE, ignore_errors=True)
