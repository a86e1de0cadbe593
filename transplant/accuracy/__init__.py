"""Accuracy mode: prove that the converted run computes what the original computes (msprobe).

``transplant -i PROJECT -o OUT accuracy -m PROJECT/train.py [-t model]`` writes two trees that
differ only by the conversion: ``OUT/<name>_accuracy_bench/`` (the original, unconverted) and
``OUT/<name>_msft_accuracy/`` (converted), both with the same instrumentation of the entry file:
determinism first (msprobe's ``seed_all`` with deterministic algorithms, dropout off), a
``PrecisionDebugger`` made from ``accuracy_config.json`` beside the entry file, and
``start(model)`` / ``stop()`` / ``step()`` around each training step. Each run dumps to
``accuracy_dump/`` beside the entry file; ``transplant compare --golden BENCH_DUMP --target
NPU_DUMP`` runs msprobe's comparison on the two dumps and says where they first differ.

The converter never imports msprobe or torch; only ``compare`` (through a child process) and the
instrumented scripts need mindstudio-probe (the ``accuracy`` extra).

Where things are:

* ``cli.py``        the mode's arguments (steps, level, data) and the options they make
* ``templates.py``  msprobe's config file and the inserted code, as text
* ``instrument.py`` where the code goes in the entry file (distributed mode's Analysis and Plan)
* ``trees.py``      the two trees: copy, instrument, convert, put in place
* ``dumps.py``      the dump folders: steps and ranks, stacks, NaN/Inf in statistics (plain JSON)
* ``compare.py``    ``transplant compare``: pairs the dumps, runs msprobe, summarises its tables
* ``tables.py``     msprobe's compare tables, CSV or workbook
* ``parameters.py`` ``compare --task params``: the two models' parameters, from the module dumps
* ``loss.py``       ``compare --task loss``: the two runs' losses from their logs, table and plot
* ``overflow.py``   ``compare --task overflow``: the first operator that overflows (msprobe overflow_check)
* ``worker.py``     the child process that imports msprobe and runs its commands
"""
