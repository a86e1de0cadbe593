"""Shell scripts: rename CUDA environment variables (CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES)."""

from __future__ import annotations

import re

from .records import CODES, OPERATION, SKIP_LINE, Conversion, Record, skips_file
from .rules import RuleSet


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
