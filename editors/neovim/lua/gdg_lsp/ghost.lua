-- Ghost text: a suggestion's rest drawn after the cursor as virtual text (the plugin's own client,
-- Neovim 0.11), its highlight, and reading back what is drawn (whichever client drew it).

local M = {}

local api = vim.api
M.ns = api.nvim_create_namespace("gdg_lsp.inline")
-- the namespace vim.lsp.inline_completion draws in (0.12): same name, same id
M.native_ns = api.nvim_create_namespace("nvim.lsp.inline_completion")

M.GROUP = "GdgGhostText"
-- Its own colours, for true-colour (gui) and 256-colour terminals (cterm) alike: a link to
-- Comment drew it as plain text under --clean on a 256-colour terminal. Italic, never bold.
local LOOK = { fg = "#808080", ctermfg = 244, italic = true, cterm = { italic = true }, default = true }

--- Define GdgGhostText unless the user (or a colour scheme) already did; again after :colorscheme.
function M.define_highlight()
  api.nvim_set_hl(0, M.GROUP, LOOK)
  api.nvim_create_autocmd("ColorScheme", {
    group = api.nvim_create_augroup("gdg_lsp_ghost_highlight", { clear = true }),
    callback = function()
      api.nvim_set_hl(0, M.GROUP, LOOK)
    end,
  })
end

--- Draw `text` at (row, col) in `hl`; `id`: the mark drawn before, changed in place (a frame
--- never shows the buffer without one). Returns the mark's id.
function M.draw(bufnr, id, row, col, text, hl)
  local lines = vim.split(text, "\n", { plain = true })
  local mark = {
    id = id,
    virt_text = { { lines[1], hl } },
    virt_text_pos = "inline",
    hl_mode = "replace", -- the ghost's own look, not the keyword's bold under it
  }
  if #lines > 1 then
    mark.virt_lines = {}
    for i = 2, #lines do
      table.insert(mark.virt_lines, { { lines[i], hl } })
    end
  end
  return api.nvim_buf_set_extmark(bufnr, M.ns, row, col, mark)
end

function M.remove(bufnr, id)
  pcall(api.nvim_buf_del_extmark, bufnr, M.ns, id)
end

-- A suggestion shown without the guarantee that every name it references exists gets a marker
-- at the end of its line, in a namespace of its own (never read back as the ghost's text).
M.mark_ns = api.nvim_create_namespace("gdg_lsp.inline.unguaranteed")
M.MARK_GROUP = "GdgGhostUnguaranteed"
M.MARK_TEXT = " ⚠ not guaranteed"

--- Link GdgGhostUnguaranteed to DiagnosticWarn unless the user (or a colour scheme) defined it.
function M.define_mark_highlight()
  local function define()
    api.nvim_set_hl(0, M.MARK_GROUP, { link = "DiagnosticWarn", default = true })
  end
  define()
  api.nvim_create_autocmd("ColorScheme", {
    group = api.nvim_create_augroup("gdg_lsp_mark_highlight", { clear = true }),
    callback = define,
  })
end

--- Draw the marker at the end of `row` (`id`: the one drawn before, moved in place). Returns its id.
function M.mark(bufnr, id, row)
  return api.nvim_buf_set_extmark(bufnr, M.mark_ns, row, 0, {
    id = id,
    virt_text = { { M.MARK_TEXT, M.MARK_GROUP } },
    virt_text_pos = "eol",
  })
end

function M.unmark(bufnr, id)
  pcall(api.nvim_buf_del_extmark, bufnr, M.mark_ns, id)
end

--- The marker drawn in a buffer: { row, text } or nil.
function M.marked(bufnr)
  local marks = api.nvim_buf_get_extmarks(bufnr, M.mark_ns, 0, -1, { details = true })
  local mark = marks[1]
  if not mark then
    return nil
  end
  local chunk = (mark[4].virt_text or {})[1] or {}
  return { row = mark[2], text = chunk[1], hl = chunk[2] }
end

--- The ghost text drawn in a buffer right now ("" when none), read back from the extmarks.
function M.text(bufnr)
  for _, space in ipairs({ M.ns, M.native_ns }) do
    local marks = api.nvim_buf_get_extmarks(bufnr, space, 0, -1, { details = true })
    for _, mark in ipairs(marks) do
      local details = mark[4] or {}
      local parts = {}
      for _, chunk in ipairs(details.virt_text or {}) do
        if chunk[2] ~= "ComplHintMore" then -- 0.12's "(1/2)" counter
          table.insert(parts, chunk[1])
        end
      end
      for _, line in ipairs(details.virt_lines or {}) do
        local text = {}
        for _, chunk in ipairs(line) do
          table.insert(text, chunk[1])
        end
        table.insert(parts, "\n" .. table.concat(text))
      end
      local text = table.concat(parts)
      if text ~= "" then
        return text
      end
    end
  end
  return ""
end

return M
