-- Whether the plugin may ask for a suggestion in a buffer now: the buffer's language is on in
-- setup{}'s inline.filetypes, and (for the asks nobody pressed a key for) no snooze is running.

local M = {}

local filetypes = {} -- filetype -> false / true; "*" for the languages not named
local snoozed_until = nil -- vim.uv.now() in ms, while a snooze runs
local timer = nil
local listeners = {}

function M.configure(inline_opts)
  filetypes = type(inline_opts.filetypes) == "table" and inline_opts.filetypes or {}
end

--- Call `fn()` whenever a snooze starts or ends.
function M.on_change(fn)
  table.insert(listeners, fn)
end

local function changed()
  for _, fn in ipairs(listeners) do
    fn()
  end
end

function M.language_enabled(filetype)
  local on = filetypes[filetype]
  if on == nil then
    on = filetypes["*"]
  end
  return on ~= false
end

--- Minutes left of the snooze (a fraction near its end), or nil when none runs.
function M.snoozed()
  if snoozed_until and vim.uv.now() < snoozed_until then
    return (snoozed_until - vim.uv.now()) / 60000
  end
  return nil
end

--- No suggestion asked for by itself for `minutes` (the request key still asks); 0 or less ends it.
function M.snooze(minutes)
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
  snoozed_until = nil
  if minutes > 0 then
    vim.uv.update_time()
    snoozed_until = vim.uv.now() + math.floor(minutes * 60000)
    timer = vim.uv.new_timer()
    timer:start(math.floor(minutes * 60000), 0, vim.schedule_wrap(function()
      M.snooze(0)
    end))
  end
  changed()
end

--- May `bufnr` ask now? `invoked`: a key asked (a snooze does not stop that).
function M.allows(bufnr, invoked)
  if not M.language_enabled(vim.bo[bufnr].filetype) then
    return false
  end
  return invoked == true or M.snoozed() == nil
end

return M
