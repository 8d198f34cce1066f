"""Calls of hand-written tensor-core code (language/tensor_core_ptx.py, warpgroup.py,
descriptor.py), kept as `tl.*` calls in `Evaluate` statements.

Each thread that reaches one executes it on its own registers: wgmma and ldmatrix /
mma.sync are collective over the warp(group), so none may run on thread 0 alone
(they are in ir/mbarrier.py's EVERY_THREAD_CALLS). Buffer operands are access
pointers (`tl.access_ptr`), so barrier planning sees which memory each one reads
or writes."""
from __future__ import annotations

# (shape, a_k_major, b_k_major, a_type, b_type, c_type, desc_a, a_off16, desc_b, b_off16,
#  C, scale_out, scale_a, scale_b, *shared read through the descriptors)
WGMMA_SS = "tl.ptx_wgmma_ss"
# (shape, b_k_major, a_type, b_type, c_type, A, desc_b, b_off16, C, scale_out, scale_a,
#  scale_b, *shared read through the descriptor)
WGMMA_RS = "tl.ptx_wgmma_rs"
WARPGROUP_ARRIVE = "tl.warpgroup_arrive"            # ()
WARPGROUP_COMMIT = "tl.warpgroup_commit_batch"      # ()
WARPGROUP_WAIT = "tl.warpgroup_wait"                # (n)
WARPGROUP_FENCE_OPERAND = "tl.warpgroup_fence_operand"  # (first element, 32-bit registers)
# (first element of fp32 registers, count): a predicated-off shared store of them that the
# compiler may not move across the next warpgroup_wait (the attention overlap's softmax)
PIN_BEFORE_WGMMA_WAIT = "tl.pin_before_wgmma_wait"
INIT_WGMMA_DESC = "tl.initialize_wgmma_descriptor"  # (desc, smem pointer, layout, lbo16, sbo16)
INCREASE_DESC_OFFSET = "tl.increase_descriptor_offset"  # (desc, bytes)
LDMATRIX = "tl.ptx_ldmatrix"                        # (trans, num, smem pointer, register pointer)
# (shape, a_type, b_type, c_type, A, B, C, saturate): A row-major, B column-major
MMA = "tl.ptx_mma"

WGMMA_CALLS = frozenset({WGMMA_SS, WGMMA_RS, WARPGROUP_ARRIVE, WARPGROUP_COMMIT, WARPGROUP_WAIT})
TENSOR_CORE_CALLS = WGMMA_CALLS | {WARPGROUP_FENCE_OPERAND, PIN_BEFORE_WGMMA_WAIT, INIT_WGMMA_DESC, INCREASE_DESC_OFFSET, LDMATRIX,
                                   MMA}
