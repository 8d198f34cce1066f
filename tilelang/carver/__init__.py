"""`tilelang.carver`: hardware descriptions used by kernel authors to size tiles
(only `tilelang.carver.arch` so far; the roller/templates are not implemented)."""
