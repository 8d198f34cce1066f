"""Published path of the 2:4 sparsity metadata format (`tilelang.layout.sparse`)."""
from tilelang.layout.sparse import (  # noqa: F401
    BITS_PER_GROUP,
    GROUP_CONFIG,
    get_e_factor,
    get_e_replicate_factor,
    group_config,
)
