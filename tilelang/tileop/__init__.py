"""Published location of the tile-op enums (`tilelang.tileop.base.GemmWarpPolicy`)."""
