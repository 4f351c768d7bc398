-- Partial accept (issue 30 item 2): <M-Right> takes the next word and <M-Down> the rest of the
-- line, the rest stays drawn, no request is made for it, and the server hears
-- didPartiallyAcceptCompletion with the accepted length in UTF-16 units (the suggestion holds
-- "ï", 2 bytes and 1 unit, and "😀", 4 bytes and 2 units); didShowCompletion once for the item;
-- <Tab> takes the rest and runs the item's command (workspace/executeCommand).
--
-- Environment: GDG_PLUGIN, GDG_RESULT.

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item

local DEBOUNCE_MS = 250
require("gdg_lsp").setup({ cmd = fake.server, inline = { native = false, debounce_ms = DEBOUNCE_MS } })
local inline = require("gdg_lsp.inline")

local TEXT = 's = naïve("😀", v)\nreturn s'
-- the server's typed-through answer: the same item (same id) while the line begins it
fake.responder = function(params, line)
  if #line < #TEXT and vim.startswith(TEXT, line) then
    return { items = { item(TEXT, params.position.line, 0, params.position.character, "p1") } }, 5
  end
  return { items = {} }, 0
end

local function ghost()
  return inline.ghost_text(fake.buf)
end
local function line(n)
  return vim.api.nvim_buf_get_lines(fake.buf, n, n + 1, false)[1]
end
local function lengths()
  return vim.tbl_map(function(n)
    return n.params.acceptedLength
  end, fake.sent("textDocument/didPartiallyAcceptCompletion"))
end

-- each key: the line it leaves, the ghost it leaves, the accepted length it reports
local pieces = {
  { "<M-Right>", "s =", ' naïve("😀", v)\nreturn s', 3 },
  { "<M-Right>", "s = naïve", '("😀", v)\nreturn s', 9 },
  { "<M-Right>", 's = naïve("', '😀", v)\nreturn s', 11 },
  { "<M-Right>", 's = naïve("😀', '", v)\nreturn s', 13 },
  { "<M-Down>", 's = naïve("😀", v)', "\nreturn s", 18 },
}

local requests_before
local steps = {
  fake.open_step({ "x = 1" }),
  { name = "ghost", action = function()
      vim.api.nvim_input("Gos")
    end, ["until"] = function()
      return ghost() == ' = naïve("😀", v)\nreturn s'
    end, settle = DEBOUNCE_MS + 50 },
}
for i, piece in ipairs(pieces) do
  table.insert(steps, { name = "piece " .. i, action = function()
      if i == 1 then
        requests_before = #result.requests
      end
      vim.api.nvim_input(piece[1])
    end, ["until"] = function()
      return line(1) == piece[2]
    end, settle = 0 })
  table.insert(steps, { name = "after piece " .. i, action = function()
      check("piece " .. i .. ": the rest stays drawn", ghost(), piece[3])
      check("piece " .. i .. ": still in insert mode", vim.api.nvim_get_mode().mode, "i")
      check("piece " .. i .. ": accepted length (UTF-16)", lengths()[i], piece[4])
    end, settle = 0 })
end
vim.list_extend(steps, {
  { name = "no decode for the pieces", action = function()
      check("no request between the keys", #result.requests, requests_before)
    end, ["until"] = function()
      return #result.requests > requests_before -- the confirming ask after the pause
    end, settle = 100 },
  { name = "confirmed", action = function()
      check("the confirmed rest", ghost(), "\nreturn s")
      check("shown once for all the pieces", #fake.sent("textDocument/didShowCompletion"), 1)
      check("the item as served", fake.sent("textDocument/didShowCompletion")[1].params.item.command.arguments,
        { { id = "p1" } })
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      return line(2) == "return s"
    end },
  { name = "accepted", action = function()
      check("the whole item in the buffer", vim.api.nvim_buf_get_lines(fake.buf, 0, -1, false),
        { "x = 1", 's = naïve("😀", v)', "return s" })
      check("cursor after it", vim.api.nvim_win_get_cursor(0), { 3, 8 })
      check("no partial accept for the full one", #lengths(), #pieces)
    end, ["until"] = function()
      return #result.commands > 0
    end },
  { name = "command", action = function()
      check("the item's command ran", result.commands, { { command = "gdg.didAcceptCompletion", arguments = { { id = "p1" } } } })
      vim.api.nvim_input("<Esc>")
    end },
})
fake.run(steps)
