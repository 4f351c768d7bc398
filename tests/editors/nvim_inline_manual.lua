-- inline.trigger = "manual" (issue 30 item 6): nothing is asked until the request key, a ghost
-- asked for is still typed through (drawn locally, no confirming ask), and a mismatch asks
-- nothing; a language turned off in inline.filetypes asks nothing even on the key; with no ghost
-- <Tab> is Neovim's own snippet jump (its default insert-mode mapping, which the plugin's shadows).
--
-- Environment: GDG_PLUGIN, GDG_RESULT.

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item

local DEBOUNCE_MS = 20
require("gdg_lsp").setup({
  cmd = fake.server,
  inline = { native = false, debounce_ms = DEBOUNCE_MS, trigger = "manual", filetypes = { sh = false } },
})
local inline = require("gdg_lsp.inline")

fake.responder = function(params, line)
  if vim.startswith("abcd", line) then
    return { items = { item("abcd", params.position.line, 0, params.position.character) } }, 0
  end
  return { items = {} }, 0
end

local function ghost()
  return inline.ghost_text(vim.api.nvim_get_current_buf())
end
local WAIT = DEBOUNCE_MS * 8

fake.run({
  fake.open_step({ "x = 1" }),
  { name = "type", action = function()
      vim.api.nvim_input("Goab")
    end, settle = WAIT },
  { name = "nothing asked", action = function()
      check("no request without the key", #result.requests, 0)
      vim.api.nvim_input("<M-\\>")
    end, ["until"] = function()
      return ghost() == "cd"
    end },
  { name = "asked on the key", action = function()
      check("one invoked request", vim.tbl_map(function(r)
        return r.trigger
      end, result.requests), { 1 })
      vim.api.nvim_input("c")
    end, ["until"] = function()
      return ghost() == "d"
    end, settle = WAIT },
  { name = "typed through", action = function()
      check("typed through without a request", #result.requests, 1)
      vim.api.nvim_input("X")
    end, ["until"] = function()
      return ghost() == ""
    end, settle = WAIT },
  { name = "mismatch", action = function()
      check("a mismatch asks nothing either", #result.requests, 1)
      vim.api.nvim_input("<Esc>o")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "i"
    end },
  { name = "snippet", action = function()
      vim.snippet.expand("for ${1:i} in ${2:items}:")
    end, ["until"] = function()
      return vim.snippet.active() and vim.api.nvim_get_mode().mode == "s"
    end },
  { name = "type over the placeholder", action = function()
      vim.api.nvim_input("k")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "i" and vim.api.nvim_get_current_line() == "for k in items:"
    end },
  { name = "tab jumps", action = function()
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "s"
    end },
  { name = "jumped", action = function()
      check("tab jumped to the next placeholder, inserting nothing", vim.api.nvim_get_current_line(), "for k in items:")
      vim.api.nvim_input("<Esc><Esc>")
      vim.cmd.edit(vim.fn.tempname() .. ".sh")
    end, ["until"] = function()
      return #require("gdg_lsp").clients(0) > 0
    end },
  { name = "turned-off language", action = function()
      vim.api.nvim_input("Goab<M-\\>")
    end, settle = WAIT },
  { name = "not asked", action = function()
      check("a turned-off language asks nothing, even on the key", #result.requests, 1)
      check("and shows nothing", ghost(), "")
      vim.api.nvim_input("<Esc>")
    end },
})
