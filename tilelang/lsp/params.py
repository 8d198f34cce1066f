"""Factory parameters for the language server: `# tilelang: M=1024, N=1024, dtype="float16"`
comments. A comment on the lines just above a kernel (its decorators and the comment lines
directly before them) applies to that kernel; any other one applies to every kernel of the
document. Values are Python literals."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

_MARK = re.compile(r"#\s*tilelang\s*:(.*)$")


@dataclass
class ParamComment:
    line: int            # 1-based line of the comment
    col: int             # 0-based column of the `#`
    end_col: int
    values: dict = field(default_factory=dict)
    error: str | None = None


def parse_comment_body(body: str) -> dict:
    """`M=1024, N=1024` -> {"M": 1024, "N": 1024}; ValueError says what is wrong."""
    body = body.strip()
    if not body:
        return {}
    try:
        call = ast.parse(f"f({body})", mode="eval").body
    except SyntaxError:
        raise ValueError(f"`{body}` is not a list of name=value pairs (e.g. `M=1024, dtype=\"float16\"`)") from None
    if call.args or any(k.arg is None for k in call.keywords):
        raise ValueError("write every value as name=value (e.g. `M=1024, N=1024`)")
    out = {}
    for k in call.keywords:
        try:
            out[k.arg] = ast.literal_eval(k.value)
        except ValueError:
            raise ValueError(f"the value of `{k.arg}` must be a Python literal, got `{ast.unparse(k.value)}`") \
                from None
    return out


def find_comments(text: str, tree: ast.AST | None = None) -> list[ParamComment]:
    """Every `# tilelang:` comment of the document. Only the lines that mention `tilelang`
    after a `#` are tokenized (a whole document takes tens of milliseconds), and lines inside
    a multi-line string of `tree` (the document's AST) are not comments."""
    lines = text.splitlines()
    inside = set()
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno > node.lineno:
                inside.update(range(node.lineno + 1, node.end_lineno + 1))
    out = []
    for n, line in enumerate(lines, 1):
        if "#" not in line or "tilelang" not in line or n in inside:
            continue
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            tokens = []   # (a line that opens a bracket or a string: its comment still counts)
        comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
        if comment is None and not tokens:
            k = line.find("#")
            comment = tokenize.TokenInfo(tokenize.COMMENT, line[k:], (n, k), (n, len(line)), line)
        if comment is None:
            continue
        m = _MARK.match(comment.string)
        if not m:
            continue
        c = ParamComment(n, comment.start[1], comment.end[1])
        try:
            c.values = parse_comment_body(m.group(1))
        except ValueError as e:
            c.error = str(e)
        out.append(c)
    return out


def _definition_below(lines: list[str], line: int) -> int | None:
    """The 1-based line of the definition (decorator or `def`) that the comment block
    holding `line` sits directly on, or None."""
    ln = line + 1
    while ln <= len(lines) and lines[ln - 1].strip().startswith("#"):
        ln += 1
    if ln <= len(lines):
        head = lines[ln - 1].strip()
        if head.startswith(("@", "def ", "async def ")):
            return ln
    return None


def values_for(comments: list[ParamComment], lines: list[str], def_line: int) -> dict:
    """The parameter values for the definition whose first line (first decorator) is
    `def_line`: the document-wide comments, then its own (which win)."""
    wide, own = {}, {}
    for c in comments:
        if c.error:
            continue
        below = _definition_below(lines, c.line)
        if below is None:
            wide.update(c.values)
        elif below == def_line:
            own.update(c.values)
    wide.update(own)
    return wide
