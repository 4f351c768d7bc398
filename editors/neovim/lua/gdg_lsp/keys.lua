-- Insert-mode keys that act only when there is something to act on, and are otherwise the key
-- they replace: the buffer's own mapping of it that the plugin's shadows, else the global one
-- (Neovim's <Tab> snippet jump, a completion plugin's menu keys), else the key itself (<Tab>
-- indents). Each is an expression mapping: deciding costs no change, acting runs in a <Cmd>
-- after it, outside the expression's textlock.

local M = {}

local api = vim.api

local actions = {} -- id -> the function a key's <Cmd> runs
local pending = nil -- a shadowed mapping's callback, run by the <Cmd> that follows its expression

function M.run(id)
  local action = actions[id]
  if action then
    action()
  end
end

function M.run_pending()
  local fn = pending
  pending = nil
  if fn then
    fn()
  end
end

local function command(call)
  return vim.keycode("<Cmd>lua require('gdg_lsp.keys')." .. call .. "<CR>")
end

local function global_mapping(lhs)
  local want = vim.keycode(lhs)
  for _, m in ipairs(api.nvim_get_keymap("i")) do
    if vim.keycode(m.lhs) == want then
      return m
    end
  end
  return nil
end

-- keys from a recursive mapping go through the mappings again, except its own key at their
-- start (Vim's rule for a {rhs} starting with its {lhs}), which would come back here
local function feed_remapped(keys, lhs_keys)
  local rest = keys
  if vim.startswith(keys, lhs_keys) then
    rest = keys:sub(#lhs_keys + 1)
  end
  api.nvim_feedkeys(rest, "mi", false)
  if rest ~= keys then
    api.nvim_feedkeys(lhs_keys, "ni", false)
  end
end

-- `keys` as the mapping `m` would have them: as they are when it is not recursive (nor is
-- the plugin's), else fed again through the mappings by the <Cmd> after the expression
local function as_mapped(keys, m, lhs_keys)
  if m.noremap == 1 then
    return keys
  end
  pending = function()
    feed_remapped(keys, lhs_keys)
  end
  return command("run_pending()")
end

--- The keys `lhs` stands for when the plugin has nothing to do: those of the mapping `m` below
--- the plugin's (nil: the key itself).
function M.fall_through(lhs, m)
  local lhs_keys = vim.keycode(lhs)
  if not m or (m.rhs == nil and m.callback == nil) then
    return lhs_keys
  end
  if m.expr == 1 then
    local ok, keys
    if m.callback then
      ok, keys = pcall(m.callback)
    else
      ok, keys = pcall(api.nvim_eval, m.rhs)
    end
    if not ok or type(keys) ~= "string" then
      return lhs_keys
    end
    return as_mapped(m.replace_keycodes == 1 and vim.keycode(keys) or keys, m, lhs_keys)
  end
  if m.callback then
    pending = m.callback
    return command("run_pending()")
  end
  return as_mapped(vim.keycode(m.rhs), m, lhs_keys)
end

--- Map `lhs` in insert mode in `bufnr`: `run()` when `can()` says there is something to do,
--- else what the key did before.
function M.map(bufnr, lhs, can, run, desc)
  table.insert(actions, run)
  local act = command(("run(%d)"):format(#actions))
  local before = vim.fn.maparg(lhs, "i", false, true)
  -- the buffer's own mapping, unless it is the plugin's from an earlier attach
  local shadowed = (type(before) == "table" and before.buffer == 1
    and not vim.startswith(before.desc or "", "gdg-lsp:")) and before or nil
  vim.keymap.set("i", lhs, function()
    if can() then
      return act
    end
    -- looked up at each press: a global mapping made after the buffer opened counts too
    return M.fall_through(lhs, shadowed or global_mapping(lhs))
  end, { buffer = bufnr, expr = true, replace_keycodes = false, silent = true, desc = desc })
end

return M
