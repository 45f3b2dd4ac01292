-- Headless Neovim (0.7+) as the editor of `kandev-lsp run`: the built-in LSP client starts the command,
-- opens one file, waits for its diagnostics, asks for the definition and the hover of one position, and
-- quits with :qa!, which stops the client the way Neovim always does on exit (shutdown, exit, then it
-- waits up to the client's exit_timeout). Everything it saw is written as JSON to $KANDEV_RESULT; the
-- command's exit (code and signal) to $KANDEV_EXIT from the client's on_exit, which runs inside that
-- wait. Inputs: $KANDEV_CMD (the command, a JSON list), $KANDEV_ROOT, $KANDEV_FILE, $KANDEV_LINE and
-- $KANDEV_CHARACTER (0-based).

local result = { errors = {} }

local function write_result()
  local handle = assert(io.open(os.getenv("KANDEV_RESULT"), "w"))
  handle:write(vim.fn.json_encode(result))
  handle:close()
end

local function main()
  local diagnostics = nil
  local exit_file = os.getenv("KANDEV_EXIT")
  local client_id = vim.lsp.start_client({
    name = "kandev-lsp",
    cmd = vim.fn.json_decode(os.getenv("KANDEV_CMD")),
    root_dir = os.getenv("KANDEV_ROOT"),
    flags = { exit_timeout = 60000 }, -- a generous stop on :qa (the default is 500 ms), for a loaded machine
    handlers = {
      ["textDocument/publishDiagnostics"] = function(_, params)
        if params and params.diagnostics and #params.diagnostics > 0 then
          diagnostics = params
        end
      end,
    },
    on_exit = function(code, signal)
      -- A luv callback: plain Lua only (no vim.fn here).
      local handle = io.open(exit_file, "w")
      handle:write(string.format('{"code": %d, "signal": %d}', code, signal))
      handle:close()
    end,
  })
  assert(client_id, "vim.lsp.start_client failed")
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("KANDEV_FILE")))
  local bufnr = vim.api.nvim_get_current_buf()
  assert(vim.lsp.buf_attach_client(bufnr, client_id), "buf_attach_client failed")
  result.diagnosticsArrived = vim.wait(120000, function() return diagnostics ~= nil end, 50)
  result.diagnostics = diagnostics
  local client = vim.lsp.get_client_by_id(client_id)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = tonumber(os.getenv("KANDEV_LINE")), character = tonumber(os.getenv("KANDEV_CHARACTER")) },
  }
  for _, method in ipairs({ "textDocument/definition", "textDocument/hover" }) do
    local answer, err = client.request_sync(method, params, 60000, bufnr)
    result[method] = answer and answer.result or vim.NIL
    if err or (answer and answer.err) then
      table.insert(result.errors, method .. ": " .. vim.inspect(err or answer.err))
    end
  end
end

local ok, problem = pcall(main)
if not ok then
  table.insert(result.errors, tostring(problem))
end
write_result()
vim.cmd("qa!")
