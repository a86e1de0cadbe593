"""Project files that are not Python, one module per kind (issue 11, kind 6, and the C++ sources
of kind 4): ``requirements`` (requirements*.txt, setup.py / pyproject.toml / setup.cfg
dependencies), ``configs`` (YAML, JSON, TOML, INI values), ``dockerfile``, ``cpp`` (operator
registrations listed, never rewritten), ``shell`` (environment variables, CUDA-only commands, and
with ``shell_values`` the --device/--backend values of command lines) and ``notebooks``. Each takes bytes and returns a Conversion; byte-faithful
(only the value token of a converted setting changes) and idempotent. Dispatched from
transplant.filetypes; the data they use lives in rules/project/.
"""
