"""The package's import graph: no two top-level packages import each other beyond the
pairs issue 15 still has to untangle (listed here; the list must match exactly, so a new
mutual import fails and a removed one is struck off). backend -> autotuner is gone (cache
identities of functions live in utils/identity.py), and so is jit <-> profiler (array interop
is tilelang/arrays.py)."""
import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tilelang"

KNOWN_CYCLES = {
    ("arith", "ir"),          # ir.expr / ir.buffer / ir.printer simplify through arith
    ("frontend", "language"),  # frontend.builder/control call language helpers (copy, fill, loops)
    ("ir", "language"),       # ir.printer names calls after language functions; Buffer.access_ptr
    ("cuda", "language"),     # the published tilelang.cuda.intrinsics paths re-export language ops
    ("(root)", "jit"),        # jit reads tilelang.__version__ from the root package
    ("(root)", "autotuner"),
}


def _package(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def _edges():
    out = collections.defaultdict(set)
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        mod = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "tilelang":
                # `from tilelang import env`: the submodule, not the package's __init__
                names = [f"tilelang.{a.name}" if (ROOT / a.name).is_dir() or (ROOT / f"{a.name}.py").exists()
                         else "tilelang" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                if n.split(".")[0] == "tilelang" and _package(n) != _package(mod):
                    out[_package(mod)].add(_package(n))
    return out


def test_mutual_imports_are_only_the_known_ones():
    g = _edges()
    cycles = {tuple(sorted((a, b))) for a in g for b in g[a] if a in g.get(b, ())}
    assert cycles == KNOWN_CYCLES, f"new: {sorted(cycles - KNOWN_CYCLES)}, gone: {sorted(KNOWN_CYCLES - cycles)}"
