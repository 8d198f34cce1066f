"""`tilelang.contrib`: toolchain helpers under their published names."""
