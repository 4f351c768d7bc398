-- gdg-lsp for Neovim 0.11+: registers the server with vim.lsp.config,
-- enables it with vim.lsp.enable, and turns on inline suggestions.
--
--   require("gdg_lsp").setup({ settings = { device = "cpu" } })

local config = require("gdg_lsp.config")
local status = require("gdg_lsp.status")
local inline = require("gdg_lsp.inline")

local M = {}

M.options = nil -- the merged options after setup()
M.problem = nil -- why the server could not be configured, if it could not

local function notify(msg, level)
  vim.schedule(function()
    vim.notify(msg, level or vim.log.levels.INFO, { title = "gdg-lsp" })
  end)
end

--- The vim.lsp.Config the plugin registers (exposed for tests and :checkhealth).
function M.lsp_config(opts, cmd)
  local settings = config.server_settings(opts)
  -- what the server gets for the user-only settings is setup{}'s, whatever was merged
  -- into the client's config since (config.user_only)
  local function pinned(section)
    if type(section) ~= "table" then
      return section
    end
    local said = config.pin_user_only(section, settings)
    if #said > 0 then
      notify("gdg-lsp: " .. table.concat(said, ", ") .. " set outside setup{} (ignored): these settings "
        .. "choose a program, a model or a folder to load, or where code goes, and come from your setup{} only",
        vim.log.levels.WARN)
    end
    return config.as_objects(section)
  end
  return {
    cmd = cmd,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    init_options = settings,
    -- answered to workspace/configuration and sent after initialize
    settings = { gdg = settings },
    before_init = function(params, client_config)
      params.initializationOptions = pinned(params.initializationOptions)
      if type(client_config.settings) == "table" then -- the client's own table: changed in place
        client_config.settings.gdg = pinned(client_config.settings.gdg)
      end
    end,
    handlers = {
      ["workspace/configuration"] = function(err, params, ctx)
        local answer = vim.lsp.handlers["workspace/configuration"](err, params, ctx)
        for i, item in ipairs((params or {}).items or {}) do
          if type(answer) == "table" and item.section == "gdg" then
            answer[i] = pinned(vim.deepcopy(answer[i]))
          end
        end
        return answer
      end,
      ["gdg/status"] = function(_, payload)
        local was = status.model and status.model.state
        status.on_status(payload)
        if type(payload) == "table" and payload.state == "ready" and was ~= "ready" then
          vim.schedule(inline.ask_again)
        end
      end,
      ["gdg/suggestion"] = function(_, payload)
        status.on_suggestion(payload)
        inline.on_suggestion(payload)
      end,
    },
    on_attach = function(client, bufnr)
      inline.attach(bufnr)
      if vim.bo[bufnr].filetype == "sql" then
        M.refresh_sql_source(client, bufnr)
        vim.api.nvim_create_autocmd({ "BufEnter", "BufWritePost" }, {
          buffer = bufnr,
          group = vim.api.nvim_create_augroup("gdg_lsp_sql_source_" .. bufnr, { clear = true }),
          callback = function()
            M.refresh_sql_source(client, bufnr)
          end,
        })
      end
    end,
  }
end

local function ensure_filetypes()
  -- Neovim knows neither P4 nor TileLang (nor, before 0.10, jq). TileLang kernels are Python files
  -- (the server recognises them by their `import tilelang`); `*.tilelang.py`
  -- opts in to the tilelang filetype explicitly.
  vim.filetype.add({
    extension = { p4 = "p4", jq = "jq" },
    pattern = { [".*%.tilelang%.py"] = "tilelang" },
  })
  pcall(vim.treesitter.language.register, "python", "tilelang")
end

function M.setup(user_opts)
  if vim.fn.has("nvim-0.11") ~= 1 then
    notify("gdg_lsp needs Neovim 0.11 or later (vim.lsp.config / vim.lsp.enable).", vim.log.levels.ERROR)
    return
  end
  local caller = debug.getinfo(2, "S")
  if caller and config.is_exrc(caller.source) then
    local dropped
    user_opts, dropped = config.without_project_choices(user_opts, M.options)
    if #dropped > 0 then
      notify("gdg-lsp: " .. caller.source:sub(2) .. " (a project's exrc file) cannot set " .. table.concat(dropped, ", ")
        .. ": these choose the program that runs, a model or folder to load, or where and when code goes; "
        .. "set them in your own config", vim.log.levels.WARN)
    end
  end
  local opts = config.merge(user_opts)
  M.options = opts
  inline.configure(opts.inline)
  ensure_filetypes()
  if opts.commands then
    require("gdg_lsp.commands").define()
  end
  local cmd, problem = config.command(opts)
  M.problem = problem
  if not cmd then
    notify(problem, vim.log.levels.ERROR)
    return
  end
  vim.lsp.config(config.name, M.lsp_config(opts, cmd))
  vim.lsp.enable(config.name)
  if opts.progress then
    -- a minimal config shows no LSP progress: without this, a start is silent until the model is ready
    vim.api.nvim_create_autocmd("LspProgress", {
      group = vim.api.nvim_create_augroup("gdg_lsp_progress", { clear = true }),
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data.client_id)
        if client and client.name == config.name then
          status.echo_progress(args.data.params and args.data.params.value)
        end
      end,
    })
  end
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = vim.api.nvim_create_augroup("gdg_lsp_leave", { clear = true }),
    callback = M.wait_for_exit,
  })
  -- keep the plugin's inline client in step when a client goes away
  vim.api.nvim_create_autocmd("LspDetach", {
    group = vim.api.nvim_create_augroup("gdg_lsp_detach", { clear = true }),
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == config.name then
        inline.detach(args.buf)
      end
    end,
  })
end

-- How long quitting waits for the server to answer shutdown and exit.
local EXIT_WAIT_MS = 1500

--- On quitting: Neovim's own VimLeavePre (defined before this one) has asked each client to
--- shut down, but without an exit_timeout it does not wait, and the server's answer met a
--- closed pipe (a BrokenPipe traceback in its log, 3 quits in 4). Wait for the answer and the
--- server's exit, a bounded time.
function M.wait_for_exit()
  local clients = vim.lsp.get_clients({ name = config.name })
  for _, client in ipairs(clients) do
    client:stop() -- nothing when Neovim's handler has asked already (is_stopped() says so at once)
  end
  vim.wait(EXIT_WAIT_MS, function()
    for _, client in ipairs(clients) do
      if not client.rpc.is_closing() then -- its connection closed: the server has exited
        return false
      end
    end
    return true
  end, 10)
end

--- Ask the server which database a SQL buffer's names come from (gdg/sqlSource) for the statusline.
function M.refresh_sql_source(client, bufnr)
  if client:is_stopped() then
    return
  end
  client:request("gdg/sqlSource", { textDocument = vim.lsp.util.make_text_document_params(bufnr) }, function(err, result)
    if not err and type(result) == "table" then
      status.on_sql_source(bufnr, result)
    end
  end, bufnr)
end

--- For the statusline: `%{v:lua.require'gdg_lsp'.statusline()}`.
function M.statusline()
  return status.statusline()
end

function M.clients(bufnr)
  return vim.lsp.get_clients({ name = config.name, bufnr = bufnr })
end

return M
