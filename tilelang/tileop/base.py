from tilelang.language.gemm import GemmWarpPolicy  # noqa: F401
