"""The tile-level IR: dtypes, expressions, buffers, statements, tile ops, functions."""
from tilelang.ir.dtypes import DataType, as_dtype
from tilelang.ir.expr import (PrimExpr, Var, IntImm, FloatImm, StringImm, BinOp, Not, Cast, Select,
                              Call, BufferLoad, const, convert, cast)
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.stmt import (Stmt, SeqStmt, Evaluate, BufferStore, DeclBuffer, For, IfThenElse, While,
                              LetStmt, KernelLaunch, Assert, Assume, Print, Barrier, Break, Continue)
from tilelang.ir.tile_ops import TileOp, Copy, Fill, Gemm, Reduce, CumSum, Atomic
from tilelang.ir.function import PrimFunc
from tilelang.ir.structural_hash import structural_hash
