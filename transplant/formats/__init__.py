"""One module per file kind of transplant.filekinds (issue 11, kind 6, and the C++ sources of
kind 4): ``requirements`` (requirements*.txt, setup.py / pyproject.toml / setup.cfg
dependencies), ``configs`` (YAML, JSON, TOML, INI values), ``dockerfile``, ``cpp`` (operator
registrations listed, never rewritten), ``shell`` (environment variables, CUDA-only commands, and
with ``shell_values`` the --device/--backend values of command lines), ``notebooks`` and ``python``
(the engine's kind). Each provides ``may_convert(path, data, session)`` and ``convert(path, data,
session)`` returning a Conversion; byte-faithful (only the value token of a converted setting
changes) and idempotent. Named by the registry transplant.filekinds; the data they use lives in
rules/project/.
"""
