"""Shell scripts: rename CUDA environment variables (CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES)
and replace or report CUDA-only commands (nvidia-smi -> npu-smi info). Notebooks use the first part
only (convert_shell); whole scripts and Dockerfiles both (convert_shell_script)."""

from __future__ import annotations

import re

from ..records import CODES, OPERATION, SKIP_LINE, Conversion, Record, skips_file
from ..rules import RuleSet


def convert_shell(data: bytes, rules: RuleSet) -> Conversion:
    if not rules.env:
        return Conversion(None, [])
    if skips_file(data):  # same comments as Python files
        return Conversion(None, [])
    names = sorted(rules.env, key=len, reverse=True)
    pattern = re.compile(rb"(?<![A-Za-z0-9_])(" + b"|".join(re.escape(n.encode()) for n in names) + rb")(?![A-Za-z0-9_])")
    records: list[Record] = []
    out: list[bytes] = []
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        if SKIP_LINE.search(line):
            out.append(line)
            continue
        for match in pattern.finditer(line):
            old = match.group(1).decode()
            rule = rules.env[old]
            col = len(line[: match.start()].decode("utf-8", "replace")) + 1
            records.append(Record(number, col, number, col + len(old), CODES["env"], "fix", OPERATION["env"],
                                  f"{old} -> {rule['new_name']}", rule.origin, api=old, old=old, new=rule["new_name"]))
        out.append(pattern.sub(lambda m: rules.env[m.group(1).decode()]["new_name"].encode(), line))
    new = b"".join(out)
    return Conversion(new if new != data else None, records)


# a command word: at the start of a line or after a shell separator or keyword (sudo, watch -n 1, ...),
# after any VAR=value assignments; its arguments run to the next separator
_SEPARATORS = rb"(?:^|[;&|(`!]|\$\(|\bif\b|\bwhile\b|\buntil\b|\bthen\b|\bdo\b|\belse\b|\bRUN\b|\bwatch(?:\s+-\S+(?:\s+\d+)?)*|\bsudo|\bexec|\btime)"
_ARGS_END = re.compile(rb"[;&|)`\r\n]|$")


def convert_shell_script(data: bytes, rules: RuleSet) -> Conversion:
    """A shell script (or a Dockerfile's lines): environment variables, then commands
    (ShellCommandRule: a command run without arguments is replaced, one with arguments reported)."""
    env = convert_shell(data, rules)
    if not rules.commands or skips_file(data):
        return env
    text = env.new if env.new is not None else data
    names = sorted(rules.commands, key=len, reverse=True)
    pattern = re.compile(rb"(" + _SEPARATORS + rb"\s*(?:[A-Za-z_]\w*=\S*\s+)*)(" +
                         b"|".join(re.escape(n.encode()) for n in names) + rb")(?![\w.+-])", re.MULTILINE)
    records = list(env.records)
    out: list[bytes] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        code = line.split(b"#", 1)[0] if not line.lstrip().startswith(b"#!") else b""
        if SKIP_LINE.search(line) or not code.strip():
            out.append(line)
            continue
        pieces: list[bytes] = []
        last = 0
        for match in pattern.finditer(code):
            name = match.group(2).decode()
            rule = rules.commands[name]
            start, end = match.start(2), match.end(2)
            col = len(line[:start].decode("utf-8", "replace")) + 1
            args = code[end:_ARGS_END.search(code, end).start()].strip()
            if rule.get("new_name") and not args:
                new = rule["new_name"]
                records.append(Record(number, col, number, col + len(name), CODES["command"], "fix",
                                      OPERATION["command"], f"{name} -> {new}", rule.origin, api=name, old=name,
                                      new=new))
                pieces += [line[last:start], new.encode()]
                last = end
            else:
                records.append(Record(number, col, number, col + len(name), CODES["project_file"], "warning",
                                      "shell command", f"{name}: {rule.get('message', 'CUDA-only command')}",
                                      rule.origin, api=name, suggestion=rule.get("suggestion", "")))
        out.append(b"".join(pieces) + line[last:] if pieces else line)
    new = b"".join(out)
    records.sort(key=lambda r: (r.line, r.col))
    return Conversion(new if new != data else None, records)
