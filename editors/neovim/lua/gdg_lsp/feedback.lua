-- What the plugin tells the server about its suggestions, in the messages of the accept protocol
-- (those of the Copilot language server): an item drawn (textDocument/didShowCompletion), a part
-- of it accepted (textDocument/didPartiallyAcceptCompletion), all of it accepted (the item's own
-- command, run after the text went in). The server keeps the counts in the user's state folder.

local remainder = require("gdg_lsp.remainder")

local M = {}

-- advertised by a server that understands the two notifications (executeCommandProvider)
M.ACCEPT_COMMAND = "gdg.didAcceptCompletion"

local function advertised(client, name)
  local provider = client.server_capabilities and client.server_capabilities.executeCommandProvider
  return type(provider) == "table" and type(provider.commands) == "table" and vim.list_contains(provider.commands, name)
end

-- an older server would log every unknown notification: speak only to one that said it listens
local function listens(client)
  return not client:is_stopped() and advertised(client, M.ACCEPT_COMMAND)
end

--- The item's own id (the argument of its accept command), or nil.
function M.id(raw)
  local command = type(raw) == "table" and raw.command
  local arg = type(command) == "table" and type(command.arguments) == "table" and command.arguments[1]
  return type(arg) == "table" and type(arg.id) == "string" and arg.id or nil
end

--- The item, as served, has been drawn.
function M.shown(client, raw)
  if listens(client) then
    client:notify("textDocument/didShowCompletion", { item = raw })
  end
end

--- `accepted`, the start of the item's insertText, is now in the buffer (a word or a line was taken).
function M.partially_accepted(client, raw, accepted)
  if listens(client) then
    client:notify("textDocument/didPartiallyAcceptCompletion",
      { item = raw, acceptedLength = remainder.utf16_length(accepted) })
  end
end

--- All of the item went in: run its command (ours, or any the client or the server knows).
function M.accepted(client, raw, bufnr)
  local command = type(raw) == "table" and raw.command
  if type(command) ~= "table" or type(command.command) ~= "string" or client:is_stopped() then
    return
  end
  local name = command.command
  if client.commands[name] or vim.lsp.commands[name] or advertised(client, name) then
    client:exec_cmd(command, { bufnr = bufnr })
  end
end

return M
