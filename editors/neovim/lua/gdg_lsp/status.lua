-- The server's state as the editor last heard it: gdg/status (model loading)
-- and gdg/suggestion (after each inline request). `statusline()` is for the
-- user's statusline; `:GdgStatus` prints `describe()`.

local gate = require("gdg_lsp.gate")

local M = {
  model = { state = "idle" }, -- last gdg/status payload
  suggestion = nil, -- last gdg/suggestion payload
  by_uri = {}, -- document uri -> its last gdg/suggestion payload
  sql_sources = {}, -- bufnr -> last gdg/sqlSource payload (SQL buffers)
}

--- A payload's string field, nil for JSON null or "".
local function text_of(value)
  return type(value) == "string" and value ~= "" and value or nil
end

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

--- Echo a line in the message area, without history and cut to the room it has (a longer
--- line would ask for hit-enter).
local function echo_fit(text)
  local room = math.max(vim.v.echospace, 10)
  if vim.fn.strdisplaywidth(text) > room then
    text = vim.fn.strcharpart(text, 0, room - 1) .. "…"
  end
  vim.api.nvim_echo({ { text } }, false, {})
end

--- Echo a progress value in the message area (no history; cut to fit, so no hit-enter prompt).
function M.echo_progress(value)
  local text = M.progress_message(value)
  if not text then
    return
  end
  M.last_progress = text
  echo_fit(text)
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
    if type(payload.uri) == "string" then
      M.by_uri[payload.uri] = payload
    end
    emit()
  end
end

--- The last gdg/suggestion payload of a buffer's document, or nil.
function M.suggestion_for(bufnr)
  return M.by_uri[vim.uri_from_bufnr(bufnr)]
end

function M.forget(bufnr)
  M.by_uri[vim.uri_from_bufnr(bufnr)] = nil
  M.sql_sources[bufnr] = nil
end

--- The guarantee of the served item `id` in a payload: { guaranteed = bool, why = reason or nil },
--- or nil when the payload does not name it. Each candidate carries its own label (alternatives too).
function M.guarantee_of(payload, id)
  if type(payload) ~= "table" or id == nil then
    return nil
  end
  for _, candidate in ipairs(type(payload.candidates) == "table" and payload.candidates or {}) do
    if candidate.id == id then
      local ok = candidate.guaranteed ~= false
      return { guaranteed = ok, why = not ok and (text_of(candidate.notGuaranteedBecause)
        or text_of(payload.notGuaranteedBecause) or "its names are not all drawn from Γ") or nil }
    end
  end
  if payload.id == id then
    local ok = payload.guaranteed ~= false
    return { guaranteed = ok, why = not ok and (text_of(payload.notGuaranteedBecause)
      or "its names are not all drawn from Γ") or nil }
  end
  return nil
end

--- How the search for alternatives went ({ wanted, found, cut, pending }) when more than one was
--- asked for (gdg.candidates), else nil.
function M.alternatives_of(payload)
  local alts = type(payload) == "table" and payload.alternatives
  if type(alts) ~= "table" or type(alts.wanted) ~= "number" or alts.wanted <= 1 then
    return nil
  end
  return { wanted = alts.wanted, found = tonumber(alts.found) or 0, cut = text_of(alts.cut),
    pending = alts.pending == true, stale = alts.stale == true }
end

--- What the alternatives' cut means, in a line ("2 of 3 suggestions: the others were cut by time").
function M.cut_message(alts)
  local why = ({ time = "by the time budget (gdg.timeoutMs)", cancelled = "by a newer request",
    attempts = "because the model gave no other distinct one" })[alts.cut] or alts.cut
  return ("gdg-lsp: %d of %d suggestions here: the others were cut %s"):format(alts.found, alts.wanted, why)
end

--- A message in the message area now (no history, cut to fit); kept as `last_notice` for tests.
function M.notice(text)
  M.last_notice = text
  echo_fit(text)
end

local function counts_line(c)
  local function n(v)
    return type(v) == "number" and v or 0
  end
  local retained = ""
  if n(c.charsChecked2m) > 0 then
    retained = (", %d%% still there after 2 min"):format(math.floor(100 * n(c.charsRetained2m) / n(c.charsChecked2m) + 0.5))
  end
  return ("%d shown, %d accepted, %d partly, %d dismissed; %d characters accepted%s"):format(
    n(c.shown), n(c.accepted), n(c.partiallyAccepted), n(c.dismissed), n(c.charsAccepted), retained)
end

--- Lines on what happened to the suggestions shown (gdg/status `acceptance`, counted by the server
--- and kept in your state folder, never sent anywhere).
function M.acceptance_lines(acceptance)
  if type(acceptance) ~= "table" then
    return { "suggestion statistics: the server sent none" }
  end
  if acceptance.enabled == false then
    return { "suggestion statistics are off (gdg.stats.enabled)" }
  end
  local lines = {}
  local total = type(acceptance.total) == "table" and acceptance.total or {}
  if type(total.all) == "table" then
    table.insert(lines, "all: " .. counts_line(total.all))
  end
  if type(acceptance.session) == "table" and type(acceptance.session.all) == "table" then
    table.insert(lines, "this session: " .. counts_line(acceptance.session.all))
  end
  for _, row in ipairs(type(total.rows) == "table" and total.rows or {}) do
    table.insert(lines, ("  %s · %s: %s"):format(tostring(row.language), tostring(row.model), counts_line(row)))
  end
  if #lines == 0 then
    table.insert(lines, "no suggestion shown yet")
  end
  if text_of(acceptance.problem) then
    table.insert(lines, "store: " .. acceptance.problem)
  end
  return lines
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
    local unguaranteed = s.guaranteed == false and text_of(s.text)
    table.insert(parts, tostring(s.rung) .. (s.guaranteed == true and "✓" or unguaranteed and "⚠" or ""))
  end
  local alts = M.alternatives_of(s)
  if alts and (alts.pending or alts.cut) then
    table.insert(parts, alts.pending and ("%d/%d…"):format(alts.found, alts.wanted)
      or ("%d/%d cut"):format(alts.found, alts.wanted))
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
    if s.guaranteed == false and text_of(s.text) and text_of(s.notGuaranteedBecause) then
      table.insert(lines, "  not guaranteed: " .. s.notGuaranteedBecause)
    end
    local alts = M.alternatives_of(s)
    if alts then
      table.insert(lines, ("  alternatives: %d of %d%s"):format(alts.found, alts.wanted,
        alts.pending and ", the others being decoded" or alts.cut and (", cut (" .. alts.cut .. ")") or ""))
    end
  end
  return lines
end

return M
