-- Manners of the plugin's inline client (issue 30 items 5 and 6): no ghost while the popup menu
-- is up and <Tab> is then the user's own menu mapping; the ghost's highlight (gui and cterm
-- colours, italic, not bold, hl_mode "replace", a default the user's own definition wins over);
-- :GdgLsp snooze stops the asks nobody pressed a key for; LSP progress is echoed; quitting waits
-- for the server's answer to shutdown ($GDG_EXIT_MARKER is written when the fake hears exit).
--
-- Environment: GDG_PLUGIN, GDG_RESULT, GDG_EXIT_MARKER.

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item
fake.shutdown_delay_ms = 300
fake.exit_marker = vim.env.GDG_EXIT_MARKER

-- a user's config: <Tab> moves through the popup menu
vim.keymap.set("i", "<Tab>", function()
  return vim.fn.pumvisible() == 1 and "<C-n>" or "<Tab>"
end, { expr = true })

local DEBOUNCE_MS = 40
require("gdg_lsp").setup({ cmd = fake.server, inline = { native = false, debounce_ms = DEBOUNCE_MS } })
local inline = require("gdg_lsp.inline")
local status = require("gdg_lsp.status")

fake.responder = function()
  return { items = { item("_ghost") } }, 0
end

local function ghost()
  return inline.ghost_text(fake.buf)
end
local function menu()
  return vim.fn.pumvisible() == 1
end
local function line()
  return vim.api.nvim_get_current_line()
end

local requests_before
fake.run({
  fake.open_step({ "alpha_one = 1", "alpha_two = 2" }),
  { name = "ghost", action = function()
      vim.api.nvim_input("Goal")
    end, ["until"] = function()
      return ghost() == "_ghost"
    end },
  { name = "look", action = function()
      local hl = vim.api.nvim_get_hl(0, { name = "GdgGhostText" })
      check("gui colour", hl.fg, 0x808080)
      check("cterm colour", hl.ctermfg, 244)
      check("italic", hl.italic, true)
      check("cterm italic", hl.cterm and hl.cterm.italic, true)
      check("not bold", hl.bold, nil)
      local mark = vim.api.nvim_buf_get_extmarks(fake.buf, vim.api.nvim_create_namespace("gdg_lsp.inline"), 0, -1,
        { details = true })[1]
      check("hl_mode", mark and mark[4].hl_mode, "replace")
      check("drawn in the group", mark and mark[4].virt_text[1][2], "GdgGhostText")
      vim.api.nvim_input("<C-n>")
    end, ["until"] = menu },
  { name = "menu up", action = function()
      check("no ghost over the menu", ghost(), "")
      check("selected first", vim.fn.complete_info({ "selected" }).selected, 0)
    end, settle = DEBOUNCE_MS * 4 },
  { name = "menu stays", action = function()
      check("still no ghost after the debounce", ghost(), "")
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      return vim.fn.complete_info({ "selected" }).selected == 1
    end },
  { name = "tab moved in the menu", action = function()
      check("tab was the user's menu key", line(), "alpha_two")
      vim.api.nvim_input("<C-y>")
    end, ["until"] = function()
      return not menu() and ghost() == "_ghost"
    end },
  { name = "menu closed", action = function()
      check("the ghost back after the menu", line(), "alpha_two")
      -- the user's own definition wins over the plugin's default
      vim.api.nvim_set_hl(0, "GdgGhostText", { fg = "#ff0000" })
      require("gdg_lsp.ghost").define_highlight()
      check("user's colour kept", vim.api.nvim_get_hl(0, { name = "GdgGhostText" }).fg, 0xff0000)
      vim.cmd("GdgLsp snooze 1")
      check("statusline while snoozed", status.statusline(), "gdg snoozed 1m")
      check("snooze hides the ghost", ghost(), "")
      requests_before = #result.requests
      vim.api.nvim_input("_x")
    end, settle = DEBOUNCE_MS * 4 },
  { name = "snoozed", action = function()
      check("no ask while snoozed", #result.requests, requests_before)
      check("no ghost while snoozed", ghost(), "")
      vim.api.nvim_input("<M-\\>")
    end, ["until"] = function()
      return ghost() == "_ghost"
    end },
  { name = "the key still asks", action = function()
      check("one invoked ask", #result.requests, requests_before + 1)
      check("invoked", result.requests[#result.requests].trigger, 1)
      vim.cmd("GdgLsp resume")
      requests_before = #result.requests
      vim.api.nvim_input("y")
    end, ["until"] = function()
      return #result.requests > requests_before
    end },
  { name = "progress", action = function()
      check("resumed: asks again", result.requests[#result.requests].trigger, 2)
      local send = fake.dispatchers.notification
      send("$/progress", { token = "m", value = { kind = "begin", title = "gdg-lsp", message = "loading m", percentage = 0 } })
    end, ["until"] = function()
      return status.last_progress == "gdg-lsp: loading m (0%)"
    end },
  { name = "progress report", action = function()
      fake.dispatchers.notification("$/progress", { token = "m", value = { kind = "report", message = "converting",
        percentage = 40 } })
    end, ["until"] = function()
      return status.last_progress == "gdg-lsp: converting (40%)"
    end },
  { name = "progress end", action = function()
      fake.dispatchers.notification("$/progress", { token = "m", value = { kind = "end", message = "model ready" } })
    end, ["until"] = function()
      return status.last_progress == "gdg-lsp: model ready"
    end },
})
