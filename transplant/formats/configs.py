"""Configuration files: YAML, JSON, TOML and INI/cfg values that name CUDA.

A value ``cuda``, ``cuda:N`` (under a device key) or ``nccl`` (under a backend key) is converted to
``npu``/``npu:N``/``hccl``: only the value token's bytes change, quotes, spacing, comments and line
ends stay. Any other ``cuda``/``cuda:N``/``nccl`` value outside comments (a list of devices, a key
such as ``accelerator``) is reported (TP207); a key named ``cuda`` (``profiler: {cuda: true}``) is a
switch the program reads, not a value that reaches torch, and is not. Works on bytes with ASCII patterns, so any
ASCII-compatible encoding is kept as it is. Keys come from rules/project/configs.json. Environment
variables the rules name are renamed or reported as in shell scripts (shell.py).
"""

from __future__ import annotations

import re

from ..project.packages import requirement_records
from ..records import CODES, OPERATION, SKIP_LINE, Conversion, Record, skips_file
from ..resources import project_data
from ..rules import RuleSet
from ..session import Session
from . import compose, conda, framework_configs
from .shell import env_edits, env_pattern
from .requirements import pyproject_items, setup_cfg_items, toml_code

RULE = "configs.json"
_VALUE = rb"cuda(?::\d+)?|nccl"
# key, separator, optional quote, value, same quote; JSON pairs may share a line, the others end it
_JSON_PAIR = re.compile(rb'"([A-Za-z_][\w.-]*)"(\s*:\s*)"(' + _VALUE + rb')"')
_LINE_PAIR = re.compile(
    rb"^(\s*(?:-\s+)?)([\"']?)([A-Za-z_][\w.-]*)\2(\s*[:=]\s*)([\"']?)(" + _VALUE + rb")\5(?=\s*(?:[#;].*)?$)"
)
_TOKEN = re.compile(rb"(?<![\w./-])(" + _VALUE + rb")(?![\w-])")


DEPENDENCY_FILES = ("pyproject.toml", "setup.cfg")


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1].lower()


def _key_kind(key: str) -> str:
    facts = project_data("configs.json")
    key = key.lower().rsplit(".", 1)[-1]
    if key in facts["device_keys"] or key.endswith(tuple(facts["device_suffixes"])):
        return "device"
    if key in facts["backend_keys"] or key.endswith(tuple(facts["backend_suffixes"])):
        return "backend"
    return ""


def _new_value(kind: str, value: bytes) -> bytes | None:
    facts = project_data("configs.json")
    if kind == "device" and value.startswith(b"cuda"):
        return facts["device_new"].encode() + value[4:]
    if kind == "backend" and value == b"nccl":
        return facts["backend_new"].encode()
    return None


_KEY_BEFORE = re.compile(rb"(?:^[ \t]*(?:-[ \t]+)?|[{,][ \t]*)[\"']?$")
_KEY_AFTER = re.compile(rb"^[\"']?[ \t]*(?::(?=\s|$)|=)")


def _is_key(code: bytes, m: re.Match[bytes], is_json: bool) -> bool:
    """Is the token ``m`` the name of a key (``cuda: true`` under ``profiler:``, ``"cuda": false``)?
    A key named cuda is a switch that the program reads; the code that reads it is converted (or
    reported) where it is, and the key's name reaches no torch call: it is not reported."""
    before, after = code[: m.start()], code[m.end() :]
    if is_json:
        return before.endswith(b'"') and re.match(rb'^"\s*:', after) is not None
    return _KEY_AFTER.match(after) is not None and _KEY_BEFORE.search(before) is not None


_LINE_KEY = re.compile(rb"^\s*[\"']?([A-Za-z_][\w.-]*)[\"']?\s*[:=]")


def _descriptive(code: bytes) -> bool:
    """Is the line's key one that describes the project (``keywords = ["cuda", ...]``), not a setting?"""
    m = _LINE_KEY.match(code)
    return m is not None and m.group(1).decode("latin-1").lower() in project_data("configs.json")["descriptive_keys"]


def _code_part(line: bytes, is_json: bool) -> bytes:
    """The line without its comment (JSON has none)."""
    if is_json:
        return line
    text = line.decode("latin-1")
    code = toml_code(text)
    if not is_json and code.lstrip().startswith(";"):
        return b""
    return code.encode("latin-1")


# the APIs Nsight Systems traces besides CUDA (nsys profile --trace=cuda,nvtx,osrt,cublas,...)
_NSIGHT_APIS = frozenset(
    {
        "nvtx",
        "osrt",
        "cublas",
        "cublas-verbose",
        "cudnn",
        "cusparse",
        "cusparse-verbose",
        "ucx",
        "mpi",
        "oshmem",
        "opengl",
        "opengl-annotations",
        "openacc",
        "openmp",
        "nvvideo",
        "vulkan",
        "dx11",
        "dx12",
        "wddm",
        "nvtx-ext",
    }
)


