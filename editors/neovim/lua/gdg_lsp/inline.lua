-- Inline suggestions (ghost text) in insert mode.
--
-- Neovim 0.12 has vim.lsp.inline_completion: there the plugin only enables it
-- and maps the keys. Neovim 0.11 has no inline-completion client, so the
-- plugin sends textDocument/inlineCompletion itself (debounced, the older
-- request cancelled), draws the item as virtual text at the cursor, and
-- accepts it with nvim_buf_set_text.

local config = require("gdg_lsp.config")

local M = {}

local api = vim.api
local ns = api.nvim_create_namespace("gdg_lsp.inline")
-- the namespace vim.lsp.inline_completion draws in (0.12): same name, same id
local native_ns = api.nvim_create_namespace("nvim.lsp.inline_completion")

local TRIGGER_INVOKED, TRIGGER_AUTOMATIC = 1, 2

---@type table<integer, table> per buffer: items, index, extmark, timer, request
local states = {}
local opts = config.merge({}).inline

function M.native_available()
  return type(vim.lsp.inline_completion) == "table" and type(vim.lsp.inline_completion.enable) == "function"
end

--- Whether a buffer uses Neovim's own inline completion (else the plugin's).
function M.uses_native(inline_opts)
  inline_opts = inline_opts or opts
  if inline_opts.native == true then
    return true
  elseif inline_opts.native == false then
    return false
  end
  return M.native_available()
end

local function state_for(bufnr)
  local state = states[bufnr]
  if not state then
    state = { items = {}, index = 0 }
    states[bufnr] = state
  end
  return state
end

local function client_for(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = config.name })[1]
end

local function cancel_request(state)
  local req = state.request
  state.request = nil
  if req and req.client and not req.client:is_stopped() then
    pcall(function()
      req.client:cancel_request(req.id)
    end)
  end
end

