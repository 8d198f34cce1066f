"""`# tilelang: M=1024, N=1024` comments: parsing, errors, which kernel a comment applies to."""
import ast

import pytest

from tilelang.lsp.params import find_comments, parse_comment_body, values_for


def test_parse_literals():
    assert parse_comment_body(' M=1024, N=(1, 2), dtype="float16", causal=True') == \
        {"M": 1024, "N": (1, 2), "dtype": "float16", "causal": True}
    assert parse_comment_body("  ") == {}


@pytest.mark.parametrize("body, says", [
    ("M=1024, 7", "name=value"),
    ("M=", "not a list of name=value pairs"),
    ("M=foo()", "must be a Python literal"),
])
def test_bad_comment_says_what_is_wrong(body, says):
    with pytest.raises(ValueError, match=says):
        parse_comment_body(body)


DOC = '''# tilelang: M=64, N=64
import tilelang

s = """
# tilelang: M=1
"""

# tilelang: N=128
@tilelang.jit
def a(M, N):
    pass


def b(M, N):  # tilelang: M=oops(
    pass
'''


def test_comments_attach_to_the_definition_below_or_to_the_document():
    lines = DOC.splitlines()
    comments = find_comments(DOC, ast.parse(DOC))
    assert [c.line for c in comments] == [1, 8, 14]        # not the one inside the string
    assert comments[2].error and "not a list" in comments[2].error
    assert (comments[0].col, comments[0].end_col) == (0, len(lines[0]))
    assert values_for(comments, lines, 9) == {"M": 64, "N": 128}   # `a` (its decorator on line 9)
    assert values_for(comments, lines, 14) == {"M": 64, "N": 64}   # `b`: the document's values
