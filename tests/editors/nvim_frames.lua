-- What each frame Neovim draws shows, for the steady-ghost tests: a decoration provider's
-- on_start runs at the start of every redraw, and there the recorder reads the line and the
-- ghost drawn. While `expect` (the suggestion's whole text, from the line's `from` byte) is set,
-- every frame and every key are recorded.
--
--   local frames = dofile(".../nvim_frames.lua").recorder(function() return line, ghost end)
--   frames.expect = "value = compute(x)"; ... ; frames.judge() -> counts

local M = {}

function M.recorder(read)
  local rec = { expect = nil, from = 0, frames = {}, keys = {} }
  local ns = vim.api.nvim_create_namespace("test.frames")
  vim.api.nvim_set_decoration_provider(ns, { on_start = function()
    if rec.expect then
      local line, ghost = read()
      table.insert(rec.frames, { t = vim.uv.hrtime(), line = line:sub(rec.from + 1), ghost = ghost,
        expect = rec.expect })
    end
  end })
  vim.on_key(function(_, typed)
    if rec.expect and typed ~= "" then
      table.insert(rec.keys, vim.uv.hrtime())
    end
  end)

  --- Frames whose typed text begins `expect` but show no ghost / another rest; frames whose
  --- text does not begin it but still show one; how long after each key its frame came (ms).
  function rec.judge()
    local without, wrong, stale = 0, 0, 0
    for _, f in ipairs(rec.frames) do
      if vim.startswith(f.expect, f.line) and #f.line < #f.expect then
        if f.ghost == "" then
          without = without + 1
        elseif f.ghost ~= f.expect:sub(#f.line + 1) then
          wrong = wrong + 1
        end
      elseif f.ghost ~= "" then
        stale = stale + 1
      end
    end
    local worst = 0
    for _, t in ipairs(rec.keys) do
      for _, f in ipairs(rec.frames) do
        if f.t >= t then
          worst = math.max(worst, (f.t - t) / 1e6)
          break
        end
      end
    end
    return { checked = #rec.frames, without_ghost = without, wrong_rest = wrong, stale_ghost = stale,
      keys = #rec.keys, max_ms_after_key = worst }
  end

  return rec
end

return M
