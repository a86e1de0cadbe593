"""Commands in shell text: where a command word of the rules (``nvidia-smi``, ...) runs, and its
arguments. The one matching that shell scripts, Dockerfiles, notebooks' shell lines
(formats/shell.py) and command strings in Python (engine/commands.py) share: it sits below both.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from .rules import RuleSet

# a command word: at the start of a line or after a shell separator or keyword (sudo, watch -n 1, ...),
# after any VAR=value assignments; its arguments run to the next separator
_SEPARATORS = rb"(?:^|[;&|(`!]|\$\(|\bif\b|\bwhile\b|\buntil\b|\bthen\b|\bdo\b|\belse\b|\bRUN\b|\bwatch(?:\s+-\S+(?:\s+\d+)?)*|\bsudo|\bexec|\btime)"
_ARGS_END = re.compile(rb"[;&|)`\r\n]|$")


@lru_cache(maxsize=8)
def _command_pattern(names: tuple[str, ...]) -> "re.Pattern[bytes]":
    return re.compile(
        rb"("
        + _SEPARATORS
        + rb"\s*(?:[A-Za-z_]\w*=\S*\s+)*)("
        + b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))
        + rb")(?![\w.+-])",
        re.MULTILINE,
    )


def command_uses(code: bytes, rules: RuleSet) -> Iterator[tuple[str, int, int, bytes]]:
    """The commands of ``rules`` (ShellCommandRule) that ``code``, shell text without comments, runs:
    (name, start, end, its arguments up to the next separator, stripped). The same matching serves
    shell scripts, Dockerfiles, notebooks' shell lines and command strings in Python."""
    if not rules.commands:
        return
    for match in _command_pattern(tuple(rules.commands)).finditer(code):
        end = match.end(2)
        stop = _ARGS_END.search(code, end)  # (it matches at the end of the text, if not before)
        args_end = stop.start() if stop is not None else len(code)
        yield match.group(2).decode(), match.start(2), end, code[end:args_end].strip()
