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
  return {
    cmd = cmd,
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    init_options = settings,
    -- answered to workspace/configuration and sent after initialize
    settings = { gdg = settings },
    handlers = {
      ["gdg/status"] = function(_, payload)
        local was = status.model and status.model.state
        status.on_status(payload)
        if type(payload) == "table" and payload.state == "ready" and was ~= "ready" then
          vim.schedule(inline.ask_again)
        end
      end,
      ["gdg/suggestion"] = function(_, payload)
        status.on_suggestion(payload)
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
