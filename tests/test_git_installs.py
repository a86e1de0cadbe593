"""Packages installed from their source (issue 36): a CUDA-only package installed from a git URL,
an archive or a wheel URL, or cloned to be built, gets the row its PyPI name gets, with its route
(rules/project/packages.json ``git``: the repositories of each package; transplant/project/packages.py
``url_package``). The fixture project ``git_installs`` (requirements, setup.py, pyproject.toml with
a Poetry git table, a shell script, a Dockerfile, a pip install run from Python) and its golden report
``tests/fixtures/reports/git_installs.tsv``; look-alikes (transformers, peft, accelerate, ... from git,
Liger-Kernel unpinned, a repository's page) stay silent.
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from goldens import check_text
from test_project import convert_project
from test_reports import as_tsv, sheet
from transplant.project.packages import requirement_records, url_package

GIT = FIXTURES / "projects" / "git_installs"


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[tuple]:
    return sheet(convert_project(GIT, tmp_path_factory.mktemp("git")), "Unsupported")


def test_report_matches_golden(rows: list[tuple]):
    check_text(FIXTURES / "reports" / "git_installs.tsv", as_tsv(rows))


def test_every_git_install_of_a_cuda_package_is_named_with_its_route(rows: list[tuple]):
    found = {(r[0], r[1]): (r[4], r[5], r[7]) for r in rows}
    expected = {
        ("requirements.txt", 3): "apex",  # git+https://...@master#egg=apex
        ("requirements.txt", 4): "causal_conv1d",  # -e git+...#egg=causal_conv1d
        ("requirements.txt", 5): "flash_attn",  # flash_attention @ git+... (a name no entry knows)
        ("requirements.txt", 6): "mamba_ssm",  # a wheel's URL
        ("setup.py", 8): "transformer_engine",
        ("setup.py", 11): "deepspeed-kernels",
        ("pyproject.toml", 5): "xformers",
        ("pyproject.toml", 6): "mamba_ssm",  # mamba @ git+https://github.com/state-spaces/mamba
        ("pyproject.toml", 11): "flash_attn",  # Poetry: flash-attention = { git = "..." }
        ("install.sh", 3): "apex",
        ("install.sh", 4): "flash_attn",
        ("install.sh", 5): "xformers",  # git clone, then pip install -e
        ("install.sh", 8): "bitsandbytes",  # git+ssh://git@github.com/...
        ("docker/Dockerfile", 2): "apex",  # git clone https://github.com/NVIDIA/apex && cd apex && pip install ./
        ("docker/Dockerfile", 4): "lightllm",
        ("setup_env.py", 4): "causal_conv1d",  # subprocess pip install git+...
    }
    for place, library in expected.items():
        assert place in found, place
        api, level, route = found[place]
        assert (api, level) == (library, "warning") and route, (place, found[place])
    assert len(rows) == len(expected)  # one row each: "flash-attn @ git+..." is not counted twice


def test_look_alikes_stay_silent(rows: list[tuple]):
    lines = {(r[0], r[1]) for r in rows}
    silent = [("requirements.txt", n) for n in (7, 8, 9)]  # transformers, Liger-Kernel unpinned, peft
    silent += [("setup.py", 9), ("pyproject.toml", 7), ("pyproject.toml", 12), ("install.sh", 7)]
    silent += [("docker/Dockerfile", 5), ("setup_env.py", 5)]
    silent += [("install.sh", 9)]  # vllm cloned beside vllm-ascend, its Ascend plugin
    assert not lines & set(silent)


@pytest.mark.parametrize(
    "url, library",
    [
        ("git+https://github.com/NVIDIA/apex", "apex"),
        ("git+https://github.com/nvidia/APEX.git@22.04-dev", "apex"),  # GitHub names are case-insensitive
        ("git+https://github.com/HazyResearch/flash-attention.git#subdirectory=csrc/rotary", "flash_attn"),
        ("git@github.com:NVIDIA/TransformerEngine.git@stable", "transformer_engine"),
        ("git+ssh://git@github.com/state-spaces/mamba.git", "mamba_ssm"),
        ("https://github.com/Dao-AILab/causal-conv1d/archive/refs/tags/v1.4.0.tar.gz", "causal_conv1d"),
        ("https://example.org/wheels/flash_attn-2.6.3-cp310-cp310-linux_x86_64.whl", "flash_attn"),
        ("git+https://gitlab.com/someone/xformers", "xformers"),  # another repository: by its name
        ("git+https://example.org/x/y.git#egg=bitsandbytes", "bitsandbytes"),
        ("git+https://github.com/mit-han-lab/llm-awq", "tinychat"),
        ("https://github.com/vllm-project/vllm.git", "vllm"),  # alone it is reported (install.sh:9 has vllm-ascend)
    ],
)
def test_url_spellings(url: str, library: str):
    entry = url_package(url)
    assert entry is not None and entry["library"] == library


@pytest.mark.parametrize(
    "url",
    [
        "git+https://github.com/huggingface/transformers",
        "https://github.com/NVIDIA/apex/blob/master/README.md",  # a page, not the repository
        "https://download.pytorch.org/whl/cpu",
        "https://example.org/apex",  # neither git nor a forge
    ],
)
def test_urls_of_other_things(url: str):
    assert url_package(url) is None


def test_options_that_take_a_url_are_not_packages():
    text = "--extra-index-url https://github.com/NVIDIA/apex"
    assert requirement_records([(1, 1, text)]) == []
