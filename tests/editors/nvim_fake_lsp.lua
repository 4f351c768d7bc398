-- An in-process fake gdg-lsp for the headless Neovim tests of the plugin's inline client, and the
-- step runner they share. The fake answers textDocument/inlineCompletion with what the test's
-- `responder(params, line)` returns (after its delay), records every request and the accept
-- protocol's messages (didShowCompletion, didPartiallyAcceptCompletion, workspace/executeCommand),
-- answers gdg/status with `status_result`, sends what a test tells it (`tell`), and writes the
-- results to $GDG_RESULT when the steps end.
--
--   local fake = dofile(vim.env.GDG_FAKE_LSP)
--   require("gdg_lsp").setup({ cmd = fake.server, inline = { native = false, debounce_ms = 20 } })
--   fake.run({ { name = ..., action = function() ... end, ["until"] = function() return ... end }, ... })

local M = {
  result = { checks = {}, requests = {}, notifications = {}, commands = {} },
  dispatchers = nil, -- the client's side: dispatchers.notification(method, params) sends to it
  shutdown_delay_ms = 0, -- how long the fake takes to answer shutdown
  exit_marker = nil, -- a file the fake writes when it receives `exit`
}

-- responder(params, line_text) -> result, delay_ms; set by each step
M.responder = function()
  return { items = {} }, 0
end

M.status_result = { state = "ready" } -- the answer to a gdg/status request

M.capabilities = {
  textDocumentSync = 1,
  inlineCompletionProvider = {},
  executeCommandProvider = { commands = { "gdg.didAcceptCompletion" } },
}

local RECORDED = {
  ["textDocument/didShowCompletion"] = true,
  ["textDocument/didPartiallyAcceptCompletion"] = true,
}

function M.server(dispatchers)
  M.dispatchers = dispatchers
  local closing, next_id = false, 0
  local function answer(callback, value, delay)
    vim.defer_fn(function()
      callback(nil, value)
    end, delay or 0)
  end
  return {
    request = function(method, params, callback)
      next_id = next_id + 1
      if method == "initialize" then
        answer(callback, { capabilities = M.capabilities })
      elseif method == "textDocument/inlineCompletion" then
        table.insert(M.result.requests, { line = params.position.line, character = params.position.character,
          trigger = params.context and params.context.triggerKind })
        local line = vim.api.nvim_buf_get_lines(0, params.position.line, params.position.line + 1, false)[1]
        local value, delay = M.responder(params, line or "")
        answer(callback, value, delay)
      elseif method == "gdg/status" then
        answer(callback, M.status_result)
      elseif method == "workspace/executeCommand" then
        table.insert(M.result.commands, params)
        answer(callback, vim.NIL)
      elseif method == "shutdown" then
        answer(callback, vim.NIL, M.shutdown_delay_ms)
      end
      return true, next_id
    end,
    notify = function(method, params)
      if RECORDED[method] then
        table.insert(M.result.notifications, { method = method, params = params })
      elseif method == "exit" then
        closing = true
        if M.exit_marker then
          vim.fn.writefile({ "exit" }, M.exit_marker)
        end
        vim.schedule(function()
          dispatchers.on_exit(0, 0)
        end)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      closing = true
    end,
  }
end

--- Send the client a notification from the server (gdg/suggestion, as the real one sends it
--- before its answer).
function M.tell(method, params)
  M.dispatchers.notification(method, params)
end

--- The recorded notifications of one method.
function M.sent(method)
  return vim.tbl_filter(function(n)
    return n.method == method
  end, M.result.notifications)
end

function M.check(name, got, want)
  table.insert(M.result.checks, { name = name, got = got, want = want, ok = vim.deep_equal(got, want) })
end

M.buf = nil -- the buffer under test, set by the first step

function M.finish(err)
  M.result.error = err
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then
    M.result.lines = vim.api.nvim_buf_get_lines(M.buf, 0, -1, false)
  end
  local file = io.open(vim.env.GDG_RESULT, "w")
  file:write(vim.json.encode(M.result))
  file:close()
  vim.cmd("qall!")
end

--- Run steps in order; each is { name, action, until, timeout, settle }: `until` is polled
--- every 20 ms after `action`, then the next step starts `settle` ms later.
function M.run(steps)
  local index = 0
  local function run_next()
    index = index + 1
    local s = steps[index]
    if not s then
      return M.finish(nil)
    end
    local ok, err = pcall(s.action or function() end)
    if not ok then
      return M.finish(s.name .. ": " .. tostring(err))
    end
    local deadline = vim.uv.now() + (s.timeout or 5000)
    local function poll()
      local good, value = pcall(s["until"] or function()
        return true
      end)
      if good and value then
        vim.defer_fn(run_next, s.settle or 30)
      elseif vim.uv.now() > deadline then
        M.finish("step '" .. s.name .. "' timed out" .. (good and "" or (": " .. tostring(value))))
      else
        vim.defer_fn(poll, 20)
      end
    end
    poll()
  end
  run_next()
end

--- A step that opens a new .py buffer with `lines` and waits for the client to attach.
function M.open_step(lines)
  return { name = "open", action = function()
      vim.cmd.edit(vim.fn.tempname() .. ".py")
      M.buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(M.buf, 0, -1, false, lines)
    end, ["until"] = function()
      return #require("gdg_lsp").clients(M.buf) > 0
    end }
end

--- An InlineCompletionItem; `line`, `from`, `to`: its range on one line; `id`: its accept command's.
function M.item(text, line, from, to, id)
  local it = { insertText = text }
  if line then
    it.range = { start = { line = line, character = from }, ["end"] = { line = line, character = to } }
  end
  if id then
    it.command = { title = "gdg-lsp: accepted", command = "gdg.didAcceptCompletion", arguments = { { id = id } } }
  end
  return it
end

--- Type `keys` one at a time, `gap_ms` apart (each is its own keystroke and its own frame);
--- then `done()`.
function M.type_slowly(keys, gap_ms, done)
  local i = 0
  local function next_key()
    i = i + 1
    if i > #keys then
      return done and done()
    end
    vim.api.nvim_input(keys[i])
    vim.defer_fn(next_key, gap_ms)
  end
  next_key()
end

return M
