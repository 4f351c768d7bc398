-- The server's state as the editor last heard it: gdg/status (model loading)
-- and gdg/suggestion (after each inline request). `statusline()` is for the
-- user's statusline; `:GdgStatus` prints `describe()`.

local gate = require("gdg_lsp.gate")

local M = {
  model = { state = "idle" }, -- last gdg/status payload
  suggestion = nil, -- last gdg/suggestion payload
  sql_sources = {}, -- bufnr -> last gdg/sqlSource payload (SQL buffers)
}

local function emit()
  vim.schedule(function()
    vim.api.nvim_exec_autocmds("User", { pattern = "GdgStatus", modeline = false })
  end)
end

--- Tell the statusline something changed (User GdgStatus).
M.changed = emit
gate.on_change(emit)

--- The message echoed for an LSP progress value ($/progress: begin, report, end), or nil.
function M.progress_message(value)
  if type(value) ~= "table" then
    return nil
  end
  local text = value.message
  if type(text) ~= "string" or text == "" then
    text = type(value.title) == "string" and value.title or ""
  end
  if value.kind == "end" and text == "" then
    text = "done"
  end
  if type(value.percentage) == "number" and value.kind ~= "end" then
    text = ("%s (%d%%)"):format(text, math.floor(value.percentage + 0.5))
  end
  return text ~= "" and ("gdg-lsp: " .. text) or nil
end

--- Echo a progress value in the message area (no history; cut to fit, so no hit-enter prompt).
function M.echo_progress(value)
  local text = M.progress_message(value)
  if not text then
    return
  end
  M.last_progress = text
  local room = math.max(vim.v.echospace, 10)
  if vim.fn.strdisplaywidth(text) > room then
    text = vim.fn.strcharpart(text, 0, room - 1) .. "…"
  end
  vim.api.nvim_echo({ { text } }, false, {})
end

function M.on_status(payload)
  if type(payload) == "table" then
    M.model = payload
    emit()
  end
end

function M.on_suggestion(payload)
  if type(payload) == "table" then
    M.suggestion = payload
    emit()
  end
end

function M.on_sql_source(bufnr, payload)
  if type(payload) == "table" then
    M.sql_sources[bufnr] = payload
    emit()
  end
end

--- The data source of a SQL buffer for the statusline ("db:billing"), or nil.
function M.sql_source(bufnr)
  local source = M.sql_sources[bufnr or vim.api.nvim_get_current_buf()]
  if type(source) ~= "table" or type(source.label) ~= "string" then
    return nil
  end
  local short = source.label:gsub("^folder ", ""):gsub(" %(gdg%.sql%.sources%[%d+%]%)$", "")
  return "db:" .. short
end

local function total_ms(suggestion)
  local timings = suggestion and suggestion.timingsMs
  if type(timings) == "table" and type(timings.total) == "number" then
    return timings.total
  end
  return nil
end

--- A short line: "gdg loading…", "gdg ready 812ms gamma", "gdg failed", "gdg snoozed 14m".
function M.statusline()
  local snoozed = gate.snoozed()
  if snoozed then
    return ("gdg snoozed %dm"):format(math.ceil(snoozed))
  end
  local state = M.model.state or "idle"
  if state == "loading" then
    local pct = M.model.percentage
    if type(pct) == "number" then
      return ("gdg loading %d%%…"):format(math.floor(pct + 0.5))
    end
    return "gdg loading…"
  elseif state == "failed" then
    return "gdg failed"
  elseif state ~= "ready" then
    return "gdg " .. state
  end
  local s = M.suggestion
  local source = M.sql_source()
  if not s then
    return "gdg ready" .. (source and (" " .. source) or "")
  end
  local parts = { "gdg" }
  local ms = total_ms(s)
  if ms then
    table.insert(parts, ("%dms"):format(math.floor(ms + 0.5)))
  end
  if s.rung and s.rung ~= vim.NIL then
    table.insert(parts, tostring(s.rung) .. (s.guaranteed == true and "✓" or ""))
  end
  if source then
    table.insert(parts, source)
  end
  return table.concat(parts, " ")
end

--- Several lines for :GdgStatus.
function M.describe()
  local m = M.model
  local lines = { ("model: %s"):format(m.state or "idle") }
  if m.message and m.message ~= vim.NIL and m.message ~= "" then
    lines[1] = lines[1] .. " — " .. m.message
  end
  if m.model and m.model ~= vim.NIL then
    table.insert(lines, ("  %s on %s%s"):format(m.model, tostring(m.device),
      type(m.loadMs) == "number" and (", loaded in %d ms"):format(m.loadMs) or ""))
  end
  local snoozed = gate.snoozed()
  if snoozed then
    table.insert(lines, ("snoozed: no suggestion asked for by itself for %d more minutes (:GdgLsp resume)"):format(
      math.ceil(snoozed)))
  end
  local s = M.suggestion
  if s then
    table.insert(lines, ("last suggestion: %s tokens, rung %s%s, stop %s, %s ms"):format(
      tostring(s.tokens), tostring(s.rung), s.guaranteed == true and " (guaranteed)" or "",
      tostring(s.stopReason), tostring(total_ms(s) or "?")))
  end
  return lines
end

return M
