"""Shared-memory matrix descriptors of hand-written wgmma code: `T.alloc_wgmma_desc()`
/ `T.alloc_descriptor()` (a per-thread 64-bit value), `T.initialize_wgmma_descriptor`
and `T.increase_descriptor_offset`.

A descriptor packs, as the PTX ISA's matrix descriptor: the shared address >> 4
(bits 0-13), the leading and stride byte offsets >> 4 (bits 16-29, 32-45) and the
swizzle mode (bits 62-63: 0 none, 1 128-byte, 2 64-byte, 3 32-byte). The offsets
are given already divided by 16, as in the published API.

The descriptor remembers the shared buffers it was pointed at, so that a
`T.ptx_wgmma_*` reading through it counts as a read of them when the compiler
places barriers."""
from __future__ import annotations

from tilelang.language.alloc import _alloc
from tilelang.language.register_operand import const_int, element
from tilelang.ir import tensor_core_calls as TC
from tilelang.ir.buffer import Buffer, BufferData
from tilelang.ir.errors import TileLangError
from tilelang.ir.expr import BufferLoad, access_ptr, call, convert

_KINDS = ("wgmma", "tcgen05_smem", "tcgen05_instr")


def alloc_descriptor(kind="wgmma", dtype="uint64"):
    """A matrix descriptor for wgmma (a per-thread 64-bit register)."""
    if kind != "wgmma":
        raise TileLangError(f"T.alloc_descriptor: {kind!r} descriptors are not supported (sm_100 tcgen05)"
                            if kind in _KINDS else f"T.alloc_descriptor: unknown kind {kind!r}",
                            hint='use T.alloc_descriptor("wgmma") or T.alloc_wgmma_desc()')
    buf = _alloc((1,), dtype, "local", "wgmma_desc")
    if buf.dtype.bits != 64:
        raise TileLangError(f"a wgmma descriptor is 64 bits wide, got {buf.dtype}")
    buf.descriptor_kind = kind
    buf.described = []
    return buf


def alloc_wgmma_desc(dtype="uint64"):
    return alloc_descriptor("wgmma", dtype)


def descriptor_element(d, what) -> BufferLoad:
    """The descriptor a call acts on: the buffer, `desc[0]` or `desc.data`."""
    buf = d.buffer if isinstance(d, (BufferData, BufferLoad)) else d
    if not isinstance(buf, Buffer) or getattr(buf, "descriptor_kind", None) != "wgmma":
        name = getattr(buf, "name", None) or type(d).__name__
        raise TileLangError(f"{what} takes a descriptor from T.alloc_wgmma_desc(), got `{name}`",
                            hint="desc = T.alloc_wgmma_desc(); "
                                 "T.initialize_wgmma_descriptor(desc, A_shared.access_ptr('r'), ...)")
    return BufferLoad(buf, [convert(0)])


def shared_reads(*descs: BufferLoad):
    """Read pointers to the shared buffers the descriptors were pointed at."""
    bufs = {}
    for d in descs:
        for b in d.buffer.described:
            bufs.setdefault(id(b), b)
    return [access_ptr(BufferLoad(b, [convert(0)] * b.ndim), 1) for b in bufs.values()]


def initialize_wgmma_descriptor(descriptor, start_address, layout_type_=0, leading_byte_offset=0,
                                stride_byte_offset=0):
    """Point `descriptor` at shared memory `start_address` (`buf.access_ptr("r")` or an
    element) with swizzle mode `layout_type_` and the two byte offsets (>> 4)."""
    what = "T.initialize_wgmma_descriptor"
    desc = descriptor_element(descriptor, what)
    start = element(start_address, 0, f"{what}: the start address")
    if not start.buffer.scope.startswith("shared"):
        raise TileLangError(f"{what}: a descriptor addresses shared memory; `{start.buffer.name}` is "
                            f"{start.buffer.scope}")
    layout = const_int(layout_type_, f"{what}: layout_type_")
    if layout not in (0, 1, 2, 3):
        raise TileLangError(f"{what}: layout_type_ is 0 (no swizzle), 1 (128B), 2 (64B) or 3 (32B), "
                            f"got {layout}")
    offs = []
    for name, v in (("leading_byte_offset", leading_byte_offset), ("stride_byte_offset", stride_byte_offset)):
        v = v.load() if isinstance(v, Buffer) and v.is_var() else convert(v)
        c = v.value if hasattr(v, "value") and isinstance(v.value, int) else None
        if c is not None and not 0 <= c < 1 << 14:
            raise TileLangError(f"{what}: {name} is the byte offset >> 4 (14 bits), got {c}",
                                hint="pass the offset in bytes divided by 16")
        offs.append(v)
    if start.buffer not in desc.buffer.described:
        desc.buffer.described.append(start.buffer)
    return call(TC.INIT_WGMMA_DESC, [access_ptr(desc, 2), access_ptr(start, 1), convert(layout), *offs], "handle")


def increase_descriptor_offset(descriptor, offset):
    """Advance the descriptor's start address by `offset` bytes."""
    desc = descriptor_element(descriptor, "T.increase_descriptor_offset")
    if isinstance(offset, Buffer) and offset.is_var():
        offset = offset.load()
    return call(TC.INCREASE_DESC_OFFSET, [access_ptr(desc, 3), convert(offset)], "handle")
