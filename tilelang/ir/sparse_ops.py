"""`T.gemm_sp`: C += decompress(A_sparse, E) @ B for 2:4 (fp32: 1:2) structured-sparse A.

A_sparse keeps the nonzeros of A along K (K / 2 columns, or rows when `trans_A`);
E is the metadata in the natural row-major format of `layout/sparse.py`
(one row of K / e_factor integers per row of A; stored transposed when `trans_E`).
Lowered by `transform/lower_gemm_sp.py`."""
from __future__ import annotations

from tilelang.ir.operand_op import OperandOp


class GemmSp(OperandOp):
    op_name = "gemm_sp"
    fields = ("A", "E", "B", "C")
    positional = True   # prints as a T.gemm_sp call that parses again

    def __init__(self, A, E, B, C, trans_A=False, trans_E=False, trans_B=False, policy="Square",
                 clear_accum=False, k_pack=1, wg_wait=0):
        self._init()
        self.A, self.E, self.B, self.C = A, E, B, C          # BufferRegion each
        self.trans_A, self.trans_E, self.trans_B = bool(trans_A), bool(trans_E), bool(trans_B)
        self.policy, self.clear_accum, self.k_pack, self.wg_wait = policy, clear_accum, k_pack, wg_wait

    def attrs(self):
        return {"transpose_A": self.trans_A, "transpose_E": self.trans_E, "transpose_B": self.trans_B,
                "policy": self.policy, "clear_accum": self.clear_accum}

    def reads(self):
        return [self.A.buffer, self.E.buffer, self.B.buffer, self.C.buffer]

    def writes(self):
        return [self.C.buffer]
