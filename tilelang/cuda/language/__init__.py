"""Published `tilelang.cuda.language`: the `T` namespace with the CUDA-only names
(`import tilelang.cuda.language as T` works like `import tilelang.language as T`)."""
from tilelang.language import *  # noqa: F401,F403
from tilelang.cuda.language.intrinsics import (  # noqa: F401
    TensorCoreIntrinEmitter,
    WGMMATensorCoreIntrinEmitter,
    TCGEN05TensorCoreIntrinEmitter,
)
