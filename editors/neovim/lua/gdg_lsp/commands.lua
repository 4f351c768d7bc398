-- User commands: :GdgExplain, :GdgRestart, :GdgLog, :GdgStatus, :GdgSqlSource, :GdgLsp (snooze, resume,
-- why, stats).

local config = require("gdg_lsp.config")
local gate = require("gdg_lsp.gate")
local status = require("gdg_lsp.status")

local M = {}

local function client_for(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = config.name })[1]
end

--- The current buffer and its gdg_lsp client (nil, with a warning, when it is not attached).
local function attached()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    vim.notify("gdg-lsp is not attached to this buffer", vim.log.levels.WARN)
  end
  return bufnr, client
end

local function scratch(name, lines)
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  return buf
end

--- Explain the hole at the cursor: Γ, the rung chosen and why, the grammar,
--- the suggestion and its timings (gdg/explain).
function M.explain(decode)
  local bufnr, client = attached()
  if not client then
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.decode = decode ~= false
  client:request("gdg/explain", params, function(err, result)
    if err then
      vim.notify("gdg/explain failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    result = result or {}
    local text = result.text or result.error or vim.inspect(result)
    scratch("gdg://explain", vim.split(text, "\n", { plain = true }))
  end, bufnr)
end

--- The SQL data source of the buffer (gdg/sqlSource): which database its names come from.
--- With `choose`, the code actions that bind the file to another source (they write
--- the `-- gdg: source=…` / `-- gdg: schema=…` line at its top).
function M.sql_source(choose)
  local bufnr, client = attached()
  if not client then
    return
  end
  if choose then
    vim.lsp.buf.code_action({ context = { only = { "source.gdg.sqlDataSource" }, diagnostics = {} } })
    return
  end
  client:request("gdg/sqlSource", { textDocument = vim.lsp.util.make_text_document_params(bufnr) }, function(err, result)
    if err or result == nil or result == vim.NIL then
      vim.notify("gdg-lsp: no SQL data source here" .. (err and (": " .. (err.message or "")) or ""), vim.log.levels.WARN)
      return
    end
    status.on_sql_source(bufnr, result)
    local lines = { ("SQL data source: %s, %d tables"):format(result.description, result.tables or 0) }
    for _, problem in ipairs(result.problems or {}) do
      table.insert(lines, "  " .. problem)
    end
    table.insert(lines, "(:GdgSqlSource choose to change it)")
    vim.notify(table.concat(lines, "\n"), vim.log.levels.INFO)
  end, bufnr)
end

--- Stop the gdg_lsp clients and start them again on the buffers they served.
function M.restart()
  local clients = vim.lsp.get_clients({ name = config.name })
  local buffers = {}
  for _, client in ipairs(clients) do
    for bufnr in pairs(client.attached_buffers) do
      buffers[bufnr] = true
    end
    client:stop()
  end
  local cfg = vim.lsp.config[config.name]
  if not cfg then
    vim.notify("gdg_lsp is not configured: call require('gdg_lsp').setup()", vim.log.levels.ERROR)
    return
  end
  local timer = vim.uv.new_timer()
  local waited = 0
  timer:start(100, 100, vim.schedule_wrap(function()
    waited = waited + 100
    local alive = vim.tbl_filter(function(c)
      return not c:is_stopped()
    end, clients)
    if #alive > 0 and waited < 5000 then
      return
    end
    for _, c in ipairs(alive) do
      c:stop(true) -- did not stop in time
    end
    timer:stop()
    timer:close()
    status.on_status({ state = "idle" })
    for bufnr in pairs(buffers) do
      if vim.api.nvim_buf_is_valid(bufnr) then
        vim.lsp.start(cfg, { bufnr = bufnr })
      end
    end
  end))
end

function M.log()
  local path = require("gdg_lsp").options and require("gdg_lsp").options.log_file
  if path == nil then
    path = config.log_path()
  end
  if not path then
    vim.cmd.edit(vim.lsp.get_log_path()) -- no log file of its own: the LSP client's log
    return
  end
  vim.cmd("botright split " .. vim.fn.fnameescape(path))
end

M.SNOOZE_MINUTES = 15

--- What happened to the suggestions shown (gdg/status `acceptance`: counted by the server, kept
--- in your state folder, never sent anywhere).
function M.stats()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(bufnr) or vim.lsp.get_clients({ name = config.name })[1]
  if not client then
    vim.notify("gdg-lsp is not running", vim.log.levels.WARN)
    return
  end
  client:request("gdg/status", {}, function(err, result)
    if err then
      vim.notify("gdg/status failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local lines = status.acceptance_lines(type(result) == "table" and result.acceptance or nil)
    vim.notify("gdg-lsp: suggestions shown\n" .. table.concat(lines, "\n"), vim.log.levels.INFO)
  end, bufnr)
end

--- Why the suggestion shown last carries no guarantee (or that it does).
function M.why()
  local line = require("gdg_lsp.inline").why()
  vim.notify(line or "gdg-lsp: no suggestion shown in this buffer yet", vim.log.levels.INFO)
end

M.VERBS = { "snooze", "resume", "why", "stats" }

--- :GdgLsp snooze [minutes] / resume / why / stats.
function M.gdg_lsp(words)
  local verb, arg = words[1], words[2]
  if verb == "why" then
    M.why()
  elseif verb == "stats" then
    M.stats()
  elseif verb == "snooze" then
    local minutes = arg and tonumber(arg) or M.SNOOZE_MINUTES
    if not minutes or minutes <= 0 then
      vim.notify("gdg-lsp: :GdgLsp snooze takes a number of minutes above 0, e.g. :GdgLsp snooze 15", vim.log.levels.ERROR)
      return
    end
    gate.snooze(minutes)
    vim.notify(("gdg-lsp: snoozed for %s minutes (the request key still asks; :GdgLsp resume ends it)"):format(minutes))
  elseif verb == "resume" then
    gate.snooze(0)
    vim.notify("gdg-lsp: suggestions resumed")
  else
    vim.notify("gdg-lsp: :GdgLsp snooze [minutes], resume, why or stats", vim.log.levels.ERROR)
  end
end

function M.define()
  local cmd = vim.api.nvim_create_user_command
  cmd("GdgExplain", function(args)
    M.explain(not args.bang)
  end, { bang = true, desc = "gdg-lsp: explain the hole at the cursor (! skips the model)" })
  cmd("GdgRestart", M.restart, { desc = "gdg-lsp: restart the server" })
  cmd("GdgLog", M.log, { desc = "gdg-lsp: open the server log" })
  cmd("GdgStatus", function()
    vim.notify(table.concat(status.describe(), "\n"), vim.log.levels.INFO)
  end, { desc = "gdg-lsp: model state and the last suggestion" })
  cmd("GdgLsp", function(args)
    M.gdg_lsp(args.fargs)
  end, { nargs = "+", complete = function(_, line)
    return #vim.split(line, "%s+", { trimempty = true }) <= 2 and M.VERBS or {}
  end, desc = "gdg-lsp: snooze [minutes] (no suggestion by itself for a while), resume, why (the last "
    .. "suggestion's guarantee), stats (what happened to the suggestions shown)" })
  cmd("GdgSqlSource", function(args)
    M.sql_source(args.args == "choose")
  end, { nargs = "?", complete = function()
    return { "choose" }
  end, desc = "gdg-lsp: the SQL data source of this file (`choose` to change it)" })
end

return M
