"""What each page of a lower trace changed: difflib opcodes against the page it follows
(the previous IR page for an IR page; a backend page of another language has none)."""
from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass
class PageDiff:
    prev: int | None      # index of the page this one is compared with
    opcodes: list         # difflib opcodes (tag, i1, i2, j1, j2) over the two pages' lines
    added: int
    deleted: int

    @property
    def changed(self):
        return self.added > 0 or self.deleted > 0


def previous_page(pages, i):
    """The page page `i` is compared with: the IR page before it (IR pages only)."""
    if pages[i].kind != "ir":
        return None
    for j in range(i - 1, -1, -1):
        if pages[j].kind == "ir":
            return j
    return None


def page_diffs(pages) -> list:
    out = []
    for i, page in enumerate(pages):
        j = previous_page(pages, i)
        if j is None:
            out.append(PageDiff(None, [], 0, 0))
            continue
        a, b = pages[j].text.splitlines(), page.text.splitlines()
        ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        added = sum(j2 - j1 for t, _, _, j1, j2 in ops if t in ("insert", "replace"))
        deleted = sum(i2 - i1 for t, i1, i2, _, _ in ops if t in ("delete", "replace"))
        out.append(PageDiff(j, [list(o) for o in ops], added, deleted))
    return out
