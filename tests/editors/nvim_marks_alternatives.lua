-- What the server says of a suggestion, shown (issues 29 item 4, 30 items 3-4, 31 items 2 and 4):
-- a ghost without the guarantee gets a marker at the end of its line (GdgGhostUnguaranteed, a
-- default link), kept while typed through, never part of the ghost's text, and :GdgLsp why says
-- the server's reason (notGuaranteedBecause); a guaranteed one has none. :GdgLsp stats and
-- :checkhealth print gdg/status's acceptance. Alternatives: while the server says they are being
-- decoded (alternatives.pending), the cycle key asks again, explicitly, and draws the next of the
-- answer, which holds them all, each marked by its own label; when they were cut, cycling says so
-- and the statusline shows it.
--
-- Environment: GDG_PLUGIN, GDG_RESULT.

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item

local DEBOUNCE_MS = 20
require("gdg_lsp").setup({ cmd = fake.server, inline = { native = false, debounce_ms = DEBOUNCE_MS } })
local inline = require("gdg_lsp.inline")
local ghost_mod = require("gdg_lsp.ghost")
local status = require("gdg_lsp.status")

local notes = {}
vim.notify = function(msg)
  table.insert(notes, msg)
end

local REASON = "rung base: its names are not drawn from Γ; the diagnostics find no name in it that does not exist"
local UNSURE = "return undefined_thing_statistics"

