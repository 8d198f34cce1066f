"""How a block's warps split a gemm tile, and the block-level fragments that
follow from it.

`compute_warp_partition` chooses (m_warp, n_warp) the way the published
`GemmWarpPolicy` does: each warp owns a multiple of 16 rows and 8 columns;
FullRow puts as many warps as possible along M, FullCol along N, Square picks
the split whose per-warp (rows/16) : (cols/8) ratio is closest to M : N
(first best wins, scanning m_warp upwards). WGMMA additionally needs m_warp to
be a multiple of 4 (a warpgroup covers 64 rows).

The block fragments tile the warp atoms as the published layouts do: the
atom is first repeated over the warps (warp index = m_idx + m_warp * n_idx),
then that whole warp grid is repeated over registers, so a warp's rows are
`16 * (m_idx + m_warp * a)`, interleaved with the other warps'. The
`style="contiguous"` accumulator instead gives each warp one contiguous
(M/m_warp) x (N/n_warp) block with warp index m_idx * n_warp + n_idx; that is
the `tl::MmaAccLayout<M, N, WM, WN>` our CUDA header uses today."""
from __future__ import annotations

from tilelang.layout.fragment import Fragment
from tilelang.layout import mma as _mma

M_PER_WARP = 16
N_PER_WARP = 8


def _policy_name(policy):
    if isinstance(policy, str):
        name = policy
    elif hasattr(policy, "name"):
        name = policy.name
    else:
        name = {0: "Square", 1: "FullRow", 2: "FullCol"}[int(policy)]
    name = {"Full": "Square"}.get(name, name)
    if name not in ("Square", "FullRow", "FullCol"):
        raise ValueError(f"unknown GemmWarpPolicy {policy!r}")
    return name


def compute_warp_partition(M, N, num_warps, policy="Square", instruction="mma"):
    """(m_warp, n_warp) with m_warp * n_warp == num_warps for an M x N tile.
    `instruction`: "mma" (sm_80 mma.sync), "wgmma" (sm_90a) or "fma" (SIMT:
    all warps along N, as published)."""
    policy = _policy_name(policy)
    if instruction == "fma":
        return 1, num_warps
    group = 4 if instruction == "wgmma" else 1
    if num_warps % group:
        raise ValueError(f"warpgroup MMA needs a multiple of 128 threads, got {num_warps} warps")
    if M % M_PER_WARP or N % N_PER_WARP:
        raise ValueError(f"gemm tile {M}x{N}: M must be a multiple of {M_PER_WARP} and N of {N_PER_WARP}")

    def valid(m):
        n = num_warps // m
        return (num_warps % m == 0 and m % group == 0 and M % (m * M_PER_WARP) == 0
                and N % (n * N_PER_WARP) == 0)

    cands = [m for m in range(1, num_warps + 1) if valid(m)]
    if not cands:
        raise ValueError(f"no warp partition for a {M}x{N} gemm tile over {num_warps} warps (policy {policy}): "
                         f"each warp must own a multiple of {M_PER_WARP} rows and {N_PER_WARP} columns"
                         + (", with m_warp a multiple of 4" if group == 4 else "")
                         + "; change `threads` or the block tile")
    if policy == "FullRow":
        m = max(cands)
    elif policy == "FullCol":
        m = min(cands)
    else:
        ideal = M / N
        m = min(cands, key=lambda m: (abs((M / (m * M_PER_WARP)) / (N / ((num_warps // m) * N_PER_WARP)) - ideal), m))
    return m, num_warps // m


def make_mma_accumulator_fragment(M, N, m_warp, n_warp, style="tilelang", warp_col_major=False):
    """The M x N accumulator of an sm_80 mma.sync gemm over m_warp x n_warp
    warps (see the module note for the two styles). `warp_col_major` (contiguous
    style): warp w sits at row w % m_warp, column w // m_warp of the warp grid, as
    the warpgroups of a wgmma split along N do."""
    wm, wn = M // m_warp, N // n_warp
    if M % m_warp or N % n_warp or wm % M_PER_WARP or wn % N_PER_WARP:
        raise ValueError(f"{M}x{N} does not split into {m_warp}x{n_warp} warps of 16x8 multiples")
    atom = _mma.mma_m16n8k16_c()
    if style == "tilelang":
        warps = atom.repeat([m_warp, n_warp], repeat_on_thread=True, lower_dim_first=False)
        return warps.repeat([wm // 16, wn // 8], repeat_on_thread=False, lower_dim_first=False)
    if style == "contiguous":
        per_warp = atom.repeat([wm // 16, wn // 8], repeat_on_thread=False, lower_dim_first=True)
        return per_warp.repeat([m_warp, n_warp], repeat_on_thread=True, lower_dim_first=not warp_col_major)
    raise ValueError(f"unknown accumulator style {style!r}")


def make_mma_a_fragment(M, N, K, m_warp, n_warp, bits=16):
    """A (M x K) held in registers for an sm_80 gemm: each warp row's A is
    replicated over the n_warp warps that share it."""
    if bits == 16:
        atom = _mma.make_gemm_fragment_8x8().repeat([2, 2], lower_dim_first=False)
        kstep = 16
    elif bits == 8:
        atom = _mma.make_gemm_fragment_8x16().repeat([2, 2], lower_dim_first=False)
        kstep = 32
    else:
        raise NotImplementedError(f"A fragment for {bits}-bit inputs")
    warps = atom.repeat([m_warp, 1], repeat_on_thread=True).replicate(n_warp)
    return warps.repeat([M // m_warp // 16, K // kstep], repeat_on_thread=False, lower_dim_first=False)


def make_gemm_accumulator_fragment(M, N, threads, policy="Square", instruction="mma", style="tilelang"):
    """The block-level C fragment `T.gemm` fixes for an M x N tile with
    `threads` threads: partition by `policy`, then the mma.sync or wgmma
    accumulator over that partition."""
    if threads % 32:
        raise ValueError(f"threads must be a multiple of 32, got {threads}")
    m_warp, n_warp = compute_warp_partition(M, N, threads // 32, policy, instruction)
    if instruction == "wgmma":
        from tilelang.layout.wgmma import make_wgmma_accumulator_fragment
        return make_wgmma_accumulator_fragment(M, N, m_warp, n_warp)
    return make_mma_accumulator_fragment(M, N, m_warp, n_warp, style)
