"""Python oracles of the XORWOW and MRG32k3a generators as tl_rng_families.h implements
them (curand_init's layout): the integer draws, written from the generators' definitions
(Marsaglia's xorwow with its Weyl counter; L'Ecuyer's MRG32k3a), with skip-ahead by
matrix powers (MRG32k3a) and by the characteristic polynomial of the xorshift, found here
by Berlekamp-Massey (the constant P_LOW of the header)."""
M32 = 0xFFFFFFFF

# ---------------- XORWOW
def xw_step(v):
    t = v[0] ^ (v[0] >> 2)
    return v[1:] + [((v[4] ^ ((v[4] << 4) & M32)) ^ (t ^ ((t << 1) & M32))) & M32]

def _bm(s):
    n = len(s); c = [1] + [0] * n; b = [1] + [0] * n; L = 0; m = -1
    for i in range(n):
        d = s[i]
        for j in range(1, L + 1):
            d ^= c[j] & s[i - j]
        if d:
            t = c[:]
            for j in range(n - (i - m) + 1):
                c[j + i - m] ^= b[j]
            if 2 * L <= i:
                L, m, b = i + 1 - L, i, t
    return L, c[:L + 1]

def xw_charpoly():
    import random
    r = random.Random(7)
    v = [r.getrandbits(32) for _ in range(5)]
    bits = []
    for _ in range(400):
        v = xw_step(v); bits.append(v[4] & 1)
    L, c = _bm(bits)
    assert L == 160
    # P(x) = x^160 + sum c_j x^(160-j): the low 160 coefficients as an int
    return sum(1 << (160 - j) for j in range(1, 161) if c[j])

P_LOW = xw_charpoly()

def _mulmod(a, b):
    r = 0
    for i in range(159, -1, -1):
        r <<= 1
        if r >> 160:
            r = (r & ((1 << 160) - 1)) ^ P_LOW
        if (b >> i) & 1:
            r ^= a
    return r

def xw_xpow(J):
    r = 1
    for i in range(J.bit_length() - 1, -1, -1):
        r = _mulmod(r, r)
        if (J >> i) & 1:
            r <<= 1
            if r >> 160:
                r = (r & ((1 << 160) - 1)) ^ P_LOW
    return r

def xw_jump(v, J):
    r = xw_xpow(J)
    acc = [0] * 5
    for i in range(159, -1, -1):
        acc = xw_step(acc)
        if (r >> i) & 1:
            acc = [a ^ b for a, b in zip(acc, v)]
    return acc

def xw_init(seed, seq, off):
    s0 = (seed & M32) ^ 0xaad26b49
    s1 = (seed >> 32) ^ 0xf7dcefdd
    t0 = (1099087573 * s0) & M32
    t1 = (2591861531 * s1) & M32
    d = (6615241 + t1 + t0) & M32
    v = [(123456789 + t0) & M32, 362436069 ^ t0, (521288629 + t1) & M32, 88675123 ^ t1, (5783321 + t0) & M32]
    J = (seq << 67) + off
    if J:
        v = xw_jump(v, J)
    d = (d + 362437 * off) & M32
    return [v, d]

def xw_next(st):
    st[0] = xw_step(st[0])
    st[1] = (st[1] + 362437) & M32
    return (st[0][4] + st[1]) & M32

# ---------------- MRG32k3a
m1, m2 = 4294967087, 4294944443
a12, a13n, a21, a23n = 1403580, 810728, 527612, 1370589
A1 = [[0, 1, 0], [0, 0, 1], [m1 - a13n, a12, 0]]
A2 = [[0, 1, 0], [0, 0, 1], [m2 - a23n, 0, a21]]

def _mm(a, b, m):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)] for i in range(3)]

def _mpow(a, n, m):
    r = [[int(i == j) for j in range(3)] for i in range(3)]
    while n:
        if n & 1:
            r = _mm(r, a, m)
        a = _mm(a, a, m)
        n >>= 1
    return r

def _mv(a, v, m):
    return [sum(a[i][k] * v[k] for k in range(3)) % m for i in range(3)]

def mrg_init(seed, seq, off):
    s1 = [12345] * 3; s2 = [12345] * 3
    if seed:
        x1 = (seed & M32) ^ 0x55555555
        x2 = ((seed >> 32) ^ 0xAAAAAAAA) & M32
        s1 = [x1 * s1[0] % m1, x2 * s1[1] % m1, x1 * s1[2] % m1]
        s2 = [x2 * s2[0] % m2, x1 * s2[1] % m2, x2 * s2[2] % m2]
    J = (seq << 76) + off
    s1 = _mv(_mpow(A1, J, m1), s1, m1)
    s2 = _mv(_mpow(A2, J, m2), s2, m2)
    return [s1, s2]

def mrg_next_z(st):
    s1, s2 = st
    p1 = (a12 * s1[1] + (m1 - a13n) * s1[0]) % m1
    p2 = (a21 * s2[2] + (m2 - a23n) * s2[0]) % m2
    st[0] = [s1[1], s1[2], p1]
    st[1] = [s2[1], s2[2], p2]
    return p1 - p2 if p1 > p2 else p1 - p2 + m1

def mrg_next(st):
    return int(mrg_next_z(st) * 1.000000048662) & M32
