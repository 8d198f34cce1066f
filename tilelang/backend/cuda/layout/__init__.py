"""Where the CUDA backend keeps a buffer's elements: shared-memory layouts (shared.py),
the register layouts of fragments (fragment.py: accumulator, row and column vectors;
tile.py: thread tiles; annotated.py: users' Fragments)."""

# Placement kinds (plan/kernel.py Placement.kind) of fragments held in registers: each
# thread's elements are an array indexed by slot, never by the element's logical index
REGISTER_FRAGMENT_KINDS = ("acc", "row", "col", "tile")
