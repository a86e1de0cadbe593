"""Issue 18: conversions that keep real programs working. Names written are bound where they run
(notebooks in cell order); the golden fixtures of the other patterns are in fixtures/rules."""

from __future__ import annotations

import json

from conftest import FIXTURES, cached_ruleset
from transplant.formats.notebooks import convert_notebook
from unbound import unbound

NOTEBOOK = FIXTURES / "scope" / "colab_setup.ipynb"


def _cells(data: bytes) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(data)["cells"] if c["cell_type"] == "code"]


def test_notebook_import_is_in_effect_before_the_first_use_in_cell_order():
    source = NOTEBOOK.read_bytes()
    conv = convert_notebook(source, cached_ruleset())
    cells = _cells(conv.new)
    # the first use is inside `if using_colab:` in the first code cell, whose `import torch` binds
    # only that branch; the module-level `import torch` comes in the next cell
    assert cells[0].splitlines() == [
        "using_colab = False",
        "import torch_npu",
        "if using_colab:",
        "    import torch",
        "    !pip install torchvision",
        "    print(torch_npu.npu.is_available())",
    ]
    assert cells[1] == 'import numpy as np\nimport torch\n\ndevice = torch.device("npu")'
    assert cells[2] == "torch_npu.npu.synchronize()"
    program = "\n".join(line for cell in cells for line in cell.splitlines() if not line.lstrip().startswith("!"))
    assert unbound(program.encode()) == {}
    assert [(r.cell, r.message) for r in conv.records if "add import" in r.message] == [
        (2, "add import torch_npu")
    ]  # (cell 1 is markdown)
    assert [r.shown_message for r in conv.records if r.code == "TP106"] == ["cell 2: add import torch_npu"]
    again = convert_notebook(conv.new, cached_ruleset())
    assert again.new is None
