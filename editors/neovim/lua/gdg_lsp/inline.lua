-- Inline suggestions (ghost text) in insert mode.
--
-- Neovim 0.12 has vim.lsp.inline_completion: there the plugin only enables it and maps the keys.
-- Neovim 0.11 has no inline-completion client, so the plugin sends textDocument/inlineCompletion
-- itself (debounced, the older request cancelled) and draws the items (gdg_lsp.ghost).
--
-- The ghost stays while you type what it shows: each edit draws the rest again in the same
-- TextChangedI, before Neovim draws the frame (no clear, no request, no wait), keeps the
-- alternatives the typed text still continues, and after the debounce asks the server, whose
-- answer (from the suggestion shown: no decode) replaces the drawing in place. A word, a line or
-- all of it is accepted with nvim_buf_set_text, and the server hears what was drawn and taken
-- (gdg_lsp.feedback).
--
-- A suggestion shown without the guarantee that every name it references exists (its
-- candidate's `guaranteed` in gdg/suggestion) gets a marker at the end of its line
-- (GdgGhostUnguaranteed), and :GdgLsp why says why. With gdg.candidates above 1 the server
-- answers the first at once and decodes the others after it: the cycle keys ask again
-- (explicitly) while they are on their way, and the answer holds them all.

local config = require("gdg_lsp.config")
local feedback = require("gdg_lsp.feedback")
local gate = require("gdg_lsp.gate")
local ghost = require("gdg_lsp.ghost")
local keys = require("gdg_lsp.keys")
local remainder = require("gdg_lsp.remainder")
local status = require("gdg_lsp.status")

local M = {}

local api = vim.api

local TRIGGER_INVOKED, TRIGGER_AUTOMATIC = 1, 2

---@type table<integer, table> per buffer: items, index, extmark, mark, shown, reported, timer, request, last
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
  -- 0.12's client asks after every change by itself: asking only on a key is the plugin's
  return inline_opts.trigger ~= "manual" and M.native_available()
end

local function automatic()
  return opts.trigger ~= "manual"
end

local function state_for(bufnr)
  local state = states[bufnr]
  if not state then
    state = { items = {}, index = 0, reported = {} }
    states[bufnr] = state
  end
  return state
end

local function client_for(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = config.name })[1]
end

local function cursor0(win)
  local pos = api.nvim_win_get_cursor(win)
  return { pos[1] - 1, pos[2] }
end

local function in_insert_mode()
  return vim.startswith(api.nvim_get_mode().mode, "i")
end

local function menu_visible()
  return vim.fn.pumvisible() == 1
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

