"""A language server for TileLang kernels (`python -m tilelang.lsp`): inlay hints with the
shape, dtype and scope of every buffer and the extents of T.Parallel / T.Pipelined loops,
hover with a buffer's description and its layout on a GPU target, and diagnostics from the
compiler's own located errors. `analysis` and `layouts` work without pygls; `server` maps
them to LSP."""
