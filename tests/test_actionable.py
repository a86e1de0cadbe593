"""Reports a person acts on (issue 36): no row without something to do, at the level the written
policy gives it (docs/reports.md, "Levels").

* ``torch`` without ``torch_npu``: once per project (the file nearest the root), a note, and only
  where the converted code imports torch_npu.
* Exception classes every torch build defines (``except torch.cuda.CudaError``): a note.
* Every warning of the per-version support lists has a suggestion.
* CUDA ties that no row named: the fixture project ``silent_kinds`` (bitsandbytes loading, the kernel
  hub, Ray's GPU resources, Lightning 1.x flags, pip installs and ``vllm serve`` run from Python,
  ``functools.partial`` of autocast, CUDA packages, channels, indexes, Compose devices, GPU Dockerfiles)
  and its golden report ``tests/fixtures/reports/silent_kinds.tsv``, with look-alikes that stay silent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from goldens import check_text
from test_project import convert_project, read_change_list
from test_reports import as_tsv, sheet
from transplant.resources import rules_dir

REQUIREMENTS = "torch==2.1.0\nnumpy\n"


def _project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _rows(tmp_path: Path, files: dict[str, str]) -> list[tuple]:
    src = _project(tmp_path / "proj", files)
    return sheet(convert_project(src, tmp_path / "out"), "Unsupported")


def test_torch_npu_reminder_once_per_project_as_a_note(tmp_path: Path):
    rows = _rows(
        tmp_path,
        {
            "requirements.txt": REQUIREMENTS,
            "examples/a/requirements.txt": REQUIREMENTS,
            "examples/b/requirements-dev.txt": "torch>=2.0\n",
            "train.py": "import torch\nx = torch.ones(2).cuda()\n",
        },
    )
    reminders = [r for r in rows if r[4] == "torch_npu"]
    assert [(r[0], r[5]) for r in reminders] == [("requirements.txt", "note")]
    assert "examples/a/requirements.txt" in reminders[0][6] and "examples/b/requirements-dev.txt" in reminders[0][6]


def test_no_torch_npu_reminder_where_nothing_imports_it(tmp_path: Path):
    rows = _rows(
        tmp_path,
        {
            "requirements.txt": REQUIREMENTS,
            "examples/a/requirements.txt": REQUIREMENTS,
            "cpu_only.py": "import torch\nx = torch.ones(2)\n",
            "run.sh": "nvidia-smi\n",  # converted, but no Python file imports torch_npu
        },
    )
    assert [r for r in rows if r[4] == "torch_npu"] == []


def test_torch_npu_reminder_is_not_counted_against_the_conversion_rate(tmp_path: Path):
    src = _project(
        tmp_path / "proj", {"requirements.txt": REQUIREMENTS, "train.py": "import torch\ntorch.cuda.synchronize()\n"}
    )
    summary = {r[0]: r[1:] for r in sheet(convert_project(src, tmp_path / "out"), "Summary")}
    assert summary["requirements.txt"] == (0, 0, None, 0, 0, 1, None)  # a note: no rate
    assert summary["TOTAL"][2] == 1.0


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    x = torch.ones(2).cuda()\nexcept torch.cuda.CudaError:\n    x = None\n",
        "try:\n    x = torch.ones(2).cuda()\nexcept (torch.cuda.CudaError, ValueError) as e:\n    x = None\n",
        "from torch.cuda import CudaError\ntry:\n    x = torch.ones(2).cuda()\nexcept CudaError:\n    x = None\n",
        "try:\n    x = torch.ones(2).cuda()\nexcept torch.cuda.DeferredCudaCallError:\n    x = None\n",
    ],
)
def test_cuda_exception_classes_are_notes(tmp_path: Path, code: str):
    rows = _rows(tmp_path, {"train.py": "import torch\n" + code})
    found = [r for r in rows if "Error" in (r[4] or "")]
    assert found and all(r[5] == "note" for r in found), found
    assert all("never catches on an NPU" in r[6] and r[7] for r in found)


def test_every_support_list_warning_says_what_to_do():
    for path in sorted((rules_dir() / "npu_support").glob("unsupported_*.json")):
        rules = json.loads(path.read_text(encoding="utf-8"))["rules"]["UnsupportedRule"]
        empty = [r["name"] for r in rules if r["level"] in ("error", "warning") and not r.get("suggestion")]
        assert empty == [], path.name
    rules = json.loads((rules_dir() / "npu_support" / "unsupported_2.8.json").read_text(encoding="utf-8"))
    by_name = {r["name"]: r for r in rules["rules"]["UnsupportedRule"]}
    assert "DistributedDataParallel" in by_name["torch.nn.DataParallel"]["suggestion"]
    assert "-m distributed" in by_name["torch.nn.DataParallel"]["suggestion"]


def test_change_list_names_the_rule_not_its_index(tmp_path: Path):
    src = _project(
        tmp_path / "proj",
        {
            "train.py": "import os\nimport torch\nx = torch.ones(2).to('cuda')\ntorch.cuda.synchronize()\n"
            "y = torch.load('m.pt', map_location='cuda')\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n"
        },
    )
    _, rows = read_change_list(convert_project(src, tmp_path / "out"))
    rules = [r["Rule"] for r in rows]
    assert rules == [
        "builtin",
        "device_args.json: .to()",
        "device_api.json: torch.cuda.synchronize",
        "device_args.json: torch.load",
        "env_vars.json: CUDA_VISIBLE_DEVICES",
    ]


def test_rule_label_keeps_ids_it_cannot_name():
    from transplant.reports.rulenames import rule_label

    assert rule_label("builtin") == "builtin"
    assert rule_label("my_rules.json:FuncNameModifyRule[0]", "mylib.f") == "my_rules.json:FuncNameModifyRule[0]"
    assert rule_label("device_api.json:FuncNameModifyRule[99999]") == "device_api.json:FuncNameModifyRule[99999]"
    # a user's file named like a built-in one: the built-in rule at that index is about something else
    assert rule_label("env_vars.json:EnvVarModifyRule[0]", "MY_VAR") == "env_vars.json:EnvVarModifyRule[0]"


SILENT = FIXTURES / "projects" / "silent_kinds"


@pytest.fixture(scope="module")
def silent_result(tmp_path_factory) -> Path:
    return convert_project(SILENT, tmp_path_factory.mktemp("silent"))


def test_silent_kinds_report_matches_golden(silent_result: Path):
    check_text(FIXTURES / "reports" / "silent_kinds.tsv", as_tsv(sheet(silent_result, "Unsupported")))


def test_every_silent_kind_is_named_with_a_route(silent_result: Path):
    rows = sheet(silent_result, "Unsupported")
    named: dict[tuple, list[tuple]] = {}
    for r in rows:
        named.setdefault((r[0], r[1]), []).append(r)
    expected = {
        ("train.py", 19): ("bitsandbytes", "error"),  # from_pretrained(load_in_8bit=True)
        ("train.py", 20): ("bitsandbytes", "error"),  # load_in_4bit=True
        ("train.py", 11): ("transformers.BitsAndBytesConfig", "error"),  # imported, and built at line 22
        ("train.py", 9): ("kernels.get_kernel", "warning"),  # the kernel hub (FlashAttention-3)
        ("train.py", 28): ("flash_attn", "warning"),  # [sys.executable, "-m", "pip", "install", "flash-attn"]
        ("train.py", 29): ("apex", "warning"),  # os.system("pip install ... --cuda_ext ./apex")
        ("train.py", 30): ("xformers", "warning"),  # check_call("pip install xformers==...", shell=True)
        ("serve/launch.py", 3): ("vllm", "warning"),
        ("lightning_v1/train_pl.py", 3): ("lightning gpus", "error"),
        ("ray_jobs/tasks.py", 5): ("ray GPU resources", "error"),
        ("ray_jobs/tasks.py", 7): ("ray.get_gpu_ids", "warning"),
        ("ray_jobs/tasks.py", 16): ("ray GPU resources", "error"),
        ("requirements.txt", 2): ("tensorflow-gpu", "warning"),
        ("requirements.txt", 3): ("liger_kernel", "warning"),
        ("requirements.txt", 4): ("cuml", "warning"),
        ("requirements.txt", 5): ("pypi.nvidia.com", "warning"),
        ("environment.yml", 3): ("rapidsai", "warning"),
        ("environment.yml", 7): ("cudf", "warning"),
        ("pyproject.toml", 8): ("download.pytorch.org/whl/cu121", "warning"),
        ("deploy/docker-compose.yaml", 8): ("driver: nvidia", "error"),
        ("deploy/docker-compose.yaml", 13): ("runtime: nvidia", "error"),
        ("deploy/Dockerfile.gpu", 1): ("nvidia/cuda:12.1.0-devel-ubuntu22.04", "warning"),
        ("deploy/Dockerfile.gpu", 3): ("nvcc", "warning"),
        ("deploy/backend.Dockerfile", 1): ("nvcr.io/nvidia/pytorch:23.10-py3", "warning"),
    }
    for place, (api, level) in expected.items():
        assert place in named, place
        row = next((r for r in named[place] if r[4] == api), None)
        assert row is not None and row[5] == level, (place, named[place])
        assert row[7], place  # a route
    accelerator = [r for r in rows if r[0] == "lightning_v1/train_pl.py" and r[4] == "lightning accelerator"]
    assert [(r[1], r[5]) for r in accelerator] == [(3, "error")] and 'strategy="ddp"' in accelerator[0][7]


def test_look_alikes_stay_silent(silent_result: Path):
    rows = sheet(silent_result, "Unsupported")
    files = {r[0] for r in rows}
    # gpus / accelerator / num_gpus / "GPU" outside Lightning and Ray; requirements that support NPUs
    assert not files & {"lightning_v1/not_lightning.py", "ray_jobs/not_ray.py", "requirements-ok.txt"}
    lines = {(r[0], r[1]) for r in rows}
    assert ("train.py", 21) not in lines  # load_in_8bit=False
    assert ("lightning_v1/train_pl.py", 4) not in lines and ("lightning_v1/train_pl.py", 5) not in lines  # gpus=0/None
    assert ("ray_jobs/tasks.py", 11) not in lines and ("ray_jobs/tasks.py", 17) not in lines  # num_gpus=0, "CPU"
    assert ("train.py", 31) not in lines  # pip install numpy
    assert ("serve/launch.py", 4) not in lines  # curl
    assert not any(r[0] == "deploy/docker-compose.yaml" and r[1] == 16 for r in rows)  # runtime: runc
    assert not any(r[0] == "pyproject.toml" and r[1] == 13 for r in rows)  # the CPU index


def test_partial_of_a_device_api_is_converted_like_the_direct_call(silent_result: Path):
    """``partial(autocast, "cuda", enabled=False)`` gets "npu" as ``autocast("cuda", ...)`` does in the
    same file (else an NPU run would put the author's float32 region under the NPU's autocast)."""
    text = (silent_result / "train.py").read_text(encoding="utf-8")
    assert 'fp32_region = partial(autocast, "npu", enabled=False)' in text
    assert 'with autocast("npu", enabled=False):' in text
    assert 'say = partial(print, "cuda")' in text  # not a device argument
    _, changes = read_change_list(silent_result)
    lines = {int(r["Start Line"]) for r in changes if r["File"] == "train.py" and r["Code"] == "TP104"}
    assert {23, 43} <= lines


@pytest.mark.parametrize(
    ("code", "converted"),
    [
        ('f = functools.partial(torch.autocast, "cuda", dtype=torch.bfloat16)\n', '"npu"'),
        ('f = functools.partial(torch.autocast, device_type="cuda")\n', 'device_type="npu"'),
        ('f = functools.partial(torch.ones, 3, device="cuda")\n', 'device="npu"'),
        ('f = functools.partial(torch.ones, "cuda")\n', '"cuda"'),  # a size, not the device
    ],
)
def test_partial_spellings(code: str, converted: str):
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("t.py", f"import functools\nimport torch\n{code}".encode(), load_ruleset())
    out = (res.new or b"").decode() or code
    assert converted in out.splitlines()[-1]


def test_cuda_backend_switches_of_the_support_lists_are_notes():
    rules = json.loads((rules_dir() / "npu_support" / "unsupported_2.8.json").read_text(encoding="utf-8"))
    switches = [r for r in rules["rules"]["UnsupportedRule"] if r["name"].startswith("torch.backends.cud")]
    assert switches and all(r["level"] == "note" and "no effect on NPU" in r["message"] for r in switches)


@pytest.mark.parametrize("version", ["2.9", "2.12", "2.13"])
def test_support_list_entries_that_ask_nothing_are_notes(version: str):
    """tools/gen_support.py: CUDA's kernel switches, torch.compile's helpers and the settings torch
    keeps on the host are notes with a suggestion; the subsystems stay warnings with their route."""
    path = rules_dir() / "npu_support" / f"unsupported_{version}.json"
    rules = {r["name"]: r for r in json.loads(path.read_text(encoding="utf-8"))["rules"]["UnsupportedRule"]}
    quiet = [
        n for n in rules if n.startswith(("torch.backends.cuda.", "torch.compiler.", "torch.backends.opt_einsum."))
    ]
    quiet += [n for n in ("torch.is_deterministic_algorithms_warn_only_enabled",) if n in rules]
    assert quiet
    for name in quiet:
        assert rules[name]["level"] == "note" and rules[name]["suggestion"].startswith("nothing to rewrite"), name
    assert rules["torch.export.export"]["level"] == "warning" and "CPU" in rules["torch.export.export"]["suggestion"]
    # an API with its own route in gen_rules.VERSION_SUGGESTIONS gets it here too, as the older lists do
    load = rules["torch.utils.cpp_extension.load"]
    assert load["level"] == "warning" and "NpuExtension" in load["suggestion"]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from gen_support import rule_for

    products = {"Atlas A2": False, "Atlas A3": False, "Ascend 950": False}
    made = rule_for({"name": "torch.utils.cpp_extension.load", "products": products}, version, "0" * 40, "p.md")
    assert made is not None and made["suggestion"] == load["suggestion"]


CUDA_ONLY_TEST = """import pytest
import torch
import bitsandbytes as bnb
from tests.conftest import RunIf


