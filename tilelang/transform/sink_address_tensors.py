"""Tensors made from addresses at function level (`A = T.make_tensor(a_ptr, shape, dtype)`
before `with T.Kernel`) are declared inside each kernel that uses them: the address
is a kernel parameter, and the kernel is where its tensor lives."""
from __future__ import annotations

from tilelang.ir import stmt as S
from tilelang.ir.visitor import walk
from tilelang.transform.pass_manager import function_pass


def is_address_tensor(buf) -> bool:
    return getattr(buf, "data_ptr", None) is not None


@function_pass("sink_address_tensors")
def sink_address_tensors(func, ctx=None):
    body = func.body
    stmts = body.stmts if isinstance(body, S.SeqStmt) else [body]
    decls = [s for s in stmts if isinstance(s, S.DeclBuffer) and is_address_tensor(s.buffer)]
    if not decls:
        return func
    out = []
    for s in stmts:
        if any(s is d for d in decls):
            continue
        if isinstance(s, S.KernelLaunch):
            used = set()
            walk(s.body, lambda n: used.add(id(n.buffer)) if hasattr(n, "buffer") else None)
            walk(s.body, lambda n: used.update(id(x.buffer) for x in getattr(n, "__dict__", {}).values()
                                               if hasattr(x, "buffer")) if n is not None else None)
            mine = [d for d in decls if id(d.buffer) in used]
            if mine:
                k = S.KernelLaunch(s.grid, s.threads, s.block_vars, s.thread_vars, S.seq(mine + [s.body]),
                                   s.annotations)
                k.span = s.span
                s = k
        out.append(s)
    return func.with_body(S.seq(out))
