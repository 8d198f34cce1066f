"""Triton kernels for the same jobs as our benchmarks (the comparison a user has).
Written for this project; each is the straightforward Triton formulation."""
import torch
import triton
import triton.language as tl


# ---------------------------------------------------------------- GEMM
def _mm_configs():
    out = []
    for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4),
                             (128, 128, 32, 4, 4), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4)]:
        out.append(triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_warps=w, num_stages=s))
    return out


@triton.autotune(configs=_mm_configs(), key=["M", "N", "K", "RELU"])
@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, RELU: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    width = GROUP * npn
    group = pid // width
    first_m = group * GROUP
    gsize = min(npm - first_m, GROUP)
    pm = first_m + (pid % width) % gsize
    pn = (pid % width) // gsize
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = k * BK + rk
        x = tl.load(a, mask=(rm[:, None] < M) & (km[None, :] < K), other=0.0)
        y = tl.load(b, mask=(km[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
        a += BK * sak
        b += BK * sbk
    if RELU:
        acc = tl.maximum(acc, 0.0)
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, relu=False, config=None):
    """a [M, K] @ b [K, N] (any strides, e.g. b = w.T for the NT layout). `config`
    (BM, BN, BK) skips autotuning."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if config is not None:
        bm, bn, bk = config
        _mm_kernel.fn[grid](*args, RELU=relu, BM=bm, BN=bn, BK=bk, GROUP=8)
    else:
        _mm_kernel[grid](*args, RELU=relu)
    return c


# ------------------------------------------------------- row-wise kernels
@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=cols < N)


def softmax(x):
    M, N = x.shape
    y = torch.empty_like(x)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), BLOCK=triton.next_power_of_2(N), num_warps=8)
    return y


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def rmsnorm(x, w, eps=1e-6):
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), eps, BLOCK=triton.next_power_of_2(N), num_warps=8)
    return y


@triton.jit
def _add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


def add(a, b):
    c = torch.empty_like(a)
    n = a.numel()
    _add_kernel[(triton.cdiv(n, 4096),)](a, b, c, n, BLOCK=4096, num_warps=8)
    return c


# ------------------------------------------------------- flash attention
@triton.jit
def _attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, S, sqb, sqh, sqs, skb, skh, sks, svb, svh, svs,
              sob, soh, sos, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b, h = bh // H, bh % H
    rm = pid_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + b * sqb + h * sqh + rm[:, None] * sqs + rd[None, :], mask=rm[:, None] < S, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = tl.minimum((pid_m + 1) * BM, S) if CAUSAL else S
    for start in range(0, hi, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + b * skb + h * skh + rn[None, :] * sks + rd[:, None], mask=rn[None, :] < S, other=0.0)
        s = tl.dot(q, k) * qk_scale
        mask = rn[None, :] < S
        if CAUSAL:
            mask = mask & (rm[:, None] >= rn[None, :])
        s = tl.where(mask, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + b * svb + h * svh + rn[:, None] * svs + rd[None, :], mask=rn[:, None] < S, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + b * sob + h * soh + rm[:, None] * sos + rd[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=rm[:, None] < S)


def flash_attention(q, k, v, causal=False):
    """q, k, v: [B, H, S, D]."""
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    BM, BN = (128, 64) if D <= 64 else (128, 64)
    grid = (triton.cdiv(S, BM), B * H)
    _attn_fwd[grid](q, k, v, o, D ** -0.5, H, S, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
                    *o.stride()[:3], D=D, BM=BM, BN=BN, CAUSAL=causal, num_warps=8, num_stages=3)
    return o
