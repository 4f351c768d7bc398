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
  -- inline, workAhead, workAheadDebounceMs, watchFiles ("auto": Neovim on Linux registers no file
  -- watchers, so the server watches the workspace itself), sql = { connections = {...} }, p4 = { includePaths = {...} },
  -- tilelang = { version = "..." }, shell = { tools = {...} },
  -- jq = { inputs = { { filter = "*.jq", input = "data.json" } } }. Unset keys keep the server's defaults.
  -- fragments = { paths = {...}, trustedFolders = { "~/src/kernels" },
  --   claims = { { language = "triton", claims = "python", contains = { "import triton" } } } }:
  -- a workspace's .gdg/fragments/ files load only for trusted folders, or when you answer
  -- "Load" to the server's question (remembered per folder); only these options of your own
  -- setup{} grant that, never a file of the project.
  settings = {},
  inline = {
    enabled = true,
    -- "auto": vim.lsp.inline_completion where Neovim has it (0.12+), the
    -- plugin's own requests and virtual text otherwise (0.11).
    -- true / false force one or the other (true fails on 0.11).
    native = "auto",
    debounce_ms = 120,
    -- "automatic": ask after a pause in typing; "manual": ask only on the request key.
    trigger = "automatic",
    -- Per language (Neovim filetype): false turns suggestions off there, e.g.
    -- { sql = false }; "*" stands for the languages not named ({ ["*"] = false, python = true }).
    filetypes = {},
    hl_group = "GdgGhostText", -- grey italic (gui and cterm colours) unless you define it
    -- Insert-mode keys; set one to false to leave that key alone, or
    -- `keymaps = false` for none at all. Accept, accept_word, accept_line and
    -- dismiss are the key they replace (your mapping of it, a snippet jump, a
    -- plain Tab) when no suggestion is shown.
    keymaps = {
      accept = "<Tab>",
      accept_word = "<M-Right>",
      accept_line = "<M-Down>",
      dismiss = "<C-]>",
      next = "<M-]>",
      prev = "<M-[>",
      request = "<M-\\>",
    },
  },
  -- Echo the server's progress (the model loading) in the message area; false when a
  -- progress plugin or your statusline (vim.lsp.status()) shows it.
  progress = true,
  -- Define :GdgExplain, :GdgRestart, :GdgLog, :GdgStatus, :GdgSqlSource, :GdgLsp.
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
    -- an empty table is a list to vim.islist: over a table of options it changes none
    -- (setup({}) kept no default at all)
    if type(base) ~= "table" or type(over) ~= "table" or is_list(base) or (is_list(over) and next(over) ~= nil) then
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

local function is_absolute(dir)
  return dir:sub(1, 1) == "/" or dir:match("^%a:[\\/]") ~= nil
end

