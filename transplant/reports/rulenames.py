"""The change list's *Rule* cell: the rule's file and what it is about, not its place in the file.

Records carry the rule's id, ``device_api.json:FuncNameModifyRule[159]`` (editors, SARIF and the
rule examples key on it). A person reading the change list wants the rule's name: the API, method,
variable, module or command it is about, as its own rule file names it:
``device_args.json: torch.autocast``. Built-in rule files are read from rules/ (once per process);
a rule the built-in files do not have (a user's ``-r`` file) keeps its id, and so does one whose
record names something else (a user's file of the same name as a built-in one).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from ..resources import rules_dir

_ID = re.compile(r"^(?P<file>[\w.-]+\.json):(?P<kind>\w+)\[(?P<index>\d+)\]$")
# the field that names what a rule is about, per kind of rule (the first one a rule has)
_NAME_FIELDS = ("func_name", "old_name", "name", "module", "match", "pattern")


@lru_cache(maxsize=None)
def _rules(file: str) -> dict[str, list[dict]]:
    for path in (rules_dir() / file, rules_dir() / "npu_support" / file):
        if path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8")).get("rules", {})
            except (OSError, ValueError):
                return {}
    return {}


def rule_label(rule_id: str, named: str = "") -> str:
    """``device_args.json:DeviceArgRule[29]`` -> ``device_args.json: torch.autocast``; any other id
    (``builtin``, a user's rule) as it is. ``named``: what the record names (its API and old text),
    which the rule's name must be part of where it is not empty."""
    m = _ID.match(rule_id)
    if m is None:
        return rule_id
    kinds = _rules(m["file"])
    entries = kinds.get(m["kind"], [])
    index = int(m["index"])
    name = ""
    if index < len(entries):
        entry = entries[index]
        name = next((str(entry[f]) for f in _NAME_FIELDS if isinstance(entry.get(f), str)), "")
    if not name or named and name.rsplit(".", 1)[-1].rstrip("*") not in named:
        return rule_id
    if entry.get("on") == "method" or m["file"] == "methods.json":  # a method of any object
        name = f".{name.rsplit('.', 1)[-1]}()"
    return f"{m['file']}: {name}"