-- Hide the ghost; its items stay (the popup menu hides it for a while).
local function clear(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  if api.nvim_buf_is_valid(bufnr) then
    if state.extmark then
      ghost.remove(bufnr, state.extmark)
    end
    if state.mark then
      ghost.unmark(bufnr, state.mark)
    end
  end
  state.extmark, state.mark = nil, nil
  state.shown = nil
end

-- The marker beside the ghost of `item` drawn at `row` when it carries no guarantee; the last
-- item drawn is kept for :GdgLsp why (asked after the ghost went, when leaving insert mode).
local function mark(bufnr, state, item, row)
  local label = status.guarantee_of(status.suggestion_for(bufnr), item.id)
  state.last = { id = item.id, text = item.text, label = label }
  if label and not label.guaranteed then
    state.mark = ghost.mark(bufnr, state.mark, row)
  elseif state.mark then
    ghost.unmark(bufnr, state.mark)
    state.mark = nil
  end
end

-- Hide the ghost and forget its items: the next drawing of an item is a new showing.
local function forget(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  clear(bufnr)
  state.items, state.index, state.reported = {}, 0, {}
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
  forget(bufnr)
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

-- InlineCompletionItem[] -> remainder items in bytes, each with the item as served (raw) and its id.
local function to_items(bufnr, result, encoding, cursor)
  local raw_items = result and (result.items or result) or {}
  local items = {}
  for _, raw in ipairs(raw_items) do
    local text = raw.insertText
    if type(text) == "table" then
      text = text.value -- a snippet: shown and inserted as its text
    end
    if type(text) == "string" and text ~= "" then
      local srow, scol, erow, ecol = cursor[1], cursor[2], cursor[1], cursor[2]
      if raw.range then
        srow = raw.range.start.line
        scol = byte_col(bufnr, srow, raw.range.start.character, encoding)
        erow = raw.range["end"].line
        ecol = byte_col(bufnr, erow, raw.range["end"].character, encoding)
      end
      local item = remainder.item(text, srow, scol, erow, ecol)
      item.raw, item.id = raw, feedback.id(raw)
      table.insert(items, item)
    end
  end
  return items
end

-- Draw item `index`'s rest at the cursor, in place of the ghost drawn before; false (and no
-- ghost) when the typed text does not continue it, or the popup menu is up.
local function show(bufnr, index)
  local state = state_for(bufnr)
  local item = state.items[index]
  if not item or api.nvim_get_current_buf() ~= bufnr or menu_visible() then
    clear(bufnr)
    return false
  end
  local cursor = cursor0(0)
  local rest = remainder.rest(bufnr, item, cursor)
  if not rest then
    clear(bufnr)
    return false
  end
  local shown = state.shown
  if not (state.extmark and shown and shown.ghost == rest and shown.row == cursor[1] and shown.col == cursor[2]) then
    state.extmark = ghost.draw(bufnr, state.extmark, cursor[1], cursor[2], rest, opts.hl_group)
  end
  mark(bufnr, state, item, cursor[1])
  state.index = index
  state.shown = { row = cursor[1], col = cursor[2], tick = api.nvim_buf_get_changedtick(bufnr), ghost = rest }
  -- told once per item and showing: a typed-through rest is the same item
  local key = item.id or item.raw
  local client = client_for(bufnr)
  if client and not state.reported[key] then
    state.reported[key] = true
    feedback.shown(client, item.raw)
  end
  return true
end

-- Show `first`, else the first other item that continues the typed text.
local function show_some(bufnr, first)
  if show(bufnr, first) then
    return true
  end
  for index = 1, #states[bufnr].items do
    if index ~= first and show(bufnr, index) then
      return true
    end
  end
  return false
end

--- Ask the server for a suggestion at the cursor (the plugin's own client). The ghost shown
--- stays until the answer replaces it. `step`: the answer's item that many after the one shown
--- is drawn (cycling into alternatives that were not there yet).
function M.request(bufnr, trigger_kind, step)
  bufnr = bufnr or api.nvim_get_current_buf()
  trigger_kind = trigger_kind or TRIGGER_AUTOMATIC
  if M.uses_native() then
    vim.lsp.inline_completion.get({ bufnr = bufnr })
    return
  end
  local client = client_for(bufnr)
  if not client or api.nvim_get_current_buf() ~= bufnr or not gate.allows(bufnr, trigger_kind == TRIGGER_INVOKED) then
    return
  end
  local state = state_for(bufnr)
  cancel_request(state)
  local win = api.nvim_get_current_win()
  local params = vim.lsp.util.make_position_params(win, client.offset_encoding)
  params.context = { triggerKind = trigger_kind }
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
    if now[1] ~= at[1] or now[2] ~= at[2] or not in_insert_mode() then
      return
    end
    -- the server's answer is the truth; the item shown keeps its place when it is still in it
    local current = state.items[state.index]
    state.items = to_items(bufnr, result, client.offset_encoding, at)
    local first = 1
    for index, item in ipairs(state.items) do
      if current and current.id and item.id == current.id then
        first = index
        break
      end
    end
    local n = #state.items
    if step and n > 1 and show(bufnr, (first - 1 + step) % n + 1) then
      return
    end
    show_some(bufnr, first)
  end, bufnr)
  if ok then
    req.id = id
    state.request = req
  end
end

local function schedule_request(bufnr)
  if not automatic() or not gate.allows(bufnr, false) then
    return
  end
  local state = state_for(bufnr)
  if not state.timer then
    state.timer = vim.uv.new_timer()
  end
  state.timer:stop()
  state.timer:start(opts.debounce_ms, 0, vim.schedule_wrap(function()
    if api.nvim_buf_is_valid(bufnr) and in_insert_mode() and not menu_visible() then
      M.request(bufnr, TRIGGER_AUTOMATIC)
    end
  end))
end

--- The model has just become ready: ask again at the cursor. An ask made while it loaded
--- was answered empty when its budget ran out first, and nothing else asks before the next key.
function M.ask_again()
  local bufnr = api.nvim_get_current_buf()
  if automatic() and in_insert_mode() and client_for(bufnr) and gate.allows(bufnr, false) then
    M.request(bufnr, TRIGGER_AUTOMATIC)
  end
end

-- After an edit: keep the items the typed text still continues and draw the current one's rest
-- now (the server confirms after the debounce); when none continues, clear and ask after it.
local function on_edit(bufnr)
  local state = state_for(bufnr)
  if menu_visible() then
    clear(bufnr) -- the menu first; CompleteDone comes back here
    return
  end
  local cursor = cursor0(0)
  local current = state.items[state.index]
  local kept, first = {}, 1
  for _, item in ipairs(state.items) do
    if remainder.rest(bufnr, item, cursor) then
      table.insert(kept, item)
      if item == current then
        first = #kept
      end
    end
  end
  state.items = kept
  if not show_some(bufnr, first) then
    forget(bufnr)
  end
  schedule_request(bufnr)
end

-- A character is about to go in at the cursor (InsertCharPre, before Neovim inserts it): when
-- the shown item, or another, continues with it, draw that rest less the character now. The
-- mark sits at the cursor and the character pushes it right, so the frame Neovim draws after the
-- insertion already shows the rest: with regex syntax on, Neovim redraws before CursorMovedI and
-- TextChangedI, and a ghost drawn only there is a frame late (the old rest after the new character).
local function on_char(bufnr, char)
  local state = states[bufnr]
  if not state or not state.extmark or menu_visible() or char == "" then
    return
  end
  local cursor = cursor0(0)
  local order = { state.index }
  for index = 1, #state.items do
    if index ~= state.index then
      table.insert(order, index)
    end
  end
  for _, index in ipairs(order) do
    local item = state.items[index]
    local rest = item and remainder.rest(bufnr, item, cursor)
    if rest and #rest > #char and vim.startswith(rest, char) then
      local after = rest:sub(#char + 1)
      state.extmark = ghost.draw(bufnr, state.extmark, cursor[1], cursor[2], after, opts.hl_group)
      mark(bufnr, state, item, cursor[1])
      state.index = index
      -- where the cursor will be; no tick yet (TextChangedI's show() completes it)
      state.shown = { row = cursor[1], col = cursor[2] + #char, tick = -1, ghost = after }
      return
    end
  end
  clear(bufnr)
end

--- Why the suggestion shown last in a buffer carries no guarantee: a line to show, or nil with
--- none drawn since the plugin started.
function M.why(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local state = states[bufnr]
  local last = state and state.last
  if not last then
    return nil
  end
  local text = last.text:gsub("\n.*", "…")
  if not last.label then
    return ("gdg-lsp: `%s`: the server said nothing of its guarantee"):format(text)
  elseif last.label.guaranteed then
    return ("gdg-lsp: `%s` is guaranteed: every name it references is in scope (Γ)"):format(text)
  end
  return ("gdg-lsp: `%s` is not guaranteed: %s"):format(text, last.label.why)
end

--- A gdg/suggestion came: the marker of the ghost shown follows its label (alternatives decoded
--- after the ghost was drawn carry their own).
function M.on_suggestion(payload)
  local bufnr = api.nvim_get_current_buf()
  local state = states[bufnr]
  if not state or not state.extmark or type(payload) ~= "table" or payload.uri ~= vim.uri_from_bufnr(bufnr) then
    return
  end
  local item = state.items[state.index]
  if item then
    mark(bufnr, state, item, api.nvim_win_get_cursor(0)[1] - 1)
  end
end

--- The ghost text shown in a buffer right now ("" when none), read back from
--- the extmarks — whichever client drew them.
function M.ghost_text(bufnr)
  return ghost.text(bufnr or api.nvim_get_current_buf())
end

function M.visible(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() then
    return #api.nvim_buf_get_extmarks(bufnr, ghost.native_ns, 0, -1, { limit = 1 }) > 0
  end
  local state = states[bufnr]
  return state ~= nil and state.extmark ~= nil and not menu_visible()
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
  local client = client_for(bufnr)
  if client then
    feedback.accepted(client, item.raw, bufnr)
  end
  return true
end

-- Insert the next piece of the shown rest (`piece_of(rest)`) at the cursor and draw what is left
-- at once; the whole rest is a full accept. No request: the next one confirms from the item.
local function accept_piece(bufnr, piece_of)
  bufnr = bufnr or api.nvim_get_current_buf()
  if M.uses_native() or not M.visible(bufnr) then
    return false
  end
  local state = states[bufnr]
  local item = state.items[state.index]
  local cursor = cursor0(0)
  local rest = item and remainder.rest(bufnr, item, cursor)
  if not rest then
    return false
  end
  local piece = piece_of(rest)
  if piece == rest then
    return M.accept(bufnr)
  end
  local lines = vim.split(piece, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, cursor[1], cursor[2], cursor[1], cursor[2], lines)
  item.erow, item.ecol = remainder.after_insert(item.erow, item.ecol, cursor[1], cursor[2], lines)
  local row = cursor[1] + #lines
  local col = (#lines == 1 and cursor[2] or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { row, col })
  show(bufnr, state.index)
  local client = client_for(bufnr)
  if client then
    feedback.partially_accepted(client, item.raw, item.text:sub(1, #item.text - #rest + #piece))
  end
  return true
end

--- Accept the next word of the shown suggestion; the rest stays shown.
function M.accept_word(bufnr)
  return accept_piece(bufnr, remainder.next_word)
end

--- Accept the rest of the suggestion's current line (or, at its end, the next line).
function M.accept_line(bufnr)
  return accept_piece(bufnr, remainder.next_line)
end

-- How the search for the shown suggestion's alternatives went (status.alternatives_of), when the
-- buffer's last gdg/suggestion is about the items held.
local function alternatives(bufnr, state)
  local payload = status.suggestion_for(bufnr)
  for _, item in ipairs(state.items) do
    if item.id and status.guarantee_of(payload, item.id) then
      return status.alternatives_of(payload)
    end
  end
  return nil
end

--- Show the next (count > 0) or previous suggestion of the last answer (no request when it
--- had any left; the first key of an empty one asks, and so does one while the alternatives
--- are being decoded).
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
  local alts = alternatives(bufnr, state)
  if alts and not alts.stale then
    local first = state.items[1] and state.items[1].id
    -- being decoded, or decoded since this answer: an explicit ask waits for them (within its
    -- budget) and is answered with all of them; asked once per suggestion unless still pending
    if alts.pending or (alts.found > n and state.alternatives_asked ~= first) then
      state.alternatives_asked = first
      M.request(bufnr, TRIGGER_INVOKED, count)
      return
    end
    if alts.cut and alts.found < alts.wanted then
      status.notice(status.cut_message(alts))
    end
  end
  local index = state.index
  for _ = 1, n do
    index = (index - 1 + count) % n + 1
    if show(bufnr, index) then
      return
    end
  end
end

local function map_keys(bufnr)
  local lhs_of = opts.keymaps or {}
  local native = M.uses_native()
  local function map(name, can, run, desc)
    local lhs = lhs_of[name]
    if lhs and lhs ~= "" then
      keys.map(bufnr, lhs, can, run, "gdg-lsp: " .. desc)
    end
  end
  local function shown()
    return M.visible(bufnr)
  end
  local function always()
    return true
  end
  map("accept", shown, function()
    M.accept(bufnr)
  end, "accept the suggestion")
  if not native then -- 0.12's client takes an item whole
    map("accept_word", shown, function()
      M.accept_word(bufnr)
    end, "accept the next word of the suggestion")
    map("accept_line", shown, function()
      M.accept_line(bufnr)
    end, "accept the rest of the suggestion's line")
  end
  map("dismiss", shown, function()
    M.dismiss(bufnr)
  end, "dismiss the suggestion")
  map("next", always, function()
    M.cycle(1, bufnr)
  end, "next suggestion")
  map("prev", always, function()
    M.cycle(-1, bufnr)
  end, "previous suggestion")
  if not native then
    map("request", always, function()
      M.request(bufnr, TRIGGER_INVOKED)
    end, "ask for a suggestion")
  end
end

local attached = {} -- bufnr -> true, for the snooze and per-language switches of 0.12's client

local function native_enable(bufnr)
  local on = gate.allows(bufnr, false)
  pcall(vim.lsp.inline_completion.enable, on, { bufnr = bufnr })
end

--- Turn inline suggestions on for a buffer the gdg_lsp client attached to.
function M.attach(bufnr)
  if not opts.enabled or vim.b[bufnr].gdg_inline_attached then
    return
  end
  vim.b[bufnr].gdg_inline_attached = true
  attached[bufnr] = true
  map_keys(bufnr)
  if M.uses_native() then
    native_enable(bufnr)
    return
  end
  local group = api.nvim_create_augroup("gdg_lsp_inline_" .. bufnr, { clear = true })
  local function on(events, callback)
    api.nvim_create_autocmd(events, { group = group, buffer = bufnr, callback = callback })
  end
  on("InsertEnter", function()
    schedule_request(bufnr)
  end)
  on("InsertCharPre", function()
    on_char(bufnr, vim.v.char)
  end)
  on("TextChangedI", function()
    on_edit(bufnr)
  end)
  on({ "TextChangedP", "CompleteChanged" }, function()
    clear(bufnr) -- no ghost over the popup menu
  end)
  on("CompleteDone", function()
    vim.schedule(function()
      if api.nvim_buf_is_valid(bufnr) and api.nvim_get_current_buf() == bufnr and in_insert_mode() then
        on_edit(bufnr)
      end
    end)
  end)
  on("CursorMovedI", function()
    -- a moved cursor with the text unchanged (an edit is TextChangedI's)
    local shown = states[bufnr] and states[bufnr].shown
    if shown and api.nvim_buf_get_changedtick(bufnr) == shown.tick then
      local c = cursor0(0)
      if c[1] ~= shown.row or c[2] ~= shown.col then
        M.dismiss(bufnr)
      end
    end
  end)
  on({ "InsertLeave", "BufLeave" }, function()
    M.dismiss(bufnr)
  end)
  on("BufWipeout", function()
    local state = states[bufnr]
    if state and state.timer then
      state.timer:stop()
      state.timer:close()
    end
    states[bufnr], attached[bufnr] = nil, nil
    status.forget(bufnr)
  end)
end

function M.detach(bufnr)
  if not vim.b[bufnr].gdg_inline_attached then
    return
  end
  vim.b[bufnr].gdg_inline_attached = nil
  attached[bufnr] = nil
  M.dismiss(bufnr)
  pcall(api.nvim_del_augroup_by_name, "gdg_lsp_inline_" .. bufnr)
end

-- a snooze started or ended: hide what is shown, and switch 0.12's client
gate.on_change(function()
  for bufnr in pairs(attached) do
    if api.nvim_buf_is_valid(bufnr) then
      if M.uses_native() then
        native_enable(bufnr)
      elseif gate.snoozed() then
        M.dismiss(bufnr)
      end
    end
  end
end)

function M.configure(inline_opts)
  opts = inline_opts
  if opts.native == true and not M.native_available() then
    error("gdg_lsp: inline.native = true needs vim.lsp.inline_completion (Neovim 0.12 or later)")
  end
  if opts.trigger ~= "automatic" and opts.trigger ~= "manual" then
    error(("gdg_lsp: inline.trigger is %q; use \"automatic\" or \"manual\""):format(tostring(opts.trigger)))
  end
  if opts.native == true and opts.trigger == "manual" then
    error("gdg_lsp: inline.trigger = \"manual\" needs the plugin's own client (inline.native = \"auto\" or false)")
  end
  gate.configure(opts)
  if opts.hl_group == ghost.GROUP then
    ghost.define_highlight()
  end
  ghost.define_mark_highlight()
end

return M
