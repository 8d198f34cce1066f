"""The printed IR of a kernel just before and just after one pass of the CUDA pipeline."""
from tilelang.backend.registry import parse_target
from tilelang.backend.cuda import pipeline as P
from tilelang.ir.printer import func_str
from tilelang.transform.pass_manager import PassContext, run_passes


def around(func, the_pass, arch="sm_90a", config=None):
    """(IR before `the_pass`, IR after it), printed. The CUDA passes annotate the nodes of
    their own tree in place: the text before is taken before the pass runs."""
    ctx = PassContext(config={"_keep_tile_ops": P.KEEP_TILE_OPS, **(config or {})})
    ctx.target = parse_target({"kind": "cuda", "arch": arch})
    before = run_passes(func, P.PASSES[:P.PASSES.index(the_pass)], ctx)
    text = func_str(before)
    return text, func_str(the_pass(before, ctx))


def lines_with(text, needle):
    """The lines of `text` holding `needle`, stripped."""
    return [ln.strip() for ln in text.splitlines() if needle in ln]
