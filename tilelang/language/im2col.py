"""`T.im2col`: the tile of the implicit im2col matrix of a 2-D convolution.

Row m of the matrix is output pixel (n, oh, ow) of an NHWC image, column k is filter tap
(kh, kw, c) in the order of a [KH, KW, C, F] filter flattened to [KH * KW * C, F]; a tile
[BM, BK] of it is rows nhw_step * BM.. and columns c_step * BK... Taps in the padding (and
rows or columns past the matrix) read 0. It becomes an ordinary T.Parallel nest, so both
backends lower it like any element-wise copy."""
from __future__ import annotations

from tilelang.ir import builder as B
from tilelang.ir import expr as E
from tilelang.ir import stmt as S
from tilelang.ir.buffer import Buffer, BufferRegion
from tilelang.ir.errors import TileLangError


def _buffer(x, what):
    if isinstance(x, BufferRegion):
        x = x.buffer
    if not isinstance(x, Buffer):
        raise TileLangError(f"T.im2col: the {what} must be a buffer, got {type(x).__name__}")
    return x


def im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy=None):
    """col[i, j] = the im2col element (nhw_step * BM + i, c_step * BK + j) of the NHWC
    image `img` for a `kernel` x `kernel` filter with `stride`, `dilation`, `pad`."""
    b = B.require("T.im2col")
    img, col = _buffer(img, "image"), _buffer(col, "column tile")
    if img.ndim != 4 or col.ndim != 2:
        raise TileLangError(f"T.im2col takes an NHWC image and a 2-D column tile, got `{img.name}` "
                            f"{list(img.shape)} and `{col.name}` {list(col.shape)}")
    n_, h, w, c = (E.convert(d) for d in img.shape)
    bm, bk = col.shape
    kernel, stride, dilation, pad = (E.convert(v) for v in (kernel, stride, dilation, pad))
    oh_n = (h + pad * 2 - dilation * (kernel - 1) - 1) // stride + 1
    ow_n = (w + pad * 2 - dilation * (kernel - 1) - 1) // stride + 1
    i, j = E.Var("i"), E.Var("j")
    m = E.convert(nhw_step) * bm + i
    k = E.convert(c_step) * bk + j
    n, oh, ow = m // (oh_n * ow_n), (m // ow_n) % oh_n, m % ow_n
    kh, kw, ch = k // (kernel * c), (k // c) % kernel, k % c
    ih = oh * stride + kh * dilation - pad
    iw = ow * stride + kw * dilation - pad
    valid = E.binop("&&", E.binop("<", m, n_ * oh_n * ow_n), E.binop("<", k, kernel * kernel * c))
    for lo_ok, hi_ok in ((E.binop(">=", ih, 0), E.binop("<", ih, h)), (E.binop(">=", iw, 0), E.binop("<", iw, w))):
        valid = E.binop("&&", valid, E.binop("&&", lo_ok, hi_ok))
    value = E.select(valid, E.BufferLoad(img, [n, ih, iw, ch]), E.literal(0, img.dtype))
    store = S.BufferStore(col, E.cast(value, col.dtype), [i, j])
    b.emit(S.For(i, E.convert(0), E.convert(bm), S.PARALLEL, S.For(j, E.convert(0), E.convert(bk), S.PARALLEL, store)))


def c2d_im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy=None):
    """The published, deprecated name of T.im2col."""
    im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy)
