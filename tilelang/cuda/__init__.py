"""Published import paths under `tilelang.cuda` (CUDA-specific helpers that kernel code
imports). The CUDA backend itself is `tilelang.backend.cuda`."""
