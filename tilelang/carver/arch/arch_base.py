"""`TileDevice`: the figures of a device that a tile-size recommender reads (the published
base class of `CUDA` and `CDNA`)."""
from __future__ import annotations


class TileDevice:
    """What a recommender needs to know about a device. Subclasses fill every field."""

    platform: str = "unknown"
    warp_size: int = 32            # threads that issue together (a wavefront on AMD)
    compute_max_core: int = 0      # SMs (CUs): blocks that run at once, one per core at least
    sm_partition: int = 4          # schedulers per SM: a block wants a multiple of this many warps
    smem_cap: int = 0              # shared memory (LDS) one block may use, bytes
    max_smem_usage: int = 0        # shared memory of one SM, bytes (blocks per SM divide it)
    reg_cap: int = 0               # 32-bit registers of one SM
    max_threads_per_block: int = 1024
    max_regs_per_thread: int = 255
    l2_cache_size_bytes: int = 0
    transaction_size = (32, 128)   # bytes of a global memory sector and of a full line
    bandwidth = (0, 0)             # relative global / shared bandwidth (published units, MB/s)
    compute_capability: str = "unknown"

    @property
    def num_sms(self) -> int:
        return self.compute_max_core

    def get_avaliable_tensorintrin_shapes(self):   # published spelling
        """The (m, n) shapes of the matrix instructions, smallest first."""
        raise NotImplementedError(f"{type(self).__name__} has no matrix instructions")