local function inside(path, folder)
  local function norm(p)
    return vim.fs.normalize(vim.fn.fnamemodify(p, ":p")):gsub("/$", "")
  end
  path, folder = norm(path), norm(folder)
  return path == folder or path:sub(1, #folder + 1) == folder .. "/"
end

--- gdg-lsp on PATH, skipping relative entries and entries inside `root` (a venv of the
--- project activated in the shell Neovim was started from is the project's program).
function M.on_path(root)
  local sep = vim.fn.has("win32") == 1 and ";" or ":"
  for _, dir in ipairs(vim.split(vim.env.PATH or "", sep, { plain = true })) do
    if dir ~= "" and is_absolute(dir) and not inside(dir, root) then
      local found = vim.fn.exepath(dir .. "/gdg-lsp")
      if found ~= "" then
        return found
      end
    end
  end
  return nil
end

--- Find the gdg-lsp executable: server_path, then PATH (outside the project), then
--- (only with trust_workspace_venv) the workspace's .venv/venv. Returns path, how it
--- was found; or nil and a message that says how to fix it.
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
  root = root or vim.fn.getcwd()
  local on_path = M.on_path(root)
  if on_path then
    return on_path, "PATH"
  end
  table.insert(tried, "PATH (outside " .. root .. ")")
  if opts.trust_workspace_venv then
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

-- The server settings only the user chooses: a program to run, a model or a folder
-- to load beyond the workspace, where code and a secret go, the bounds on what workspace
-- data may cost (the server's
-- gdg_lsp/settings.py marks them USER_ONLY; tests/editors/test_neovim.py compares
-- the lists). They come from the user's own setup{} only: a setup{} written in a
-- project's exrc file cannot set them, and whatever is merged into the client's
-- config later (a `vim.lsp.config("gdg_lsp", ...)` of a project-local plugin, an
-- `lsp/gdg_lsp.lua` on 'runtimepath') is replaced by setup{}'s values before the
-- server sees it (M.pin_user_only).
M.user_only = {
  "model", "backend", "remote.url", "remote.apiKeyEnv", "sql.connections", "sql.sources",
  "python.interpreter", "p4.includePaths", "shell.tools",
  "fragments.paths", "fragments.trustedFolders", "fragments.claims", "stats.enabled",
  "limits.globFolders", "limits.globMatches", "limits.refs", "limits.refFolders", "limits.packedRefsBytes",
  "limits.scripts", "limits.includeBytes", "limits.sourceBytes", "limits.remoteResponseBytes",
  "limits.analysedChars",
}

-- The plugin's own options that choose the program it starts.
M.program_options = { "cmd", "server_path", "args", "trust_workspace_venv" }

-- The plugin's own options that choose in which languages, and when, the code around the cursor
-- goes to the server: a project cannot turn suggestions on where you turned them off, nor make
-- the plugin ask after every pause where you ask on a key.
M.inline_choices = { "inline.enabled", "inline.filetypes", "inline.trigger" }

-- The files Neovim's 'exrc' sources from the current folder (after :trust).
M.exrc_names = { [".nvim.lua"] = true, [".nvimrc"] = true, [".exrc"] = true }

local function lookup(t, dotted)
  for part in dotted:gmatch("[^.]+") do
    if type(t) ~= "table" then
      return nil
    end
    t = t[part]
  end
  return t
end

local function put(t, dotted, value)
  local parts = vim.split(dotted, ".", { plain = true })
  for i = 1, #parts - 1 do
    if type(t[parts[i]]) ~= "table" then
      if value == nil then
        return
      end
      t[parts[i]] = {}
    end
    t = t[parts[i]]
  end
  t[parts[#parts]] = vim.deepcopy(value)
end

--- Set every user-only key of `settings` (a `gdg` section, changed in place) to its
--- value in `own` (removed where `own` has none); the keys that were otherwise.
function M.pin_user_only(settings, own)
  local differed = {}
  if type(settings) ~= "table" then
    return differed
  end
  for _, key in ipairs(M.user_only) do
    local want = lookup(own, key)
    if not vim.deep_equal(lookup(settings, key), want) then
      table.insert(differed, key)
      put(settings, key, want)
    end
  end
  return differed
end

--- Whether a setup{} call comes from a project's exrc file (`source` as debug.getinfo gives it).
function M.is_exrc(source)
  return type(source) == "string" and source:sub(1, 1) == "@" and M.exrc_names[vim.fs.basename(source:sub(2))] == true
end

--- The options of a setup{} written in a project's exrc file: its program options, inline
--- choices and user-only settings are those of the user's own setup{} before it (`previous`,
--- or the defaults); the names it tried to set.
function M.without_project_choices(user, previous)
  user = vim.deepcopy(user or {})
  previous = previous or M.defaults
  local dropped = {}
  for _, key in ipairs(M.program_options) do
    if user[key] ~= nil and not vim.deep_equal(user[key], previous[key]) then
      table.insert(dropped, key)
    end
    user[key] = vim.deepcopy(previous[key])
  end
  if user.inline == false then
    user.inline = { enabled = false }
  end
  for _, key in ipairs(M.inline_choices) do
    local own = lookup(previous, key)
    if lookup(user, key) ~= nil and not vim.deep_equal(lookup(user, key), own) then
      table.insert(dropped, key)
    end
    if type(user.inline) == "table" then
      put(user, key, own)
    end
  end
  user.settings = user.settings or {}
  for _, key in ipairs(M.pin_user_only(user.settings, previous.settings or {})) do
    table.insert(dropped, "settings." .. key)
  end
  return user, dropped
end

-- the settings that are objects, not lists, even when empty
local OBJECT_KEYS = { "sql", "p4", "tilelang", "shell", "jq", "python", "remote", "fragments" }

--- What the server receives as initializationOptions and as the `gdg`
--- configuration section. An empty Lua table would be sent as a JSON list,
--- which the server rejects: empty objects become vim.empty_dict().
function M.server_settings(opts)
  return M.as_objects(vim.deepcopy(opts.settings or {}))
end

--- `settings` with its empty sections (and itself, when empty) as vim.empty_dict().
function M.as_objects(settings)
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
