"""before / expected for flatten_sblocks: T.sblock scopes spliced into their parents and
the kernel's safe-value annotation dropped, the statements unchanged and in order."""
import tilelang.language as T
from tilelang.transform.flatten_sblocks import flatten_sblocks


def test_blocks_are_spliced_and_scope_annotations_dropped():
    @T.prim_func
    def before(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            T.annotate_safe_value({A: 2.0})
            B[0] = A[0]
            with T.sblock("b"):
                T.reads(A[0:4])
                T.annotate_safe_value({A: 3.0})
                B[1] = A[1]
                with T.sblock("c"):
                    B[2] = A[2]
            B[3] = A[3]

    @T.prim_func
    def expected(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            B[0] = A[0]
            B[1] = A[1]
            B[2] = A[2]
            B[3] = A[3]

    assert "T.sblock" in before.script()
    assert flatten_sblocks(before).script() == expected.script().replace("expected", "before")
