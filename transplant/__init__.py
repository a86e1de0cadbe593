"""transplant: migrate CUDA PyTorch code to Ascend NPU (torch_npu).

A file goes in at the top and its reports come out at the bottom; each line is a module or package:

    cli.py, settings.py, config.py   the command line and [tool.transplant]: argv -> Config
    codecache.py                     a faster start: the code dataclasses generates, compiled once
    console.py                       warnings, progress bar and summary of repository mode
    runner.py                        repository mode: check the paths, run the first pass, mirror the
                                     tree into a staging folder, write the reports, put it in place
    walk.py, pool.py                 the input tree in a stable order; converting files in this process
                                     or in worker processes, results streamed back in order
    stopping.py                      Ctrl-C and SIGTERM: stop at once, end the workers
    filemodes.py                     --check / --diff / --in-place / stdin, for pre-commit and editors
    roots.py                         a single file's project root and what repository mode would know
                                     of it there (the NPU fact, NPU twins), for the file modes and LSP
    project/                         the project-wide first pass: custom C++/CUDA operators and their
                                     builds, facts every worker receives
    filekinds.py                     the registry of file kinds: matching, limits, pre-checks, converters
    session.py                       what a conversion works with: rules, project facts, switches
    filetypes.py                     one file by its kind: Python, notebook, shell, C++, config, ...
    rules.py (+ rules/*.json)        the one rule language: load, validate, index; the pre-filter
    runtime_mode.py, entry_points.py --mode runtime: the engine's changes filtered by what torch_npu's
                                     runtime migration patches (transfer_api.py); its switch in programs
    ruleexamples.py                  transplant test-rules: the examples rule entries carry, checked
    skeleton.py, nesting.py          fold what no rule can match; guard libcst's parser
    engine/                          a Python source: one parse, one traversal applying every rule
    formats/                         one module per kind: python (the engine's), notebooks, shell,
                                     requirements, configs, Dockerfiles, C++ sources
    shellcommands.py                 commands in shell text (formats/shell.py, engine/commands.py)
    codes.py                         the one table of diagnostic codes (records, SARIF, README derive)
    records.py                       what a conversion reports: Record, codes, skip comments
    reports/                         the views of the records: CSV, workbook, log, text/JSON/SARIF
    distributed/                     distributed mode: one entry file -> multi-NPU training, launch script
    lsp/                             transplant lsp, the language server (optional extra)
    emulate/                         transplant emulate: run converted code without an NPU (imports torch;
                                     the converter never imports it)
"""

__version__ = "0.1.0"
