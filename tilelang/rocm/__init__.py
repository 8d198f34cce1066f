"""AMD ROCm. Kernels compile for AMD CDNA GPUs with target "hip" (or the published
spelling "rocm"), e.g. `tilelang.compile(func, target="hip -arch=gfx940")`: the backend
lives in `tilelang.backend.hip` (HIP C++ with LDS tiles and MFMA matrix-core gemms,
compiled by hipcc, launched through the HIP driver API). This package answers whether a
ROCm device is here (`tilelang.rocm.target.check_hip_availability`)."""
