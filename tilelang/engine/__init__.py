"""Published home of the code-generation hooks (`tilelang.engine.register_cuda_postproc`,
...). Our lowering lives in `transform/` and `backend/`; this package only re-exports."""
from tilelang.engine.callback import (  # noqa: F401
    register_cuda_postproc, register_hip_postproc, register_c_postproc, register_metal_postproc,
    register_cuda_postproc_callback, register_hip_postproc_callback, register_c_postproc_callback,
    register_metal_postproc_callback,
)
