-- The plugin's own inline client (the Neovim 0.11 path) against an in-process
-- fake server whose answers are known: ghost text rendering (one line, several
-- lines, a range that covers typed text, UTF-16 columns), next / prev /
-- dismiss / request / accept keys, the <Tab> fallback, stale answers, and the
-- statusline fed by gdg/status and gdg/suggestion.
--
-- Environment: GDG_PLUGIN, GDG_RESULT (JSON written at the end).

vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
vim.o.swapfile = false

local fake = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_fake_lsp.lua")
local result, check, item = fake.result, fake.check, fake.item

require("gdg_lsp").setup({
  cmd = fake.server,
  inline = { native = false, debounce_ms = 20 },
})
local inline = require("gdg_lsp.inline")
local status = require("gdg_lsp.status")

local steps
local buf
local function lines()
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end
local function ghost()
  return inline.ghost_text(buf)
end
-- leave insert mode and start a fresh last line (no autoindent in the way)
local function new_line_step(name)
  return { name = name, action = function()
      vim.api.nvim_input("<Esc>")
    end, ["until"] = function()
      if vim.api.nvim_get_mode().mode ~= "n" then
        return false
      end
      vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "" })
      vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(buf), 0 })
      return true
    end }
end
steps = {
  fake.open_step({ "x = 1" }),
  -- two items, both covering the typed "val" (range from column 0)
  { name = "type and see ghost", action = function()
      buf = fake.buf
      fake.responder = function(_, line)
        if line == "val" then
          return { items = { item("value = 2", 1, 0, 3), item("valid = x\nprint(valid)", 1, 0, 3) } }
        end
        return { items = {} }
      end
      vim.api.nvim_input("Goval")
    end, ["until"] = function()
      return ghost() ~= ""
    end },
  { name = "first item", action = function()
      check("ghost after typing", ghost(), "ue = 2")
      check("mode while ghost shown", vim.api.nvim_get_mode().mode, "i")
      check("automatic trigger", result.requests[#result.requests].trigger, 2)
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "id = x\nprint(valid)"
    end },
  { name = "prev", action = function()
      vim.api.nvim_input("<M-[>")
    end, ["until"] = function()
      return ghost() == "ue = 2"
    end },
  { name = "dismiss", action = function()
      vim.api.nvim_input("<C-]>")
    end, ["until"] = function()
      return ghost() == ""
    end },
  { name = "request again", action = function()
      check("dismiss leaves the buffer alone", lines(), { "x = 1", "val" })
      vim.api.nvim_input("<M-\\>")
    end, ["until"] = function()
      return ghost() == "ue = 2"
    end },
  { name = "next then accept", action = function()
      check("invoked trigger", result.requests[#result.requests].trigger, 1)
      vim.api.nvim_input("<M-]>")
    end, ["until"] = function()
      return ghost() == "id = x\nprint(valid)"
    end },
  { name = "accept multi-line", action = function()
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      return #lines() == 3
    end },
  { name = "after accept", action = function()
      check("accepted text", lines(), { "x = 1", "valid = x", "print(valid)" })
      check("cursor after the text", vim.api.nvim_win_get_cursor(0), { 3, 12 })
      check("still in insert mode", vim.api.nvim_get_mode().mode, "i")
      -- the accept is a text change: the next automatic request is answered empty
      fake.responder = function()
        return { items = {} }
      end
    end, ["until"] = function()
      return ghost() == ""
    end },
  { name = "tab without ghost", action = function()
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      -- a tab, or spaces where the python ftplugin sets 'expandtab'
      return lines()[3]:match("^print%(valid%)%s+$") ~= nil
    end },
  -- UTF-16 columns: "é" is 2 bytes but 1 UTF-16 unit (the fake speaks UTF-16)
  new_line_step("new line for utf-16"),
  { name = "utf-16 range", action = function()
      fake.responder = function(params, line)
        if line == "s = 'é'; va" then
          -- the range covers "va": UTF-16 columns 9..11 (bytes 10..12)
          return { items = { item("value", params.position.line, params.position.character - 2,
            params.position.character) } }
        end
        return { items = {} }
      end
      vim.api.nvim_input("As = 'é'; v")
      vim.defer_fn(function()
        vim.api.nvim_input("a")
      end, 200)
    end, ["until"] = function()
      return ghost() ~= ""
    end },
  { name = "utf-16 accept", action = function()
      check("utf-16 ghost", ghost(), "lue")
      check("utf-16 request column", result.requests[#result.requests].character, 11)
      vim.api.nvim_input("<Tab>")
    end, ["until"] = function()
      return lines()[4] == "s = 'é'; value"
    end },
  -- a slow answer to an older request must not be shown after more typing
  new_line_step("new line for stale"),
  { name = "stale answer", action = function()
      fake.responder = function(_, line)
        if line == "a" then
          return { items = { item("_first") } }, 400 -- slow: "b" is typed meanwhile
        elseif line == "ab" then
          return { items = { item("_second") } }, 0
        end
        return { items = {} }
      end
      vim.api.nvim_input("Aa")
      vim.defer_fn(function()
        vim.api.nvim_input("b")
      end, 150)
    end, ["until"] = function()
      return ghost() ~= ""
    end, timeout = 3000 },
  { name = "stale answer ignored", action = function()
      check("only the newest answer shows", ghost(), "_second")
    end, ["until"] = function()
      return true
    end, settle = 500 },
  { name = "still newest", action = function()
      check("the late answer did not replace it", ghost(), "_second")
      vim.api.nvim_input("<Esc>")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "n" and ghost() == ""
    end },
  { name = "status", action = function()
      check("statusline before", status.statusline(), "gdg idle")
      fake.dispatchers.notification("gdg/status", { state = "loading", message = "loading m" })
      check("statusline loading", status.statusline(), "gdg loading…")
      fake.dispatchers.notification("gdg/status", { state = "loading", message = "converting", percentage = 40 })
      check("statusline loading with progress", status.statusline(), "gdg loading 40%…")
      fake.dispatchers.notification("gdg/status", { state = "ready", model = "m", device = "cpu", loadMs = 10 })
      fake.dispatchers.notification("gdg/suggestion", { text = "x", rung = "gamma", guaranteed = true,
        tokens = 3, stopReason = "max-lines", timingsMs = { total = 812.4 } })
      check("statusline after a suggestion", status.statusline(), "gdg 812ms gamma✓")
      check("describe", status.describe()[3], "last suggestion: 3 tokens, rung gamma (guaranteed), stop max-lines, 812.4 ms")
    end },
  -- an ask while the model loads is answered empty; once it is ready the plugin asks again
  { name = "ask again when ready", action = function()
      fake.responder = function()
        return { items = {} }, 0
      end
      fake.dispatchers.notification("gdg/status", { state = "loading", message = "loading m" })
      result.asked_while_loading = #result.requests
      vim.api.nvim_input("Gox")
    end, ["until"] = function()
      return vim.api.nvim_get_mode().mode == "i" and #result.requests > result.asked_while_loading
    end, settle = 200 },
  { name = "ready", action = function()
      result.asked_before_ready = #result.requests
      fake.responder = function()
        return { items = { item("_ready") } }, 0
      end
      fake.dispatchers.notification("gdg/status", { state = "ready", model = "m", device = "cpu", loadMs = 10 })
    end, ["until"] = function()
      return ghost() ~= ""
    end, timeout = 3000 },
  { name = "asked again", action = function()
      check("the ready status asked again", ghost(), "_ready")
      check("one more request", #result.requests, result.asked_before_ready + 1)
      fake.dispatchers.notification("gdg/status", { state = "ready", model = "m", device = "cpu", loadMs = 10 })
    end, settle = 300 },
  { name = "not again", action = function()
      check("a second ready asks nothing", #result.requests, result.asked_before_ready + 1)
      vim.api.nvim_input("<Esc>")
    end },
}

fake.run(steps)
