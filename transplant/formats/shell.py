"""Shell scripts: rename CUDA environment variables (CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES),
device and backend values of options (--device cuda -> npu, shell_values.py), and replace or report
CUDA-only commands (nvidia-smi -> npu-smi info). Notebooks use the first two parts
(convert_shell); whole scripts and Dockerfiles all three (convert_shell_script)."""

from __future__ import annotations

import re

from ..records import CODES, OPERATION, SKIP_LINE, Conversion, Record, skips_file
from ..rules import Rule, RuleSet
from ..session import Session
from ..shellcommands import command_uses
from .requirements import pip_records
from .shell_values import value_edits


def env_pattern(rules: RuleSet) -> "re.Pattern[bytes] | None":
    """The names of the rules' environment variables (exact names, and ``NCCL_...`` for a prefix rule)."""
    names = [re.escape(n.encode()) for n in sorted(rules.env, key=len, reverse=True)]
    names += [re.escape(p.encode()) + rb"[A-Z0-9_]+" for p in sorted(rules.env_prefixes, key=len, reverse=True)]
    return re.compile(rb"(?<![A-Za-z0-9_])(" + b"|".join(names) + rb")(?![A-Za-z0-9_])") if names else None


def env_edits(
    rules: RuleSet,
    pattern: "re.Pattern[bytes]",
    code: bytes,
    number: int,
    records: list[Record],
    comment: int | None = None,
) -> list[tuple[int, int, bytes]]:
    """The environment variables of one line: a record for each (a rename, or a finding for a variable
    without counterpart unless it is in the comment starting at ``comment``), and the renames' edits."""
    edits: list[tuple[int, int, bytes]] = []
    for match in pattern.finditer(code):
        old = match.group(1).decode()
        rule = rules.env_rule(old)
        if rule is None:
            continue
        col = len(code[: match.start()].decode("utf-8", "replace")) + 1
        where = (number, col, number, col + len(old))
        new_name = rule.get("new_name")
        if new_name is None:
            if comment is None or match.start() < comment:  # a variable named in a comment configures nothing
                level = rule.get("level", "note")
                kind = {"error": "no_counterpart", "warning": "unsupported", "note": "note"}[level]
                records.append(
                    Record(
                        *where,
                        CODES[kind],
                        level,
                        "",
                        f"{old}: {rule.get('message', 'has no effect on NPU')}",
                        rule.origin,
                        api=old,
                        suggestion=rule.get("suggestion", ""),
                    )
                )
            continue
        records.append(
            Record(
                *where,
                CODES["env"],
                "fix",
                OPERATION["env"],
                f"{old} -> {new_name}",
                rule.origin,
                api=old,
                old=old,
                new=new_name,
            )
        )
        edits.append((match.start(), match.end(), new_name.encode()))
    return edits


def convert_shell(data: bytes, rules: RuleSet) -> Conversion:
    """Environment variables: renamed (EnvVarModifyRule with new_name), or reported where code uses
    them (without new_name, also every variable of a prefix rule such as ``NCCL_*``); device and
    backend values of options and variables (``--device cuda``, ``BACKEND=nccl``, shell_values.py)."""
    if skips_file(data):  # same comments as Python files
        return Conversion(None, [])
    pattern = env_pattern(rules)
    records: list[Record] = []
    out: list[bytes] = []
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        if SKIP_LINE.search(line):
            out.append(line)
            continue
        comment = _comment_start(line)
        edits = env_edits(rules, pattern, line, number, records, comment) if pattern is not None else []
        for edit in value_edits(line[:comment]):
            col = len(line[: edit.start].decode("utf-8", "replace")) + 1
            what = "device string" if edit.kind == "device" else "collective backend"
            records.append(
                Record(
                    number,
                    col,
                    number,
                    col + len(edit.old),
                    CODES[edit.kind],
                    "fix",
                    OPERATION[edit.kind],
                    f"{what} {edit.old} -> {edit.new}",
                    "builtin",
                    old=edit.old,
                    new=edit.new,
                )
            )
            edits.append((edit.start, edit.end, edit.new.encode()))
        pieces: list[bytes] = []
        last = 0
        for start, end, new_bytes in sorted(edits):
            pieces += [line[last:start], new_bytes]
            last = end
        out.append(b"".join(pieces) + line[last:])
    new = b"".join(out)
    records.sort(key=lambda r: (r.line, r.col))
    return Conversion(new if new != data else None, records)


def _comment_start(line: bytes) -> int:
    """Where a ``#`` comment starts in a shell line (its length when there is none); a ``#`` inside a
    word (``${#x}``, ``a#b``) starts none."""
    match = re.search(rb"(?:^|\s)#", line)
    return match.start() if match is not None else len(line)


def command_record(rule: Rule, line: int, col: int, *, why: str = "") -> Record:
    """The finding of a command that is not replaced (TP207): run with arguments, its output read by
    a program (``why``), or a command without an NPU counterpart."""
    name = rule["old_name"]
    return Record(
        line,
        col,
        line,
        col + len(name),
        CODES["project_file"],
        "warning",
        "shell command",
        f"{name}: {rule.get('message', 'CUDA-only command')}{why}",
        rule.origin,
        api=name,
        suggestion=rule.get("suggestion", ""),
    )


def convert_shell_script(data: bytes, rules: RuleSet) -> Conversion:
    """A shell script (or a Dockerfile's lines): environment variables, then commands
    (ShellCommandRule: a command run without arguments is replaced, one with arguments reported)."""
    env = convert_shell(data, rules)
    if not rules.commands or skips_file(data):
        return env
    text = env.new if env.new is not None else data
    records = list(env.records)
    out: list[bytes] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        code = line.split(b"#", 1)[0] if not line.lstrip().startswith(b"#!") else b""
        if SKIP_LINE.search(line) or not code.strip():
            out.append(line)
            continue
        pieces: list[bytes] = []
        last = 0
        for name, start, end, args in command_uses(code, rules):
            rule = rules.commands[name]
            col = len(line[:start].decode("utf-8", "replace")) + 1
            if rule.get("new_name") and not args:
                new = rule["new_name"]
                records.append(
                    Record(
                        number,
                        col,
                        number,
                        col + len(name),
                        CODES["command"],
                        "fix",
                        OPERATION["command"],
                        f"{name} -> {new}",
                        rule.origin,
                        api=name,
                        old=name,
                        new=new,
                    )
                )
                pieces += [line[last:start], new.encode()]
                last = end
            else:
                records.append(command_record(rule, number, col))
        out.append(b"".join(pieces) + line[last:] if pieces else line)
    new = b"".join(out)
    records.sort(key=lambda r: (r.line, r.col))
    return Conversion(new if new != data else None, records)


def may_convert(path: str, data: bytes, session: Session) -> bool:
    if session.rules.mode == "runtime" and b"TORCH_TRANSFER_TO_NPU" not in data:
        return True  # a launch script gets the runtime migration's variable (entry_points.py)
    return session.rules.may_match(data) or b"pip" in data  # pip install of CUDA-only packages


def convert(path: str, data: bytes, session: Session) -> Conversion:
    """The file kind "shell" (transplant.filekinds): the script's conversion and its ``pip install``
    lines' findings (requirements.py)."""
    conv = convert_shell_script(data, session.rules)
    extra = [] if skips_file(data) else pip_records(data)
    if extra:
        conv = Conversion(conv.new, sorted(conv.records + extra, key=lambda r: (r.line, r.col)))
    if session.rules.mode == "runtime" and not skips_file(data):
        from ..entry_points import switch_shell

        conv = switch_shell(data, conv)
    return conv
