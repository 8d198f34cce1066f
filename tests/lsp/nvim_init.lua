-- Headless Neovim (0.7+) with its built-in LSP client: start the TileLang language server,
-- attach it to the document, write the first diagnostic it publishes to TL_NVIM_OUT, quit.
local doc, out = os.getenv("TL_NVIM_DOC"), os.getenv("TL_NVIM_OUT")
vim.cmd("edit " .. vim.fn.fnameescape(doc))
local buf = vim.api.nvim_get_current_buf()
local client = vim.lsp.start_client({
  name = "tilelang",
  cmd = { os.getenv("TL_PYTHON"), "-m", "tilelang.lsp", "--target", "cpu" },
  root_dir = vim.fn.fnamemodify(doc, ":h"),
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
      if result and #result.diagnostics > 0 then
        local d = result.diagnostics[1]
        local f = io.open(out, "w")
        f:write(string.format("%d:%d:%d:%s", d.range.start.line, d.range.start.character, d.severity, d.message))
        f:close()
        vim.cmd("qall!")
      end
    end,
  },
})
vim.lsp.buf_attach_client(buf, client)
vim.defer_fn(function() vim.cmd("qall!") end, tonumber(os.getenv("TL_NVIM_WAIT_MS") or "90000"))
