"""Host-side integer helpers for choosing tile sizes (`tilelang.math.next_power_of_2`,
`tilelang.cdiv`). They also accept index expressions where the arithmetic makes sense."""


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x (1 for x <= 1)."""
    x = int(x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def cdiv(a, b):
    """Ceiling division: the number of size-`b` tiles that cover `a`."""
    return (a + b - 1) // b
