"""What a TF32 gemm multiplies (T.gemm on float32 / tfloat32 operands with a float32
accumulator, backend/cuda/ops/mma.py): each operand's top 19 bits, the low 13 mantissa
bits dropped. References of such gemms apply this to their inputs."""
import numpy as np


def tf32(x):
    """numpy array or torch tensor -> the same kind, float32 values truncated to tf32."""
    if isinstance(x, np.ndarray):
        return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    import torch
    return (x.float().contiguous().view(torch.int32) & -8192).view(torch.float32)