def _nsight_trace(code: bytes, start: int, end: int) -> bool:
    """Is the value at ``code[start:end]`` an item of a comma-separated list that names another API
    Nsight Systems traces (``trace: "cuda,nvtx,cublas,ucx"``)?"""
    left = max(code.rfind(c, 0, start) for c in (b" ", b'"', b"'", b"=", b":", b"[")) + 1
    right = min(
        [i for i in (code.find(c, end) for c in (b" ", b'"', b"'", b"\n", b"]", b"#")) if i >= 0] or [len(code)]
    )
    items = code[left:right].split(b",")
    return len(items) > 1 and any(item.strip().decode("latin-1") in _NSIGHT_APIS for item in items)


def convert_config(path: str, data: bytes, rules: RuleSet | None = None) -> Conversion:
    """``rules``: their environment variables are renamed or reported where the file names them
    (``environment: {CUDA_VISIBLE_DEVICES: "0"}``, ``- NCCL_DEBUG=INFO``), as in shell scripts."""
    if skips_file(data):
        return Conversion(None, [])
    is_json = path.lower().endswith(".json")
    pairs = _JSON_PAIR if is_json else _LINE_PAIR
    env = env_pattern(rules) if rules is not None else None
    records: list[Record] = []
    out: list[bytes] = []
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        if SKIP_LINE.search(line) or not (b"cuda" in line or b"nccl" in line or (env is not None and env.search(line))):
            out.append(line)
            continue
        code = _code_part(line, is_json)
        edits = env_edits(rules, env, code, number, records) if env is not None and rules is not None else []
        changed: set[int] = set()
        for m in pairs.finditer(code):
            key, value_at = (m.group(1), m.start(3)) if is_json else (m.group(3), m.start(6))
            value = m.group(3) if is_json else m.group(6)
            kind = _key_kind(key.decode("latin-1"))
            new = _new_value(kind, value)
            if new is None:
                continue
            col = value_at + 1
            what = "device" if kind == "device" else "args"
            records.append(
                Record(
                    number,
                    col,
                    number,
                    col + len(value),
                    CODES[what],
                    "fix",
                    OPERATION[what],
                    f"{key.decode('latin-1')}: {value.decode()} -> {new.decode()}",
                    RULE,
                    api=key.decode("latin-1"),
                    old=value.decode(),
                    new=new.decode(),
                )
            )
            edits.append((value_at, value_at + len(value), new))
            changed.add(value_at)
        descriptive = _descriptive(code)
        for m in _TOKEN.finditer(code):
            if m.start() in changed or descriptive or _is_key(code, m, is_json):
                continue
            value = m.group(1).decode()
            if _nsight_trace(code, m.start(), m.end()):  # trace: "cuda,nvtx,cublas": Nsight Systems' APIs to trace
                level, suggestion = "note", ""
                message = (
                    f"'{value}' in a list of APIs for NVIDIA's Nsight Systems to trace: the profiler's own "
                    "setting, which nothing on an NPU reads (profile there with torch_npu.profiler or msprof)"
                )
            else:
                level = "warning"
                message = (
                    f"'{value}' in a configuration value that transplant does not "
                    "convert (the key does not plainly name a device or backend)"
                )
                suggestion = "use 'npu' for a device or 'hccl' for a collective backend if this value reaches torch"
            records.append(
                Record(
                    number,
                    m.start() + 1,
                    number,
                    m.end() + 1,
                    CODES["project_file"],
                    level,
                    "configuration",
                    message,
                    RULE,
                    api=value,
                    suggestion=suggestion,
                )
            )
        pieces: list[bytes] = []
        last = 0
        for start, end, new in sorted(edits):
            pieces += [line[last:start], new]
            last = end
        out.append(b"".join(pieces) + line[last:] if pieces else line)
    name = _name(path)
    if name in DEPENDENCY_FILES:
        text = data.decode("utf-8", "replace")
        records += requirement_records(pyproject_items(text) if name == "pyproject.toml" else setup_cfg_items(text))
    records.sort(key=lambda r: (r.line, r.col))
    new = b"".join(out)
    return Conversion(new if new != data else None, records)


def may_convert(path: str, data: bytes, session: Session) -> bool:
    """Can the conversion find anything in ``data``? (dependency lists are always read)"""
    pattern = env_pattern(session.rules)
    return (
        b"cuda" in data
        or b"nccl" in data
        or _name(path) in DEPENDENCY_FILES
        or (pattern is not None and pattern.search(data) is not None)
        or framework_configs.may_match(data)
        or conda.is_environment(path, data)
        or compose.may_match(path, data)
    )


def convert(path: str, data: bytes, session: Session) -> Conversion:
    """The configuration's values, then frameworks' settings (accelerate, transformers, Lightning),
    a conda environment's packages and a Compose file's NVIDIA devices (formats/framework_configs.py,
    formats/conda.py, formats/compose.py)."""
    conv = convert_config(path, data, session.rules)
    return compose.apply(path, data, conda.apply(path, data, framework_configs.apply(path, data, conv)))