@RunIf(min_cuda_gpus=1)
def test_quantized():
    return bnb.optim.PagedAdamW


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_skip():
    return bnb.optim.PagedAdamW


@RunIf(min_cuda_gpus=0)
def test_any_device():
    return bnb.optim.PagedAdamW


@RunIf(standalone=True)
def test_standalone():
    return bnb.optim.PagedAdamW


@pytest.mark.skipif(sys.platform == "win32", reason="posix")
def test_posix():
    return bnb.optim.PagedAdamW
"""


def test_findings_in_cuda_only_tests_are_notes():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("tests/test_q.py", CUDA_ONLY_TEST.encode(), load_ruleset())
    levels = {r.line: (r.level, r.message) for r in res.findings if r.api.startswith("bitsandbytes.optim")}
    assert levels[9][0] == "note" and "min_cuda_gpus=1" in levels[9][1] and "skipped on an NPU" in levels[9][1]
    assert levels[14][0] == "note" and "skipif without CUDA" in levels[14][1]
    # min_cuda_gpus=0, a decorator that asks for no GPU, a skipif on something else: the test runs on an NPU
    assert [levels[n][0] for n in (19, 24, 29)] == ["error", "error", "error"]


LIGHTNING_YAML = "trainer:\n  accelerator: gpu\n  devices: 2\n"


def test_lightning_config_where_no_file_imports_lightning_is_a_note(tmp_path: Path):
    rows = _rows(tmp_path, {"configs/run.yaml": LIGHTNING_YAML, "train.py": "import torch\nx = torch.ones(2).cuda()\n"})
    found = [r for r in rows if r[4] == "lightning accelerator"]
    assert [(r[0], r[5]) for r in found] == [("configs/run.yaml", "note")]
    assert "no Python file of the project imports Lightning" in found[0][6]


@pytest.mark.parametrize("importer", ["import lightning as L\n", "from pytorch_lightning import Trainer\n"])
def test_lightning_config_where_the_project_uses_lightning_stays_a_warning(tmp_path: Path, importer: str):
    rows = _rows(tmp_path, {"configs/run.yaml": LIGHTNING_YAML, "train.py": importer})
    assert [(r[0], r[5]) for r in rows if r[4] == "lightning accelerator"] == [("configs/run.yaml", "warning")]


NPU_PATH = """import torch
from transformers.utils import is_torch_npu_available

