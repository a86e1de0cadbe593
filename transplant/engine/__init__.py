"""The Python engine: one source's bytes in, its NPU bytes and the records of what changed out.

Where things are (the data flows down this list):

* driver.py       ``convert``: parse (only the skeleton, see ../skeleton.py), one traversal, records, imports
* chunks.py       libcst's parse of a long skeleton in pieces, put together as the whole's module
* bindings.py     the file's imports: local name -> qualified name, and each import's rewrite plan
* transformer.py  the one libcst transformer, made of one handler class per concern:
  scopes.py (name resolution), references.py (dotted names), calls.py (call rules),
  commands.py (shell commands run by os/subprocess, reached from calls.py), values.py (device/backend
  values by their place), device_tests.py (what a device is tested against), argv.py (command lines
  written as lists), members.py (the project's own definitions of renamed members), imports.py
  (import rewrites, pruning, insertion)
* state.py        what the handlers share: records, node replacements, import uses
* literals.py     which literals are CUDA devices or the NCCL backend, and their NPU form
* positions.py    lines and columns of recorded nodes (the only user of libcst internals)
* cst_util.py     small pure helpers over nodes

Rules come from ../rules.py (loaded once per process); the pre-filter that decides which files
reach the engine is RuleSet.may_match, in the same module. The engine never reads or writes files.
"""

from __future__ import annotations

from ..codecache import compiled_dataclasses
from ..records import CODES, Conversion, Record, SourceError

with compiled_dataclasses():  # libcst's node classes and the engine's: see ../codecache.py
    from .bindings import NO_STARS, Bindings, StarNames, analyse_imports
    from .cst_util import (
        code_of,
        dotted_parts,
        import_asname,
        import_module_name,
        is_docstring_stmt,
        is_future_import,
        make_dotted,
        string_value,
        target_names,
    )
    from .driver import convert, parse
    from .positions import node_positions

__all__ = [
    "CODES",
    "NO_STARS",
    "Bindings",
    "StarNames",
    "Conversion",
    "Record",
    "SourceError",
    "analyse_imports",
    "code_of",
    "convert",
    "dotted_parts",
    "import_asname",
    "import_module_name",
    "is_docstring_stmt",
    "is_future_import",
    "make_dotted",
    "node_positions",
    "parse",
    "string_value",
    "target_names",
]
