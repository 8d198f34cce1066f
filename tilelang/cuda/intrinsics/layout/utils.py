"""Published path of the sm_80 mma fragment index maps (`tilelang.layout.mma_index`)."""
from tilelang.layout.mma_index import get_ldmatrix_offset, get_mma_micro_size, mma_store_index_map  # noqa: F401