-- one served item per entry: { text, id, guaranteed }; `alternatives` as the server sends it
local function answer(params, entries, alternatives)
  local line, col = params.position.line, params.position.character
  local items, candidates = {}, {}
  for _, e in ipairs(entries) do
    table.insert(items, item(e[1], line, 0, col, e[2]))
    table.insert(candidates, { id = e[2], text = e[1], guaranteed = e[3],
      notGuaranteedBecause = e[3] and vim.NIL or (e[4] or REASON) })
  end
  local first = entries[1]
  fake.tell("gdg/suggestion", { uri = params.textDocument.uri, id = first[2], text = first[1], rung = first[3] and "gamma" or "base",
    guaranteed = first[3], notGuaranteedBecause = first[3] and vim.NIL or REASON, candidates = candidates,
    alternatives = alternatives or { wanted = 1, found = #entries, cut = vim.NIL, pending = false } })
  return { items = items }
end

local phase = "unsure"
fake.responder = function(params, line)
  if phase == "unsure" and vim.startswith(UNSURE, line) then
    return answer(params, { { UNSURE, "u1", false } }), 0
  elseif phase == "sure" and vim.startswith("total = 1", line) then
    return answer(params, { { "total = 1", "g1", true } }), 0
  elseif phase == "pending" and line == "" then
    if params.context.triggerKind == 1 then -- the explicit ask: the server waited for the others
      return answer(params, { { "alpha_one", "a1", true }, { "alpha_two", "a2", true }, { "alpha_three", "a3", false } },
        { wanted = 3, found = 3, cut = vim.NIL, pending = false }), 150
    end
    return answer(params, { { "alpha_one", "a1", true } }, { wanted = 3, found = 1, cut = vim.NIL, pending = true }), 0
  elseif phase == "cut" and line == "" then
    return answer(params, { { "beta_one", "b1", true }, { "beta_two", "b2", true } },
      { wanted = 3, found = 2, cut = "time", pending = false }), 0
  end
  return { items = {} }, 0
end

fake.status_result = { state = "ready", acceptance = { enabled = true,
  session = { all = { shown = 2, accepted = 1 } },
  total = { all = { shown = 3, accepted = 1, partiallyAccepted = 1, dismissed = 1, charsAccepted = 12,
    charsChecked2m = 10, charsRetained2m = 9 },
    rows = { { language = "python", model = "smollm2-135m", shown = 3, accepted = 1, partiallyAccepted = 1,
      dismissed = 1, charsAccepted = 12, charsChecked2m = 10, charsRetained2m = 9 } } } } }

local function ghost()
  return inline.ghost_text(fake.buf)
end
local function marked()
  return ghost_mod.marked(fake.buf)
end
local function last_note()
  return notes[#notes] or ""
end
local WAIT = DEBOUNCE_MS * 8
local before

fake.run({
  fake.open_step({ "x = 1" }),
  { name = "ready", action = function()
      fake.tell("gdg/status", { state = "ready", message = "ready" })
      vim.api.nvim_input("Go")
    end, ["until"] = function()
      return ghost() == UNSURE
    end },
  { name = "marked", action = function()
      local m = marked() or {}
      check("a marker beside the unguaranteed ghost", { m.row, m.text, m.hl }, { 1, " ⚠ not guaranteed", "GdgGhostUnguaranteed" })
      check("its highlight is a default link", vim.api.nvim_get_hl(0, { name = "GdgGhostUnguaranteed" }).link, "DiagnosticWarn")
      check("the marker is not the ghost's text", ghost(), UNSURE)
      vim.cmd("GdgLsp why")
      check("why: the server's reason", last_note(), "gdg-lsp: `" .. UNSURE .. "` is not guaranteed: " .. REASON)
      check("the statusline says it", require("gdg_lsp").statusline():find("base⚠", 1, true) ~= nil, true)
      vim.api.nvim_input("r")
    end, ["until"] = function()
      return ghost() == UNSURE:sub(2)
    end, settle = WAIT },
  { name = "typed through", action = function()
      check("the marker stays while typed through", (marked() or {}).row, 1)
      phase = "sure"
      vim.api.nvim_input("<Esc>o")
    end, ["until"] = function()
      return ghost() == "total = 1"
    end, settle = WAIT },
  { name = "guaranteed", action = function()
      check("no marker on a guaranteed ghost", marked(), nil)
      vim.cmd("GdgLsp why")
      check("why: guaranteed", last_note(), "gdg-lsp: `total = 1` is guaranteed: every name it references is in scope (Γ)")
      vim.api.nvim_input("<Esc>")
    end, settle = WAIT },
  { name = "why after leaving insert mode", action = function()
      check("no marker once dismissed", marked(), nil)
      vim.cmd("GdgLsp why") -- the last one shown, though gone
      check("why of the last shown", last_note():find("`total = 1` is guaranteed", 1, true) ~= nil, true)
      vim.cmd("GdgLsp stats")
    end, ["until"] = function()
      return last_note():find("suggestions shown", 1, true) ~= nil
    end },
  { name = "stats", action = function()
      check("stats", vim.split(last_note(), "\n"), {
        "gdg-lsp: suggestions shown",
        "all: 3 shown, 1 accepted, 1 partly, 1 dismissed; 12 characters accepted, 90% still there after 2 min",
        "this session: 2 shown, 1 accepted, 0 partly, 0 dismissed; 0 characters accepted",
        "  python · smollm2-135m: 3 shown, 1 accepted, 1 partly, 1 dismissed; 12 characters accepted, 90% still there after 2 min",
      })
      check("statistics off", status.acceptance_lines({ enabled = false }), { "suggestion statistics are off (gdg.stats.enabled)" })
      local win = vim.api.nvim_get_current_win()
      vim.cmd("checkhealth gdg_lsp")
      local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
      check("checkhealth prints them", report:find("suggestions: all: 3 shown, 1 accepted", 1, true) ~= nil, true)
      if vim.api.nvim_get_current_win() ~= win then
        vim.cmd(#vim.api.nvim_list_tabpages() > 1 and "tabclose" or "close")
      end
      vim.api.nvim_set_current_win(win)
      phase = "pending"
      vim.api.nvim_input("o")
    end, ["until"] = function()
      return ghost() == "alpha_one"
    end, settle = WAIT },
  { name = "pending: the cycle key asks", action = function()
      before = #result.requests
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "alpha_two"
    end },
  { name = "alternatives arrived", action = function()
      check("one explicit ask for them", vim.tbl_map(function(r)
        return r.trigger
      end, vim.list_slice(result.requests, before + 1)), { 1 })
      check("a guaranteed alternative: no marker", marked(), nil)
      before = #result.requests
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "alpha_three"
    end },
  { name = "the third", action = function()
      check("cycled without asking", #result.requests, before)
      check("the alternative's own label marks it", (marked() or {}).text, " ⚠ not guaranteed")
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "alpha_one"
    end },
  { name = "round", action = function()
      check("back to the first, unmarked", marked(), nil)
      check("still no ask", #result.requests, before)
      phase = "cut"
      vim.api.nvim_input("<Esc>o")
    end, ["until"] = function()
      return ghost() == "beta_one"
    end, settle = WAIT },
  { name = "cut", action = function()
      before = #result.requests
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "beta_two"
    end },
  { name = "said", action = function()
      check("cut alternatives: no ask", #result.requests, before)
      check("cut alternatives: said", status.last_notice,
        "gdg-lsp: 2 of 3 suggestions here: the others were cut by the time budget (gdg.timeoutMs)")
      check("the statusline shows the cut", require("gdg_lsp").statusline():find("2/3 cut", 1, true) ~= nil, true)
      vim.api.nvim_input("<Esc>")
    end },
})
