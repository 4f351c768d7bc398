-- :checkhealth gdg_lsp

local config = require("gdg_lsp.config")
local status = require("gdg_lsp.status")
local inline = require("gdg_lsp.inline")

local M = {}

local health = vim.health

function M.check()
  health.start("gdg_lsp: Neovim")
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. version)
  else
    health.error("Neovim " .. version .. " is too old", { "gdg_lsp needs Neovim 0.11 or later" })
  end
  local plugin = require("gdg_lsp")
  local opts = plugin.options
  if not opts then
    health.warn("setup() has not been called", { "add require('gdg_lsp').setup({}) to your config" })
    opts = config.merge({})
  else
    health.ok("setup() called")
  end
  if opts.inline.enabled then
    if inline.uses_native(opts.inline) then
      health.ok("inline suggestions: vim.lsp.inline_completion (native)")
    else
      health.ok("inline suggestions: the plugin's own client (virtual text)")
    end
    if opts.inline.trigger == "manual" then
      health.info("inline.trigger = \"manual\": asked only on " .. tostring((opts.inline.keymaps or {}).request))
    end
    local off = {}
    for filetype, on in pairs(opts.inline.filetypes or {}) do
      if on == false then
        table.insert(off, filetype)
      end
    end
    if #off > 0 then
      table.sort(off)
      health.info("inline suggestions off in: " .. table.concat(off, ", ") .. " (inline.filetypes)")
    end
    local snoozed = require("gdg_lsp.gate").snoozed()
    if snoozed then
      health.info(("snoozed for %d more minutes (:GdgLsp resume)"):format(math.ceil(snoozed)))
    end
  else
    health.info("inline suggestions are disabled (inline.enabled = false)")
  end

  health.start("gdg_lsp: server")
  if opts.cmd then
    local shown = type(opts.cmd) == "table" and table.concat(opts.cmd, " ") or "a function"
    health.info("cmd set in setup(): " .. shown .. " (not checked)")
  else
    local path, how = config.discover(opts)
    if not path then
      health.error(how)
      return
    end
    health.ok(("gdg-lsp found via %s: %s"):format(how, path))
    local ok, result = pcall(function()
      return vim.system({ path, "--version" }, { text = true }):wait(20000)
    end)
    if ok and result and result.code == 0 then
      health.ok(vim.trim(result.stdout ~= "" and result.stdout or result.stderr))
    else
      local problem = ok and result and (result.stderr or "") or tostring(result)
      health.error("`" .. path .. " --version` failed: " .. vim.trim(problem),
        { "reinstall the server: pip install --force-reinstall gdg-lsp" })
    end
  end

  health.start("gdg_lsp: clients")
  local clients = vim.lsp.get_clients({ name = config.name })
  if #clients == 0 then
    health.info("no gdg_lsp client is running (open a " .. table.concat(opts.filetypes, "/") .. " file)")
  end
  for _, client in ipairs(clients) do
    local caps = client.server_capabilities or {}
    local buffers = vim.tbl_count(client.attached_buffers)
    health.ok(("client %d attached to %d buffer(s), position encoding %s"):format(client.id, buffers, client.offset_encoding))
    if caps.inlineCompletionProvider then
      health.ok("the server offers textDocument/inlineCompletion")
    else
      health.warn("the server does not offer textDocument/inlineCompletion")
    end
    -- what happened to the suggestions shown (counted by the server, kept locally)
    local answer = client:request_sync("gdg/status", {}, 3000)
    if answer and answer.err == nil and type(answer.result) == "table" then
      for _, line in ipairs(status.acceptance_lines(answer.result.acceptance)) do
        health.info("suggestions: " .. line)
      end
    end
  end
  local m = status.model
  if m.state == "failed" then
    health.error("model: " .. tostring(m.message), { "check gdg.model / gdg.device, then :GdgLog" })
  elseif m.state == "ready" then
    health.ok("model: " .. tostring(m.message))
  elseif #clients > 0 then
    health.info("model: " .. tostring(m.state) .. (m.message and m.message ~= vim.NIL and (" — " .. m.message) or ""))
  end
end

return M
