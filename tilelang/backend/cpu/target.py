"""CPU targets: 'cpu' (also 'c', 'llvm'), the host's own instruction set."""
from tilelang.backend.registry import Target


def parse_target(kind, arch=None, options=None):
    return Target("cpu", arch or "native", dict(options or {}))
