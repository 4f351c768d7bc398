-- Drives a headless Neovim like a user: set up the plugin, open a file, wait
-- for the model, type in insert mode (through the input queue, so autocmds and
-- mappings fire as they do for keystrokes), wait for the ghost text, type its
-- first characters (every frame recorded), accept the rest with <Tab>, save,
-- and write what happened to a JSON file for pytest.
--
-- Environment: GDG_PLUGIN (editors/neovim), GDG_CMD (JSON list: the server
-- command), GDG_FILE (file to edit), GDG_LINE (1-based line to append to),
-- GDG_TYPE (text typed there), GDG_RESULT (JSON output), GDG_TIMEOUT_MS.

local env = vim.env
local result = { steps = {} }
local started = vim.uv.hrtime()

local function elapsed_ms()
  return math.floor((vim.uv.hrtime() - started) / 1e6)
end

local function step(name)
  table.insert(result.steps, { name = name, ms = elapsed_ms() })
end

local function finish(err)
  result.error = err
  result.elapsed_ms = elapsed_ms()
  local ok, status = pcall(require, "gdg_lsp.status")
  if ok then
    result.model = status.model
    result.suggestion = status.suggestion
    result.statusline = status.statusline()
  end
  local file = io.open(env.GDG_RESULT, "w")
  file:write(vim.json.encode(result))
  file:close()
  -- shut the server down the LSP way (shutdown + exit) before leaving
  local clients = vim.lsp.get_clients({ name = "gdg_lsp" })
  for _, client in ipairs(clients) do
    client:stop()
  end
  vim.wait(5000, function()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return false
      end
    end
    return true
  end, 50)
  vim.cmd("qall!")
end

-- poll `cond` every 50 ms; then `next_step()`, or finish with `what` after the deadline
local function wait_for(what, timeout_ms, cond, next_step)
  local deadline = elapsed_ms() + timeout_ms
  local function poll()
    local ok, value = pcall(cond)
    if ok and value then
      step(what)
      next_step(value)
    elseif not ok then
      finish(what .. ": " .. tostring(value))
    elseif elapsed_ms() > deadline then
      finish("timed out waiting for " .. what)
    else
      vim.defer_fn(poll, 50)
    end
  end
  poll()
end

-- Type the first characters of the ghost one at a time (as a user typing what it shows):
-- every frame drawn meanwhile is recorded (nvim_frames.lua); then wait for the server's
-- confirming answer and note the ghost it leaves.
local TYPE_THROUGH, GAP_MS, CONFIRM_WAIT_MS = 4, 40, 2000
local function type_through(line, ghost, done)
  local first = vim.split(ghost, "\n", { plain = true })[1]
  local count = math.min(TYPE_THROUGH, vim.fn.strchars(first) - 1)
  local typed = vim.fn.strcharpart(first, 0, math.max(count, 0))
  result.typed_through = typed
  if typed == "" then
    result.ghost_confirmed = ghost
    return done()
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local frames = dofile(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)) .. "/nvim_frames.lua").recorder(function()
    return vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1] or "", require("gdg_lsp.inline").ghost_text(bufnr)
  end)
  frames.from = #result.line_before
  frames.expect = ghost
  local i = 0
  local function next_char()
    i = i + 1
    if i > vim.fn.strchars(typed) then
      frames.expect = nil
      result.frames = frames.judge()
      return vim.defer_fn(function()
        result.ghost_confirmed = require("gdg_lsp.inline").ghost_text(bufnr)
        done()
      end, CONFIRM_WAIT_MS)
    end
    vim.api.nvim_input((vim.fn.strcharpart(typed, i - 1, 1):gsub("<", "<lt>")))
    vim.defer_fn(next_char, GAP_MS)
  end
  next_char()
end

vim.opt.runtimepath:prepend(env.GDG_PLUGIN)
vim.o.swapfile = false
local timeout = tonumber(env.GDG_TIMEOUT_MS or "180000")

local gdg = require("gdg_lsp")
gdg.setup({
  cmd = vim.json.decode(env.GDG_CMD),
  -- the test is about the editor, not latency: a loaded 2-core box must not time out
  settings = { device = "cpu", timeoutMs = 30000 },
})
result.native = require("gdg_lsp.inline").uses_native()

vim.cmd.edit(vim.fn.fnameescape(env.GDG_FILE))
local bufnr = vim.api.nvim_get_current_buf()
local inline = require("gdg_lsp.inline")
local status = require("gdg_lsp.status")

wait_for("attach", 30000, function()
  return #gdg.clients(bufnr) > 0
end, function()
  wait_for("model ready", timeout, function()
    if status.model.state == "failed" then
      error("model failed: " .. tostring(status.model.message))
    end
    return status.model.state == "ready"
  end, function()
    local line = tonumber(env.GDG_LINE)
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    -- `A` and the text, as keystrokes: InsertEnter / TextChangedI fire
    vim.api.nvim_input("A" .. env.GDG_TYPE)
    wait_for("typed", 5000, function()
      local text = vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1]
      return vim.api.nvim_get_mode().mode == "i" and vim.endswith(text, env.GDG_TYPE)
    end, function()
      result.line_before = vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1]
      result.lines_before = vim.api.nvim_buf_line_count(bufnr)
      -- an empty answer (the model chose to stop) is legitimate: ask again with
      -- the plugin's request key, as a user would, a few times
      local answered, retries = status.suggestion, 0
      wait_for("ghost text", timeout, function()
        local ghost = inline.ghost_text(bufnr)
        if ghost ~= "" then
          return ghost
        end
        local s = status.suggestion
        if s ~= answered and s and s.text == "" and retries < 3 then
          answered, retries = s, retries + 1
          result.retries = retries
          vim.api.nvim_input("<M-\\>")
        end
        return false
      end, function(ghost)
        result.ghost = ghost
        result.mode_with_ghost = vim.api.nvim_get_mode().mode
        type_through(line, ghost, function()
          vim.api.nvim_input("<Tab>")
        wait_for("accepted", 5000, function()
          return vim.api.nvim_buf_get_lines(bufnr, line - 1, line, false)[1] ~= result.line_before
        end, function()
          vim.api.nvim_input("<Esc>")
          wait_for("normal mode", 5000, function()
            return vim.api.nvim_get_mode().mode == "n"
          end, function()
            vim.cmd.write()
            result.lines_after = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
            finish(nil)
          end)
        end)
        end)
      end)
    end)
  end)
end)
