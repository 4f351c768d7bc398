-- What is left of a suggestion at the cursor, and the pieces a partial accept takes from it.
--
-- An item is { text, srow, scol, erow, ecol } in bytes (0-based rows): its text replaces the
-- buffer from (srow, scol) to (erow, ecol). Pure functions of the buffer's text, so typing,
-- accepting a word and the server's confirming answer all agree on what the rest is.

local M = {}

local function newlines(text)
  local _, count = text:gsub("\n", "")
  return count
end

--- An item for `text` starting at (srow, scol) and replacing up to (erow, ecol).
function M.item(text, srow, scol, erow, ecol)
  return { text = text, srow = srow, scol = scol, erow = erow, ecol = ecol, lines = newlines(text) }
end

--- The part of `item` still to be typed with the cursor at `cursor` ({ row, col }, 0-based),
--- or nil when the text typed since the item's start does not begin it (or is all of it).
function M.rest(bufnr, item, cursor)
  local row, col = cursor[1], cursor[2]
  if row < item.srow or (row == item.srow and col < item.scol) or row - item.srow > item.lines then
    return nil
  end
  local ok, parts = pcall(vim.api.nvim_buf_get_text, bufnr, item.srow, item.scol, row, col, {})
  if not ok then
    return nil
  end
  local typed = table.concat(parts, "\n")
  if #typed >= #item.text or item.text:sub(1, #typed) ~= typed then
    return nil
  end
  return item.text:sub(#typed + 1)
end

-- letters, digits, _ and any byte of a multibyte UTF-8 character
local WORD, PUNCT = "^[%w_\128-\255]+", "^[^%w_\128-\255%s]+"

--- The next word of `rest`: its leading blanks (and one line break), then a run of word
--- characters or of punctuation. `x = foo(bar)` gives `x`, ` =`, ` foo`, `(`, `bar`, `)`.
function M.next_word(rest)
  local lead = rest:match("^\n?[ \t]*")
  local body = rest:sub(#lead + 1)
  local piece = lead .. (body:match(WORD) or body:match(PUNCT) or "")
  if piece == "" then
    return rest:sub(1, 1) -- another blank (\r, \f): one byte at a time
  end
  return piece
end

--- The next line of `rest`: up to its first line break; when it starts with one, that break
--- and the line after it.
function M.next_line(rest)
  local first = rest:match("^[^\n]*")
  if first ~= "" then
    return first
  end
  return "\n" .. rest:sub(2):match("^[^\n]*")
end

--- Where (row, col) is after `lines` (vim.split of the inserted text) went in at (at_row, at_col):
--- positions before the insertion stay, those after it move with the text.
function M.after_insert(row, col, at_row, at_col, lines)
  if row < at_row or (row == at_row and col <= at_col) then
    return row, col
  end
  local added = #lines - 1
  if row > at_row then
    return row + added, col
  end
  if added == 0 then
    return row, col + #lines[1]
  end
  return row + added, #lines[#lines] + (col - at_col)
end

--- Length of `text` in UTF-16 code units (what the accept protocol counts).
function M.utf16_length(text)
  return vim.str_utfindex(text, "utf-16")
end

return M
