"""Shared-memory bank-conflict simulation for a layout.

Shared memory has 32 banks of 4 bytes. A 16-byte-per-thread access (ldmatrix
row, `ld.shared.v4`, cp.async 16 B) is served in phases of 8 threads (8 x 16 B
= 128 B = one pass over all banks); a phase is conflict-free when its 32 words
land in 32 different banks. The cost of a phase is the largest number of
distinct 4-byte words any one bank must serve (same word = broadcast, free)."""
from __future__ import annotations

import numpy as np

from tilelang.layout.evaluate import const_shape

NUM_BANKS = 32
BANK_BYTES = 4


def phase_ways(byte_addresses, access_bytes=16):
    """Wavefronts one phase needs: accesses start at `byte_addresses`, each
    `access_bytes` long."""
    words = set()
    for a in byte_addresses:
        for w in range(access_bytes // BANK_BYTES):
            words.add(int(a) // BANK_BYTES + w)
    per_bank = np.zeros(NUM_BANKS, np.int64)
    for w in words:
        per_bank[w % NUM_BANKS] += 1
    return int(per_bank.max()) if words else 0


def ldmatrix_phases(shape, bits):
    """The phases of ldmatrix (or any 8-rows-at-one-column 16 B pattern, as
    used by mma operand loads and by the column-major side of a transpose) over
    a 2-D tile: for each 8-row group and each 16-byte column chunk, the eight
    rows' chunks. Returns a list of phases, each a list of (row, col) starts."""
    rows, cols = shape
    vec = 128 // bits
    phases = []
    for r0 in range(0, rows - rows % 8, 8):
        for c in range(0, cols - cols % vec, vec):
            phases.append([(r0 + r, c) for r in range(8)])
    return phases


def row_vector_phases(shape, bits):
    """16-byte vector accesses in row-major thread order (a coalesced global
    to shared copy): phase p is chunks 8p .. 8p+7 of the flattened tile."""
    rows, cols = shape
    vec = 128 // bits
    chunks = [(r, c) for r in range(rows) for c in range(0, cols - cols % vec, vec)]
    return [chunks[k:k + 8] for k in range(0, len(chunks) - len(chunks) % 8, 8)]


def max_conflict_ways(layout, bits, phases):
    """Worst phase cost of `phases` (lists of logical (row, col) starts of
    16-byte accesses) under `layout` for `bits`-bit elements. 1 = conflict
    free. The layout must keep each 16-byte chunk contiguous, which every
    swizzle here does (checked)."""
    offs = layout.offsets()
    vec = 128 // bits
    ebytes = bits / 8
    worst = 0
    for ph in phases:
        starts = []
        for r, c in ph:
            run = offs[r, c:c + vec]
            if not np.array_equal(run, run[0] + np.arange(vec)):
                raise ValueError(f"layout splits the 16-byte chunk at ({r}, {c}); bank model assumes whole chunks")
            starts.append(int(run[0] * ebytes))
        worst = max(worst, phase_ways(starts))
    return worst


def is_bank_conflict_free(layout, bits, pattern="ldmatrix"):
    """No phase of the named access pattern (`"ldmatrix"` or `"row_vector"`)
    needs more than one wavefront."""
    shape = const_shape(layout.get_input_shape()[-2:])
    if len(layout.get_input_shape()) != 2:
        raise ValueError("bank-conflict checks take a 2-D layout (check one leading index at a time)")
    phases = {"ldmatrix": ldmatrix_phases, "row_vector": row_vector_phases}[pattern](shape, bits)
    return max_conflict_ways(layout, bits, phases) <= 1
