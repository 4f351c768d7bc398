-- The steady ghost (issue 30 item 1): typing what the ghost shows keeps it in every frame Neovim
-- draws, with the rest of the suggestion, no request until the debounce and a confirming answer
-- drawn in place; alternatives survive typing through (filtered by it) and cycle without a
-- request; a mismatch clears at once and asks after the debounce.
--
-- A frame is a redraw (a decoration provider's on_start): at each one the test reads the line
-- and the ghost drawn, so "0 ms after the key" is the frame the key produced.
--
-- Environment: GDG_PLUGIN, GDG_RESULT.

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item

local DEBOUNCE_MS, GAP_MS = 250, 20
require("gdg_lsp").setup({ cmd = fake.server, inline = { native = false, debounce_ms = DEBOUNCE_MS } })
local inline = require("gdg_lsp.inline")

local ROW = 1 -- the typed line (0-based)
local A, C = "value = compute(x)", "value = other(y)"
-- the server's typed-through answer: its items the line still begins, from column 0
local served = { { A, "a" }, { "valid = x", "b" }, { C, "c" } }
local function answer_from_served(params, line)
  local items = {}
  for _, s in ipairs(served) do
    if #line < #s[1] and vim.startswith(s[1], line) then
      table.insert(items, item(s[1], params.position.line, 0, params.position.character, s[2]))
    end
  end
  return { items = items }, 5
end

local function ghost()
  return inline.ghost_text(fake.buf)
end
local function line()
  return vim.api.nvim_buf_get_lines(fake.buf, ROW, ROW + 1, false)[1] or ""
end
local function shown_ids(id)
  local n = 0
  for _, sent in ipairs(fake.sent("textDocument/didShowCompletion")) do
    if sent.params.item.command.arguments[1].id == id then
      n = n + 1
    end
  end
  return n
end

-- what each redraw showed while `frames.expect` (the suggestion being typed) is set
local frames = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_frames.lua").recorder(function()
  return line(), ghost()
end)

local requests_before
local typed_done = false
local function type_keys(keys)
  typed_done = false
  fake.type_slowly(keys, GAP_MS, function()
    typed_done = true
  end)
end

fake.run({
  fake.open_step({ "x = 1" }),
  { name = "ghost", action = function()
      fake.responder = answer_from_served
      vim.api.nvim_input("Goval")
    end, ["until"] = function()
      return ghost() == "ue = compute(x)"
    end, settle = DEBOUNCE_MS + 50 },
  { name = "type through", action = function()
      check("shown once", shown_ids("a"), 1)
      requests_before = #result.requests
      frames.expect = A
      type_keys({ "u", "e", " ", "=", " " })
    end, ["until"] = function()
      return typed_done
    end, settle = 0 },
  { name = "no request while typing", action = function()
      check("no request before the debounce", #result.requests, requests_before)
      check("rest after typing through", ghost(), "compute(x)")
    end, ["until"] = function()
      return #result.requests > requests_before -- the confirming ask after the pause
    end, settle = 100 },
  { name = "confirmed", action = function()
      check("one confirming request", #result.requests, requests_before + 1)
      check("the confirmed rest", ghost(), "compute(x)")
      check("a typed-through rest is the same item: not shown again", shown_ids("a"), 1)
      requests_before = #result.requests
      frames.expect = nil
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "other(y)"
    end, settle = 0 },
  { name = "cycled", action = function()
      check("cycling asks nothing", #result.requests, requests_before)
      check("the alternative drawn is told once", shown_ids("c"), 1)
      vim.api.nvim_input("<M-[>")
    end, ["until"] = function()
      return ghost() == "compute(x)"
    end, settle = DEBOUNCE_MS + 50 },
  { name = "type more", action = function()
      requests_before = #result.requests
      frames.expect = A
      type_keys({ "c", "o", "m" })
    end, ["until"] = function()
      return typed_done
    end, settle = 0 },
  { name = "alternative dropped", action = function()
      frames.expect = nil -- a key that draws no new text makes no frame to judge
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "i"
    end, settle = 20 },
  { name = "after dropping", action = function()
      check("only the item the typed text continues cycles", ghost(), "pute(x)")
      check("still no request", #result.requests, requests_before)
      -- the server's answer is the truth: it replaces what the plugin drew
      fake.responder = function(params, l)
        if l == "value = com" then
          return { items = { item("value = compute(x, y)", params.position.line, 0, params.position.character, "a") } }, 5
        end
        return answer_from_served(params, l)
      end
    end, ["until"] = function()
      return ghost() == "pute(x, y)"
    end, timeout = 3000 },
  { name = "mismatch", action = function()
      requests_before = #result.requests
      fake.responder = function()
        return { items = {} }, 0
      end
      frames.expect = "value = compute(x, y)"
      vim.api.nvim_input("X")
    end, ["until"] = function()
      return #result.requests > requests_before
    end, timeout = 3000, settle = 50 },
  { name = "end", action = function()
      check("a mismatch clears", ghost(), "")
      check("and asks once after the debounce", #result.requests, requests_before + 1)
      frames.expect = nil
      result.frames = frames.judge()
      vim.api.nvim_input("<Esc>")
    end },
})
