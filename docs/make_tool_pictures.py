"""The README's pictures of the developer tools (docs/images/tools_*.png):

    python docs/make_tool_pictures.py        # needs matplotlib, chromium, NVRTC

A GEMM's lower trace for sm_90a opened in headless Chromium at the pass that lowers the
tile copies, the mma accumulator fragment of one warp, and a 128-byte-swizzled shared
tile; each PNG is reduced to a 256-colour palette to stay small."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tilelang  # noqa: E402
from PIL import Image  # noqa: E402
from tilelang.layout import make_full_bank_swizzled_layout, make_mma_accumulator_fragment  # noqa: E402
from tilelang.tools import plot_layout  # noqa: E402
from tilelang.tools.pass_viewer import view  # noqa: E402
from tests.kernels import gemm_func  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def small_png(src, dst, width=None):
    im = Image.open(src).convert("RGB")
    if width and im.width > width:
        im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
    im.quantize(256).save(dst, optimize=True)
    print(dst, os.path.getsize(dst), "bytes")


def main():
    tmp = tempfile.mkdtemp()
    page = view(gemm_func(bm=64, bn=64, K=64), target="cuda -arch=sm_90a", output=os.path.join(tmp, "gemm.html"))
    text = open(page).read()
    names = [n for n in __import__("re").findall(r'\{"name": "(\w+)"', text)]
    shot = os.path.join(tmp, "page.png")
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    f"--user-data-dir={tmp}/profile", "--window-size=1400,820", f"--screenshot={shot}",
                    f"file://{page}#pass={names.index('lower_tile_ops')}&view=split"], check=True,
                   capture_output=True)
    small_png(shot, os.path.join(OUT, "tools_lower_trace.png"))
    (acc,) = plot_layout(make_mma_accumulator_fragment(16, 16, 1, 1), tmp, "acc", formats="png")
    small_png(acc, os.path.join(OUT, "tools_fragment.png"), width=700)
    (swz,) = plot_layout(make_full_bank_swizzled_layout((8, 64), "float16"), tmp, "swz", formats="png")
    small_png(swz, os.path.join(OUT, "tools_swizzle.png"), width=1400)


if __name__ == "__main__":
    main()
