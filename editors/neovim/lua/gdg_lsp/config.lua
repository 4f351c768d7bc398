-- Options of the plugin: defaults, merging, and finding the server.
--
-- Everything here is plain data and pure functions, so `:checkhealth gdg_lsp`
-- and the tests can call it without starting anything.

local M = {}

M.name = "gdg_lsp"

M.defaults = {
  -- The command that starts the server. nil: discover it (see M.discover).
  cmd = nil,
  -- Path of the gdg-lsp executable; tried before PATH.
  server_path = nil,
  -- Also look for the server in the project's .venv/venv. Off by default: a
  -- cloned repository could ship its own `.venv/bin/gdg-lsp`, and the plugin
  -- would run it on opening a file. Turn it on in your own config only.
  trust_workspace_venv = false,
  -- Extra arguments after `--stdio` (e.g. { "--log-level", "DEBUG" }).
  args = {},
  -- Where the server writes its log (`:GdgLog` opens it). false: no log file.
  log_file = nil, -- default: stdpath("log") .. "/gdg-lsp.log"
  filetypes = { "python", "sql", "p4", "tilelang", "sh", "bash", "jq" },
  root_markers = { "pyproject.toml", "setup.cfg", ".git" },
  -- The server's `gdg` settings (camelCase, as in VS Code): model, device,
  -- constraint, maxTokens, timeoutMs, maxLines, contextTokens, diagnostics,
  -- inline, workAhead, workAheadDebounceMs, sql = { connections = {...} }, p4 = { includePaths = {...} },
  -- tilelang = { version = "..." }, shell = { tools = {...} },
  -- jq = { inputs = { { filter = "*.jq", input = "data.json" } } }. Unset keys keep the server's defaults.
  settings = {},
  inline = {
    enabled = true,
    -- "auto": vim.lsp.inline_completion where Neovim has it (0.12+), the
    -- plugin's own requests and virtual text otherwise (0.11).
    -- true / false force one or the other (true fails on 0.11).
    native = "auto",
    debounce_ms = 120,
    hl_group = "GdgGhostText", -- linked to Comment unless you define it
    -- Insert-mode keys; set one to false to leave that key alone, or
    -- `keymaps = false` for none at all. Accept falls back to the key's
    -- normal behaviour when no suggestion is shown.
    keymaps = {
      accept = "<Tab>",
      dismiss = "<C-]>",
      next = "<M-]>",
      prev = "<M-[>",
      request = "<M-\\>",
    },
  },
  -- Define :GdgExplain, :GdgRestart, :GdgLog, :GdgStatus.
  commands = true,
}

local function is_list(t)
  return type(t) == "table" and (vim.islist or vim.tbl_islist)(t)
end

--- Merge user options over the defaults; lists replace, tables merge.
function M.merge(user)
  user = user or {}
  local function merge(base, over)
    if over == nil then
      return vim.deepcopy(base)
    end
    if type(base) ~= "table" or type(over) ~= "table" or is_list(over) or is_list(base) then
      return vim.deepcopy(over)
    end
    local out = vim.deepcopy(base)
    for k, v in pairs(over) do
      out[k] = merge(base[k], v)
    end
    return out
  end
  local opts = merge(M.defaults, user)
  if user.inline == false then
    opts.inline = vim.deepcopy(M.defaults.inline)
    opts.inline.enabled = false
  end
  if type(user.inline) == "table" and user.inline.keymaps == false then
    opts.inline.keymaps = {}
  end
  return opts
end

local function executable(path)
  return path ~= nil and path ~= "" and vim.fn.executable(path) == 1
end

local function venv_candidates(root)
  local is_windows = vim.fn.has("win32") == 1
  local out = {}
  for _, venv in ipairs({ ".venv", "venv" }) do
    if is_windows then
      table.insert(out, root .. "/" .. venv .. "/Scripts/gdg-lsp.exe")
    else
      table.insert(out, root .. "/" .. venv .. "/bin/gdg-lsp")
    end
  end
  return out
end

--- Find the gdg-lsp executable: server_path, then PATH, then (only with
--- trust_workspace_venv) the workspace's .venv/venv. Returns path, how it was
--- found; or nil and a message that says how to fix it.
function M.discover(opts, root)
  opts = opts or M.defaults
  local tried = {}
  if opts.server_path and opts.server_path ~= "" then
    local path = vim.fn.expand(opts.server_path)
    if executable(path) then
      return path, "server_path"
    end
    return nil,
      ("gdg-lsp: server_path %q is not an executable file. Fix the path in require('gdg_lsp').setup{ server_path = ... }, or remove it to search PATH."):format(
        path
      )
  end
  local on_path = vim.fn.exepath("gdg-lsp")
  if on_path ~= "" then
    return on_path, "PATH"
  end
  table.insert(tried, "PATH")
  if opts.trust_workspace_venv then
    root = root or vim.fn.getcwd()
    for _, candidate in ipairs(venv_candidates(root)) do
      if executable(candidate) then
        return candidate, "workspace venv"
      end
      table.insert(tried, candidate)
    end
  end
  return nil,
    ("gdg-lsp was not found (looked in %s). Install it with `pip install gdg-lsp` into a venv on PATH, or point the plugin at it: require('gdg_lsp').setup{ server_path = '/path/to/gdg-lsp' } (or trust_workspace_venv = true to use the project's .venv)."):format(
      table.concat(tried, ", ")
    )
end

--- The server command for these options (nil, message when there is none).
function M.command(opts, root)
  if opts.cmd then
    return vim.deepcopy(opts.cmd)
  end
  local path, how = M.discover(opts, root)
  if not path then
    return nil, how
  end
  local cmd = { path, "--stdio" }
  local log_file = opts.log_file
  if log_file == nil then
    log_file = M.log_path()
  end
  if log_file then
    vim.list_extend(cmd, { "--log-file", log_file })
  end
  vim.list_extend(cmd, opts.args or {})
  return cmd
end

function M.log_path()
  return vim.fn.stdpath("log") .. "/gdg-lsp.log"
end

-- the settings that are objects, not lists, even when empty
local OBJECT_KEYS = { "sql", "p4", "tilelang", "shell", "jq" }

--- What the server receives as initializationOptions and as the `gdg`
--- configuration section. An empty Lua table would be sent as a JSON list,
--- which the server rejects: empty objects become vim.empty_dict().
function M.server_settings(opts)
  local settings = vim.deepcopy(opts.settings or {})
  for _, key in ipairs(OBJECT_KEYS) do
    if type(settings[key]) == "table" and next(settings[key]) == nil then
      settings[key] = vim.empty_dict()
    end
  end
  if next(settings) == nil then
    return vim.empty_dict()
  end
  return settings
end

return M
