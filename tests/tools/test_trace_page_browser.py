"""The lower-trace / pass-viewer page as a user sees it: opened in headless Chromium, it
runs without script errors, `#pass=...` shows that pass's diff, search marks matches,
a source link's target opens at the user's line, and a screenshot shows the added and removed lines in their colours. Skips without a
Chromium (CI installs Debian's `chromium`, .ci/run)."""
import inspect
import os
import re
import shutil
import subprocess

import pytest

import tilelang  # noqa: F401
from tilelang.tools.pass_viewer import view
from tests.kernels import gemm_func

_SRC, _FIRST = inspect.getsourcelines(gemm_func)
GEMM_LINE = _FIRST + next(i for i, line in enumerate(_SRC) if "T.gemm(" in line)   # in tests/kernels.py
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium installed")


def _chromium(tmp_path, url, *args):
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=3000", *args, url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    # page errors and console errors reach Chromium's log as CONSOLE lines
    assert not re.search(r"Uncaught|CONSOLE\(\d+\)\].*[Ee]rror", r.stderr), r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("viewer") / "passes.html"
    path = view(gemm_func(bm=32, bn=32, K=32), target="cpu", output=str(out))
    text = open(path).read()
    names = re.search(r'"pages": \[(.*)', text).group(1)
    index = [m for m in re.findall(r'\{"name": "(\w+)"', names)].index("lower_tile_ops")
    return path, index


def test_choosing_a_pass_shows_its_diff(page, tmp_path):
    path, index = page
    dom = _chromium(tmp_path, f"file://{path}#pass={index}&view=unified&q=T%5C.Parallel&src=0:{GEMM_LINE}",
                    "--dump-dom")
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ready="1"' in body and "data-script-errors" not in body
    v = re.search(r'<div id="view"[^>]*>', dom).group(0)
    assert 'data-page="lower_tile_ops"' in v and 'data-view="unified"' in v
    added = re.findall(r'<tr class="add">(.*?)</tr>', dom)
    removed = re.findall(r'<tr class="del">(.*?)</tr>', dom)
    assert any("T.Parallel" in r for r in added) and any("T.copy" in r for r in removed)
    assert "<mark>T.Parallel</mark>" in dom                       # the search marks matches
    assert re.search(r'<li data-index="0" class="[^"]*hidden', dom)   # the input has no T.Parallel
    assert re.search(r"k(?:ernels)?\.py:\d+</a>", dom)              # links back to the user's lines
    # the source panel shows the user's file at the line asked for
    assert 'id="source" class="open"' in dom
    hit = re.search(r'<tr class="hit"><td class="no">(\d+)</td><td class="t">(.*?)</td>', dom)
    assert hit and int(hit.group(1)) == GEMM_LINE and "T.gemm(" in hit.group(2)


def test_screenshot_shows_the_diff_colours(page, tmp_path):
    import numpy as np
    matplotlib_image = pytest.importorskip("matplotlib.image")
    path, index = page
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, f"file://{path}#pass={index}&view=split", f"--screenshot={shot}", "--window-size=1200,800")
    im = (matplotlib_image.imread(str(shot))[..., :3] * 255).round().astype(int)
    assert im.shape[:2] == (800, 1200)
    colours = {tuple(c) for c in im.reshape(-1, 3)[::7]}
    assert (230, 255, 236) in colours and (255, 235, 233) in colours   # added / removed line backgrounds
    assert os.path.getsize(shot) > 10_000
