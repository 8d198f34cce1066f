"""Published `tilelang.utils.language` helpers."""
from tilelang.ir.buffer import to_region


def to_buffer_region(obj):
    """A buffer, a load or a region as a BufferRegion (a whole buffer: all of it)."""
    return to_region(obj)
