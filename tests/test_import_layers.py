"""The package's import graph follows its layers (DESIGN.md: data flows language -> frontend ->
ir -> transform -> backend -> jit), and nothing imports in a cycle.

The layers, as the code has them: the IR (with its builder, the recording stack that `T`
functions append to, and the simplifier that an expression's truth value needs) at the
bottom; the language's constructors above it, then the frontend that parses kernel bodies
and calls them, then the `T` namespace that gathers both; the backends above the passes;
jit above the backends; tools and facades on top.

Every module of tilelang/ is parsed with `ast`; its imports at the top AND inside functions
count (an import moved into a function still runs against the layers, only later). A module
may import its own package and the packages of lower layers, never a package of its own
layer or of a higher one. Inside `backend/cuda` and `backend/cpu`, modules must not import
each other in a cycle either."""
import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tilelang"

# bottom first. Packages of one layer are independent of each other.
LAYERS = [
    {"env", "identity", "version", "device"},   # environment switches, cache-key helpers, __version__, GPU properties
    {"ir"},                             # dtypes, expressions, statements, buffers, the printer
    {"arith", "arrays"},                # simplification and bounds over ir; array interop
    {"layout"},                         # Layout / Fragment, swizzles, MMA operand layouts
    {"transform"},                      # IR -> IR passes and the pass manager
    {"language"},                       # T's constructors: record tile ops through ir/builder.py
    {"frontend"},                       # Python -> IR: the parser, compile-time Python, T.macro
    {"language (namespace)"},           # `import tilelang.language as T` (incl. T.prim_func, T.macro)
    {"cuda", "tileop", "math"},         # published import paths over the language
    {"intrinsics"},                     # the older published path of tilelang.cuda.intrinsics
    {"backend"},                        # the backend interface, registry, shared helpers
    {"backend.cpu", "backend.cuda", "backend.hip"},   # the backends (never each other)
    {"tools.trace"},                    # the lower trace's renderers (compile and lower call them)
    {"carver", "profiler", "engine"},   # hardware queries, benchmarking, tilelang.lower
    {"jit"},                            # tilelang.jit / compile, JITKernel, the kernel cache
    {"autotuner", "testing", "rocm"},
    {"contrib"},
    {"lsp"},                            # the language server: runs documents, traces and lowers their kernels
    {"utils", "compat", "tools"},       # published paths (tilelang.utils.tensor), the tvm shim; developer tools
    {"(root)"},                         # the package: `tilelang.jit`, `tilelang.compile`, ...
    {"__main__", "puzzles"},            # python -m tilelang; the learners' exercises and their checker
]
LAYER = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
# inside these packages no two modules import each other, directly or through others
ACYCLIC_MODULES = ("backend.cuda", "backend.cpu", "backend.hip")
# imports against the layers that issue 15 still has to remove, as (importing module,
# imported module). The list must match exactly: a new violation fails, and so does an entry
# that is gone (strike it off).
KNOWN = {
    # the printer prints a call as `T.<name>` when the T namespace has that name, else as
    # T.call_extern: the IR does not yet record which calls are the namespace's intrinsics
    ("tilelang.ir.printer", "tilelang.language"),
}


def _modules():
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def package(module):
    """The layer unit of a module: `backend.cuda` / `backend.cpu` for the backends, else the
    first name under tilelang (a root-level file such as env.py is its own)."""
    parts = module.split(".")[1:]
    if not parts:
        return "(root)"
    if parts == ["language"]:   # the namespace gathers the constructors and the frontend's entry points
        return "language (namespace)"
    if parts[0] == "backend" and len(parts) > 1 and parts[1] in ("cuda", "cpu"):
        return f"backend.{parts[1]}"
    if parts[0] == "tools" and len(parts) > 1 and parts[1] == "trace":
        return "tools.trace"
    return parts[0]


def _imports(module, path):
    """(imported module, line, in a function?) for every tilelang import of `module`."""
    is_pkg = path.name == "__init__.py"
    out = []

    def resolve(base, names, node, in_fn):
        for a in names:
            sub = f"{base}.{a.name}"
            out.append((sub if sub in MODULES else base, node.lineno, in_fn))

    def visit(node, in_fn):
        for child in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, fn) for a in child.names if a.name.split(".")[0] == "tilelang")
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = ".".join(base[:len(base) - child.level + 1] + ([child.module] if child.module else []))
                else:
                    base = child.module or ""
                if base.split(".")[0] == "tilelang":
                    resolve(base, child.names, child, fn)
            visit(child, fn)
    visit(ast.parse(path.read_text()), False)
    return out


def _graph():
    return {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_package_has_a_layer():
    assert sorted({package(m) for m in MODULES} - set(LAYER)) == []


def _upward():
    """{(module, imported module): [where]} for the imports against the layers."""
    out = collections.defaultdict(list)
    for m, imports in _graph().items():
        for target, line, in_fn in imports:
            a, b = package(m), package(target)
            if a != b and LAYER[b] >= LAYER[a]:
                out[(m, target)].append(f"{MODULES[m].relative_to(ROOT.parent)}:{line} ({a}, layer {LAYER[a]}) "
                                        f"imports {target} ({b}, layer {LAYER[b]}) "
                                        f"{'in a function' if in_fn else 'at the top'}")
    return out


def test_no_import_runs_against_the_layers():
    up = _upward()
    bad = [w for k, where in sorted(up.items()) if k not in KNOWN for w in where]
    assert bad == [], "\n".join(bad)
    assert sorted(KNOWN - set(up)) == [], "these known violations are gone: strike them off KNOWN"


def _cycles(nodes, edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def strong(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def test_no_cycle_between_packages():
    edges = collections.defaultdict(set)
    for m, imports in _graph().items():
        for target, _, _ in imports:
            if package(m) != package(target) and (m, target) not in KNOWN:
                edges[package(m)].add(package(target))
    assert _cycles({package(m) for m in MODULES}, edges) == []


def test_no_cycle_between_modules_of_a_backend():
    edges = collections.defaultdict(set)
    for m, imports in _graph().items():
        for target, _, _ in imports:
            if package(m) in ACYCLIC_MODULES and package(target) == package(m) and target != m \
                    and not MODULES[target].name == "__init__.py":
                edges[m].add(target)
    assert _cycles(set(edges), edges) == []


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    # the rules above would pass vacuously if the parser missed these forms
    src = "import tilelang.ir\nfrom . import stmt\n\ndef f():\n    from tilelang.jit import kernel\n"
    path = tmp_path / "x.py"
    path.write_text(src)
    got = _imports("tilelang.ir.x", path)
    assert ("tilelang.ir", 1, False) in got and ("tilelang.ir.stmt", 2, False) in got
    assert ("tilelang.jit.kernel", 5, True) in got
    assert _cycles({"a", "b", "c"}, {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