local function clear(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  if state.extmark and api.nvim_buf_is_valid(bufnr) then
    pcall(api.nvim_buf_del_extmark, bufnr, ns, state.extmark)
  end
  state.extmark = nil
  state.shown = nil
end

--- Hide the suggestion and forget it (and stop a request in flight).
function M.dismiss(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() then
    -- 0.12 has no dismiss call: disabling and enabling clears its state
    pcall(vim.lsp.inline_completion.enable, false, { bufnr = bufnr })
    pcall(vim.lsp.inline_completion.enable, true, { bufnr = bufnr })
    return
  end
  local state = states[bufnr]
  if not state then
    return
  end
  cancel_request(state)
  if state.timer then
    state.timer:stop()
  end
  clear(bufnr)
  state.items, state.index = {}, 0
end

-- LSP position -> byte column in the buffer line (the client's encoding).
local function byte_col(bufnr, row, character, encoding)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  if not ok or type(col) ~= "number" then
    return math.min(character, #line)
  end
  return col
end

-- InlineCompletionItem[] -> { text, srow, scol, erow, ecol } in bytes.
local function to_items(bufnr, result, encoding, cursor)
  local raw = result and (result.items or result) or {}
  local items = {}
  for _, item in ipairs(raw) do
    local text = item.insertText
    if type(text) == "table" then
      text = text.value -- a snippet: shown and inserted as its text
    end
    if type(text) == "string" and text ~= "" then
      local srow, scol, erow, ecol = cursor[1], cursor[2], cursor[1], cursor[2]
      if item.range then
        srow = item.range.start.line
        scol = byte_col(bufnr, srow, item.range.start.character, encoding)
        erow = item.range["end"].line
        ecol = byte_col(bufnr, erow, item.range["end"].character, encoding)
      end
      table.insert(items, { text = text, srow = srow, scol = scol, erow = erow, ecol = ecol })
    end
  end
  return items
end

-- The part of an item still to be typed at the cursor, or nil when the item
-- does not continue what is already in the buffer.
local function remaining(bufnr, item, cursor)
  local row, col = cursor[1], cursor[2]
  if item.srow ~= row or item.scol > col then
    return nil
  end
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local typed = line:sub(item.scol + 1, col)
  if item.text:sub(1, #typed) ~= typed then
    return nil
  end
  local rest = item.text:sub(#typed + 1)
  return rest ~= "" and rest or nil
end

local function cursor0(win)
  local pos = api.nvim_win_get_cursor(win)
  return { pos[1] - 1, pos[2] }
end

local function show(bufnr, index)
  local state = state_for(bufnr)
  clear(bufnr)
  local item = state.items[index]
  if not item or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local cursor = cursor0(0)
  local ghost = remaining(bufnr, item, cursor)
  if not ghost then
    return false
  end
  local lines = vim.split(ghost, "\n", { plain = true })
  local hl = opts.hl_group
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { lines[i], hl } })
  end
  local mark = {
    virt_text = { { lines[1], hl } },
    virt_text_pos = "inline",
    hl_mode = "combine",
  }
  if #virt_lines > 0 then
    mark.virt_lines = virt_lines
  end
  state.extmark = api.nvim_buf_set_extmark(bufnr, ns, cursor[1], cursor[2], mark)
  state.index = index
  state.shown = { row = cursor[1], col = cursor[2], tick = api.nvim_buf_get_changedtick(bufnr), ghost = ghost }
  return true
end

--- Ask the server for a suggestion at the cursor (the plugin's own client).
function M.request(bufnr, trigger_kind)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() then
    vim.lsp.inline_completion.get({ bufnr = bufnr })
    return
  end
  local client = client_for(bufnr)
  if not client or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local state = state_for(bufnr)
  cancel_request(state)
  clear(bufnr)
  local win = api.nvim_get_current_win()
  local params = vim.lsp.util.make_position_params(win, client.offset_encoding)
  params.context = { triggerKind = trigger_kind or TRIGGER_AUTOMATIC }
  local tick = api.nvim_buf_get_changedtick(bufnr)
  local at = cursor0(win)
  local req = { client = client }
  local ok, id = client:request("textDocument/inlineCompletion", params, function(err, result)
    if state.request ~= req then
      return -- a newer request replaced this one
    end
    state.request = nil
    if err or not api.nvim_buf_is_valid(bufnr) then
      return
    end
    -- only a suggestion for exactly this text and cursor is worth showing
    if api.nvim_buf_get_changedtick(bufnr) ~= tick or api.nvim_get_current_buf() ~= bufnr then
      return
    end
    local now = cursor0(0)
    if now[1] ~= at[1] or now[2] ~= at[2] or not vim.startswith(api.nvim_get_mode().mode, "i") then
      return
    end
    state.items = to_items(bufnr, result, client.offset_encoding, at)
    for index = 1, #state.items do
      if show(bufnr, index) then
        return
      end
    end
  end, bufnr)
  if ok then
    req.id = id
    state.request = req
  end
end

--- The model has just become ready: ask again at the cursor. An ask made while it loaded
--- was answered empty when its budget ran out first, and nothing else asks before the next key.
function M.ask_again()
  local bufnr = api.nvim_get_current_buf()
  if vim.startswith(api.nvim_get_mode().mode, "i") and client_for(bufnr) then
    M.request(bufnr, TRIGGER_AUTOMATIC)
  end
end

local function schedule_request(bufnr)
  local state = state_for(bufnr)
  clear(bufnr)
  if not state.timer then
    state.timer = vim.uv.new_timer()
  end
  state.timer:stop()
  state.timer:start(opts.debounce_ms, 0, vim.schedule_wrap(function()
    if api.nvim_buf_is_valid(bufnr) and vim.startswith(api.nvim_get_mode().mode, "i") then
      M.request(bufnr, TRIGGER_AUTOMATIC)
    end
  end))
end

--- The ghost text shown in a buffer right now ("" when none), read back from
--- the extmarks — whichever client drew them.
function M.ghost_text(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  for _, space in ipairs({ ns, native_ns }) do
    local marks = api.nvim_buf_get_extmarks(bufnr, space, 0, -1, { details = true })
    for _, mark in ipairs(marks) do
      local details = mark[4] or {}
      local parts = {}
      for _, chunk in ipairs(details.virt_text or {}) do
        if chunk[2] ~= "ComplHintMore" then -- 0.12's "(1/2)" counter
          table.insert(parts, chunk[1])
        end
      end
      for _, line in ipairs(details.virt_lines or {}) do
        local text = {}
        for _, chunk in ipairs(line) do
          table.insert(text, chunk[1])
        end
        table.insert(parts, "\n" .. table.concat(text))
      end
      local text = table.concat(parts)
      if text ~= "" then
        return text
      end
    end
  end
  return ""
end

function M.visible(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() then
    return #api.nvim_buf_get_extmarks(bufnr, native_ns, 0, -1, { limit = 1 }) > 0
  end
  local state = states[bufnr]
  return state ~= nil and state.extmark ~= nil
end

--- Insert the shown suggestion. Returns false when none is shown.
function M.accept(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if not M.visible(bufnr) then
    return false
  end
  if M.uses_native() then
    vim.lsp.inline_completion.get({ bufnr = bufnr })
    return true
  end
  local state = states[bufnr]
  local item = state.items[state.index]
  local cursor = cursor0(0)
  M.dismiss(bufnr)
  if not item then
    return false
  end
  -- replace the item's range (at least up to the cursor) with its text
  local erow, ecol = item.erow, item.ecol
  if erow < cursor[1] or (erow == cursor[1] and ecol < cursor[2]) then
    erow, ecol = cursor[1], cursor[2]
  end
  local lines = vim.split(item.text, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, item.srow, item.scol, erow, ecol, lines)
  local row = item.srow + #lines
  local col = (#lines == 1 and item.scol or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { row, col })
  return true
end

--- Show the next (count > 0) or previous suggestion of the last answer.
function M.cycle(count, bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() then
    local ic = vim.lsp.inline_completion
    local select = ic.select or ic.jump
    if select then
      select({ bufnr = bufnr, count = count })
    end
    return
  end
  local state = states[bufnr]
  local n = state and #state.items or 0
  if n == 0 then
    M.request(bufnr, TRIGGER_INVOKED)
    return
  end
  local index = state.index
  for _ = 1, n do
    index = (index - 1 + count) % n + 1
    if show(bufnr, index) then
      return
    end
  end
end

local function feed(key)
  api.nvim_feedkeys(vim.keycode(key), "n", false)
end

local function map_keys(bufnr)
  local keys = opts.keymaps or {}
  local function map(name, fn, desc)
    local lhs = keys[name]
    if lhs and lhs ~= "" then
      vim.keymap.set("i", lhs, fn, { buffer = bufnr, desc = desc, silent = true })
    end
  end
  map("accept", function()
    if not M.accept(bufnr) then
      feed(keys.accept)
    end
  end, "gdg-lsp: accept the suggestion")
  map("dismiss", function()
    if M.visible(bufnr) then
      M.dismiss(bufnr)
    else
      feed(keys.dismiss)
    end
  end, "gdg-lsp: dismiss the suggestion")
  map("next", function()
    M.cycle(1, bufnr)
  end, "gdg-lsp: next suggestion")
  map("prev", function()
    M.cycle(-1, bufnr)
  end, "gdg-lsp: previous suggestion")
  if not M.uses_native() then
    map("request", function()
      M.request(bufnr, TRIGGER_INVOKED)
    end, "gdg-lsp: ask for a suggestion")
  end
end

--- Turn inline suggestions on for a buffer the gdg_lsp client attached to.
function M.attach(bufnr)
  if not opts.enabled or vim.b[bufnr].gdg_inline_attached then
    return
  end
  vim.b[bufnr].gdg_inline_attached = true
  map_keys(bufnr)
  if M.uses_native() then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
    return
  end
  local group = api.nvim_create_augroup("gdg_lsp_inline_" .. bufnr, { clear = true })
  api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "TextChangedP" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      schedule_request(bufnr)
    end,
  })
  api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      local state = states[bufnr]
      local shown = state and state.shown
      if shown then
        local c = cursor0(0)
        if c[1] ~= shown.row or c[2] ~= shown.col or api.nvim_buf_get_changedtick(bufnr) ~= shown.tick then
          clear(bufnr)
        end
      end
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    callback = function()
      local state = states[bufnr]
      if state and state.timer then
        state.timer:stop()
        state.timer:close()
      end
      states[bufnr] = nil
    end,
  })
end

function M.detach(bufnr)
  if not vim.b[bufnr].gdg_inline_attached then
    return
  end
  vim.b[bufnr].gdg_inline_attached = nil
  M.dismiss(bufnr)
  pcall(api.nvim_del_augroup_by_name, "gdg_lsp_inline_" .. bufnr)
end

function M.configure(inline_opts)
  opts = inline_opts
  if opts.native == true and not M.native_available() then
    error("gdg_lsp: inline.native = true needs vim.lsp.inline_completion (Neovim 0.12 or later)")
  end
  if opts.hl_group == "GdgGhostText" then
    api.nvim_set_hl(0, "GdgGhostText", { link = "Comment", default = true })
  end
end

return M