if is_torch_npu_available():
    from torch_npu import npu_fusion_attention
else:
    from flash_attn import flash_attn_func


def attn(q, k, v):
    if is_torch_npu_available():
        return npu_fusion_attention(q, k, v, 8, "BSND")[0]
    return flash_attn_func(q, k, v)


def attn2(q, k, v):
    if not torch.npu.is_available():
        import xformers.ops as xops
        return xops.memory_efficient_attention(q, k, v)
    return q


def attn3(q, k, v):
    if torch.cuda.is_available():
        return q
    import xformers.ops as xops
    return xops.memory_efficient_attention(q, k, v)
"""


def test_cuda_branch_of_code_that_gives_npu_its_own_path_is_a_note():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("attn.py", NPU_PATH.encode(), load_ruleset())
    levels = {r.line: (r.level, r.message) for r in res.findings if r.code == "TP206"}
    for line, at in ((7, 4), (13, 11), (18, 17), (19, 17)):
        assert levels[line][0] == "note", line
        assert f"the if at line {at} gives NPU its own path" in levels[line][1]
    # a CUDA test is no NPU path: the library is what an NPU runs there
    assert levels[26][0] == "error" and levels[27][0] == "error"


def test_the_project_scan_reads_every_file_the_new_scans_need():
    """project.STATIC_WORDS decides which files the project scan reads at all: the words of the
    scans kept in their own modules (which that package cannot import) must be among them."""
    from transplant.project import PAIRED_WORDS, STATIC_WORDS, frameworks, installs

    words = set(STATIC_WORDS) | {word for word, _also in PAIRED_WORDS}
    assert set(frameworks.WORDS) <= words
    assert set(installs.WORDS) <= words


@pytest.mark.parametrize(
    "source, scanned",
    [
        ("import ray\n\n\n@ray.remote(num_gpus=1)\ndef f():\n    pass\n", True),
        ("from ray import remote\nopts = {'GPU': 1}\n", True),
        ("x = {'GPU': 1}\nnum_gpus = 2\n", False),  # no Ray: no setting of it
        ("import pytorch_lightning as pl\ntrainer = pl.Trainer(gpus=1)\n", True),
        ("accelerator = 'gpu'\n", False),  # no Lightning
        ("import subprocess\nsubprocess.run(['pip', 'install', 'flash-attn'])\n", True),
        ("pipeline = make_pipeline()\n", False),  # "pip" in a word, no install
    ],
)
def test_the_project_scan_reads_a_file_for_a_common_word_only_beside_its_pair(source: str, scanned: bool):
    """Words that are common alone (GPU, gpus, accelerator, pip) count only with the word every finding
    they lead to needs too (the framework's import, "install")."""
    from transplant.project import NO_FACTS

    assert NO_FACTS.may_match(source.encode()) is scanned


def test_a_projects_kernel_names_count_as_words():
    import dataclasses

    from transplant.project import NO_FACTS

    facts = dataclasses.replace(NO_FACTS, kernel_words=frozenset({b"_fwd_kernel"}))
    assert facts.may_match(b"from .ops import _fwd_kernel\n_fwd_kernel[grid](x)\n")
    assert not facts.may_match(b"size = cfg._fwd_kernel_size\n")
    assert not NO_FACTS.may_match(b"from .ops import _fwd_kernel\n")


NO_ROUTE = """import torch
import torch.distributed as dist
from torch.cuda._graph_annotations import mark_kernels


def setup(get_backend):
    dist.init_process_group(backend=get_backend())
    mark_kernels()
    return torch.cuda
"""


def test_errors_and_warnings_without_a_rule_suggestion_still_say_what_to_do():
    """Unknown torch.cuda names, torch.cuda passed around whole, a backend given as an expression."""
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("setup.py", NO_ROUTE.encode(), load_ruleset())
    found = [r for r in res.findings if r.level in ("error", "warning")]
    apis = {r.api for r in found}
    assert {"torch.distributed.init_process_group", "torch.cuda._graph_annotations.mark_kernels", "torch.cuda"} <= apis
    assert all(r.suggestion for r in found), [(r.api, r.message) for r in found if not r.suggestion]


NPU_FLAG = """from verl_like.device import is_npu_available

if is_npu_available:
    from vllm_ascend.distributed.device_communicators.pyhccl import PyHcclCommunicator as Comm
else:
    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator as Comm

if is_gpu_ready:
    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
"""


def test_cuda_branch_of_an_npu_flag_is_a_note():
    """``if is_npu_available:`` as a flag (verl) gives NPU its own path as the call does."""
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("comm.py", NPU_FLAG.encode(), load_ruleset())
    levels = {r.line: (r.level, r.message) for r in res.findings if r.api.startswith("vllm.distributed")}
    assert levels[6][0] == "note" and "the if at line 3 gives NPU its own path" in levels[6][1]
    assert levels[9][0] == "error"  # a flag that says nothing of NPU


SHARED = """from verl_like.device import is_npu_available

if is_npu_available:
    from vllm_ascend.distributed.device_communicators.pyhccl import PyHcclCommunicator as PyNcclCommunicator
else:
    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
    from vllm.distributed.device_communicators.pynccl import ncclGetUniqueId


def make(pg, device):
    comm = PyNcclCommunicator(pg, device=device)
    return comm, ncclGetUniqueId()
"""


def test_a_use_of_a_name_both_sides_of_an_npu_path_import_is_a_note():
    from transplant.filetypes import convert_file
    from transplant.rules import load_ruleset

    res = convert_file("comm.py", SHARED.encode(), load_ruleset())
    uses = {r.message.split(" (from ", 1)[0]: r for r in res.findings if r.line in (11, 12)}
    comm = uses["vllm.distributed.device_communicators.pynccl.PyNcclCommunicator"]
    assert comm.level == "note" and "binds this name to its NPU version" in comm.message
    assert uses["vllm.distributed.device_communicators.pynccl.ncclGetUniqueId"].level != "note"  # CUDA side only
