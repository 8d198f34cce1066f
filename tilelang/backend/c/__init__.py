"""What the C-printing backends (cpu, cuda) share: the expression printer base
(`printer.py`) whose dtype and intrinsic spellings each backend overrides, the name
allocator (`names.py`), vector types and lane shuffles (`lanes.py`), the launch ABI and host launch glue (`launch.py`), and
device-neutral headers (`include/`: the Philox generator both backends' random
streams come from). Nothing here imports a backend."""
import os

INCLUDE_DIR = os.path.join(os.path.dirname(__file__), "include")
