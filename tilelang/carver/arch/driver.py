"""Published path of the current GPU's properties (`tilelang.device`)."""
from tilelang.device import (  # noqa: F401
    get_device_capability,
    get_device_name,
    get_max_dynamic_shared_size_bytes,
    get_num_sms,
    get_registers_per_block,
    get_shared_memory_per_block,
)
