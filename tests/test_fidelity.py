"""Bytes in, bytes out: only the tokens a rule changes differ; encodings, line endings, tabs and
comments are kept exactly; files that do not parse raise SourceError and are copied unchanged."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cached_ruleset
from transplant import cli
from transplant.engine import SourceError, convert


def run(source: bytes) -> bytes:
    conv = convert(source, cached_ruleset())
    assert conv.new is not None
    return conv.new


# ---- encodings


def test_gbk_cookie_keeps_every_non_ascii_byte():
    source = (
        "# -*- coding: gbk -*-\nimport torch\n# 在 NPU 上训练\nname = '设备'\ntorch.cuda.synchronize()  # 同步\n"
    ).encode("gbk")
    out = run(source)
    expected = (
        "# -*- coding: gbk -*-\nimport torch\nimport torch_npu\n# 在 NPU 上训练\nname = '设备'\n"
        "torch_npu.npu.synchronize()  # 同步\n"
    ).encode("gbk")
    assert out == expected
    with pytest.raises(UnicodeDecodeError):
        out.decode("utf-8")  # still GBK, not re-encoded


def test_latin1_cookie():
    source = "# coding: latin-1\nimport torch\ncafé = 'naïve'\nx = café.cuda()\n".encode("latin-1")
    assert run(source) == "# coding: latin-1\nimport torch\nimport torch_npu\ncafé = 'naïve'\nx = café.npu()\n".encode(
        "latin-1"
    )


def test_utf8_bom_is_kept():
    source = b"\xef\xbb\xbf# \xc3\xa9\nimport torch\ntorch.cuda.empty_cache()\n"
    assert run(source) == b"\xef\xbb\xbf# \xc3\xa9\nimport torch\nimport torch_npu\ntorch_npu.npu.empty_cache()\n"


def test_bytes_that_are_not_the_declared_encoding_raise():
    with pytest.raises(SourceError):
        convert(b"import torch\nx = '\xff'\nx.cuda()\n", cached_ruleset())


# ---- line endings, tabs, comments


def test_crlf_everywhere_including_the_added_import():
    source = b"import torch\r\n\r\nx = torch.zeros(1).cuda()  # to GPU\r\n"
    out = run(source)
    assert out == b"import torch\r\nimport torch_npu\r\n\r\nx = torch.zeros(1).npu()  # to GPU\r\n"
    assert out.count(b"\n") == out.count(b"\r\n")


def test_mixed_line_endings_are_kept_line_by_line():
    source = b"import torch\r\nx = 1\ny = torch.zeros(1).cuda()\r\nz = 2\n"
    out = run(source)
    assert out == b"import torch\r\nimport torch_npu\r\nx = 1\ny = torch.zeros(1).npu()\r\nz = 2\n"


def test_old_mac_line_endings_and_positions():
    conv = convert(b"import torch\rx = 1\rx.cuda()\r", cached_ruleset())
    assert conv.new == b"import torch\rimport torch_npu\rx = 1\rx.npu()\r"
    [method] = [r for r in conv.changes if r.code == "TP102"]
    assert (method.line, method.col) == (3, 3)


def test_no_newline_at_end_of_file():
    assert run(b"import torch\nx.cuda()") == b"import torch\nimport torch_npu\nx.npu()"


@pytest.mark.parametrize("ending", [b"", b"\n", b"\n\n"])
def test_indented_comments_that_end_the_file_are_all_kept(ending):
    # libcst alone keeps only the last of them (after a module-level statement, or after a
    # function the skeleton folds away)
    after_statement = b"import torch\ntorch.cuda.synchronize()\n    # one\n    # two" + ending
    assert run(after_statement) == after_statement.replace(
        b"import torch\ntorch.cuda", b"import torch\nimport torch_npu\ntorch_npu.npu"
    )
    after_function = (
        b"import torch\nx = torch.cuda.is_available()\n\n\ndef f():\n    y = 1\n    # one\n"
        b"    # two\n\t# three" + ending
    )
    assert run(after_function) == after_function.replace(
        b"import torch\nx = torch.cuda", b"import torch\nimport torch_npu\nx = torch_npu.npu"
    )


def test_tabs_spacing_and_comments_are_untouched():
    source = (
        b"import torch\nif True:\n\tx = torch.zeros(1,\tdevice = 'cuda')   # keep  this\n"
        b"\ty=x.cuda( )\t# tab\n\t# torch.cuda.synchronize() stays in a comment\n"
    )
    expected = (
        b"import torch\nimport torch_npu\nif True:\n\tx = torch.zeros(1,\tdevice = 'npu')   # keep  this\n"
        b"\ty=x.npu( )\t# tab\n\t# torch.cuda.synchronize() stays in a comment\n"
    )
    assert run(source) == expected


def test_quotes_prefixes_and_continuations_are_kept():
    source = (
        b"import torch\nx = torch.zeros(1, device=r'cuda:0')\ny = x.to(u\"cuda\")\n"
        b"z = torch.zeros(1) \\\n    .cuda()\nw = torch.device('''cuda''')\n"
    )
    expected = (
        b"import torch\nimport torch_npu\nx = torch.zeros(1, device=r'npu:0')\ny = x.to(u\"npu\")\n"
        b"z = torch.zeros(1) \\\n    .npu()\nw = torch.device('''npu''')\n"
    )
    assert run(source) == expected


def test_positions_are_one_based_columns_of_the_changed_token():
    conv = convert(b"import torch\nif ok:\n    y = x.cuda()\n", cached_ruleset())
    [method] = [r for r in conv.changes if r.code == "TP102"]
    assert (method.line, method.col, method.end_line, method.end_col) == (3, 11, 3, 15)
    assert (method.operation, method.old, method.new) == ("method rename", "cuda", "npu")


# ---- property: only changed tokens differ

EOLS = st.sampled_from(["\n", "\r\n"])
WS = st.sampled_from(["", " ", "  ", "\t"])
QUOTE = st.sampled_from(["'", '"'])
ALPHABET = {  # characters each encoding can hold, beyond ASCII
    "utf-8": "éß中文α",
    "utf-8-sig": "éß中文α",
    "gbk": "中文αé",
    "latin-1": "éßñ",
}


@st.composite
def statement(draw, eol: str, encoding: str) -> str:
    text = draw(st.text(alphabet="abcxyz 0123456789-+\t" + ALPHABET[encoding], max_size=12))
    ws, ws2, q = draw(WS), draw(WS), draw(QUOTE)
    return draw(
        st.sampled_from(
            [
                f"x{ws}={ws2}torch.zeros(1,{ws}device={q}cuda{q})",
                f"y{ws}={ws2}x.cuda({ws})",
                f"torch.cuda.synchronize({ws})",
                f"if x.is_cuda:{ws} pass",
                f"#{ws}{text}",
                f"s = {q}{text}{q}{ws2}# {text}",
                f"z = x.to({q}cuda:{draw(st.integers(0, 7))}{q}){ws}",
                "",
                f"if True:{eol}\tw = torch.cuda.current_device(){ws}",
                f"v = [{eol}    1,{ws}{eol}]",
            ]
        )
    )


@st.composite
def python_file(draw):
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "gbk", "latin-1"]))
    eol = draw(EOLS)
    lines = []
    if encoding in ("gbk", "latin-1"):
        lines.append(f"# -*- coding: {encoding} -*-")
    lines.append("import torch")
    body = draw(st.lists(statement(eol, encoding), min_size=1, max_size=12))
    text = eol.join(lines + body) + draw(st.sampled_from(["", eol]))
    return text.encode(encoding), eol


def undo(out: bytes, eol: str) -> bytes:
    """The inverse of the rules these fragments use; fragments never contain "npu" themselves."""
    out = out.replace(b"import torch_npu" + eol.encode(), b"", 1)
    out = out.replace(b"torch_npu.npu.", b"torch.cuda.")
    out = re.sub(rb"\.npu\(", b".cuda(", out)
    out = out.replace(b".is_npu", b".is_cuda")
    return re.sub(rb"(['\"])npu", rb"\1cuda", out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(python_file())
def test_only_changed_tokens_differ(case):
    source, eol = case
    conv = convert(source, cached_ruleset())
    if conv.new is None:
        assert b"cuda" not in source.split(b"import torch", 1)[1].replace(b"# ", b"")
        return
    assert b"cuda" not in conv.new.split(b"import torch_npu", 1)[1]  # every device use converted
    assert undo(conv.new, eol) == source
    assert convert(conv.new, cached_ruleset()).new is None


# ---- files that do not parse


@pytest.mark.parametrize(
    "source,line,col",
    [
        (b"print 'hello'\nx.cuda()\n", 1, 1),
        (b"import torch\nexec 'x = 1'\n", 2, 1),
        (b"def f(:\n    return x.cuda()\n", 1, 7),
        (b"x = (\n", 1, 5),
        (b"import torch\nif x:\nx.cuda()\n", 3, 1),
    ],
)
def test_syntax_errors_raise_source_error_with_position(source, line, col):
    with pytest.raises(SourceError) as info:
        convert(source, cached_ruleset())
    assert (info.value.line, info.value.col) == (line, col)
    assert str(info.value).startswith("syntax error: ")
    assert "\n" not in str(info.value)


def test_unparsable_files_are_copied_unchanged_in_repository_mode(tmp_path, capsys):
    project = tmp_path / "legacy"
    project.mkdir()
    py2 = b"import torch\r\nprint 'on', torch.cuda.current_device()\r\n"
    broken = "# -*- coding: gbk -*-\nimport torch\nx = torch.zeros(1).cuda(\n# 未完成\n".encode("gbk")
    good = b"import torch\nx = torch.zeros(1).cuda()\n"
    (project / "py2.py").write_bytes(py2)
    (project / "broken.py").write_bytes(broken)
    (project / "good.py").write_bytes(good)
    code = cli.main(["-i", str(project), "-o", str(tmp_path / "out"), "-j", "1", "-q"])
    assert code == 0
    result = tmp_path / "out" / "legacy_msft"
    assert (result / "py2.py").read_bytes() == py2
    assert (result / "broken.py").read_bytes() == broken
    assert (result / "good.py").read_bytes() == b"import torch\nimport torch_npu\nx = torch.zeros(1).npu()\n"
    log = (result / "msFmkTranspltlog.txt").read_text(encoding="utf-8")
    assert "py2.py" in log and "broken.py" in log
