"""Dockerfiles (``Dockerfile``, ``Dockerfile.*``, ``*.dockerfile``, ``Containerfile``).

Converted like a shell script (environment variables such as ``ENV CUDA_VISIBLE_DEVICES``,
``RUN nvidia-smi``); reported (TP207): CUDA base images (``FROM nvidia/cuda...``), settings of the
NVIDIA container runtime, and (TP206/TP207) CUDA-only packages and CUDA indexes in ``pip install``.
Facts: rules/project/docker.json. Byte-faithful: only renamed tokens change.
"""

from __future__ import annotations

import fnmatch
import re

from ..records import CODES, SKIP_LINE, Conversion, Record, skips_file
from ..rules import RuleSet
from ..session import Session
from .shell import convert_shell_script
from ..resources import project_data
from .requirements import pip_records

RULE = "docker.json"
_FROM = re.compile(rb"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE)


def may_convert(path: str, data: bytes, session: Session) -> bool:
    return session.rules.may_match(data) or b"nvidia" in data or b"pip" in data


def convert(path: str, data: bytes, session: Session) -> Conversion:
    return convert_dockerfile(data, session.rules)


def convert_dockerfile(data: bytes, rules: RuleSet) -> Conversion:
    if skips_file(data):
        return Conversion(None, [])
    shell = convert_shell_script(data, rules)
    facts = project_data("docker.json")
    records = list(shell.records)
    runtime = re.compile(rb"\b(" + b"|".join(v.encode() for v in facts["runtime_variables"]) + rb")\b")
    for number, line in enumerate(data.splitlines(), start=1):
        if SKIP_LINE.search(line) or line.lstrip().startswith(b"#"):
            continue
        m = _FROM.match(line)
        if m:
            image = m.group(1).decode("utf-8", "replace")
            for entry in facts["images"]:
                if fnmatch.fnmatchcase(image.lower(), entry["match"]):
                    col = m.start(1) + 1
                    records.append(
                        Record(
                            number,
                            col,
                            number,
                            col + len(image),
                            CODES["project_file"],
                            "warning",
                            "base image",
                            f"{image}: {entry['message']}",
                            RULE,
                            api=image,
                            suggestion=facts["image_suggestion"],
                        )
                    )
                    break
        for v in runtime.finditer(line):
            name = v.group(1).decode()
            records.append(
                Record(
                    number,
                    v.start() + 1,
                    number,
                    v.end() + 1,
                    CODES["project_file"],
                    "warning",
                    "container runtime",
                    f"{name}: {facts['runtime_message']}",
                    RULE,
                    api=name,
                    suggestion=facts["runtime_suggestion"],
                )
            )
    records += pip_records(data)
    records.sort(key=lambda r: (r.line, r.col))
    return Conversion(shell.new, records)
