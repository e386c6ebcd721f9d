---@mod acp.edits.review.keys The keys of reviewed buffers and the reporting of
--- what the user types in them (debounced).

local api = vim.api
local util = require("acp.util")
local state = require("acp.edits.review.state")
local sync = require("acp.edits.review.sync")
local actions = require("acp.edits.review.actions")

local K = {}

---@type table<integer, boolean> buffers with review keys
local attached = {}
---@type table<integer, boolean> buffers whose edits are reported
local reporting = {}

local entry_of_buf = state.entry_of_buf

local function keymaps()
  return require("acp.config").options.keymaps
end

local function map(buf, lhs, fn, desc)
  if lhs then
    vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true, desc = "acp.nvim: " .. desc })
  end
end

--- Report the user's edits of a reviewed buffer (debounced). Stays when
--- the review is done with: an undo then redo of the agent's edit makes it
--- the review's again.
---@param buf integer
local function report_edits(buf)
  if reporting[buf] then
    return
  end
  reporting[buf] = true
  local timer
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = api.nvim_create_augroup("acp_review_buf_" .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      if not entry_of_buf(buf) then
        return
      end
      if timer and not timer:is_closing() then
        timer:stop()
        timer:close()
      end
      local t = assert(util.uv.new_timer())
      timer = t
      t:start(
        state.USER_EDIT_DEBOUNCE_MS,
        0,
        vim.schedule_wrap(function()
          if not t:is_closing() then
            t:close()
          end
          if timer ~= t then
            -- A newer change restarted the debounce.
            return
          end
          timer = nil
          if api.nvim_buf_is_valid(buf) then
            sync.send_user_edit(buf)
            sync.redraw(buf)
          end
        end)
      )
    end,
  })
end

local function attach(buf)
  report_edits(buf)
  if attached[buf] then
    return
  end
  attached[buf] = true
  local k = keymaps()
  map(buf, k.review_next, function()
    actions.jump(1)
  end, "next agent hunk")
  map(buf, k.review_prev, function()
    actions.jump(-1)
  end, "previous agent hunk")
  map(buf, k.review_accept, function()
    actions.decide("accept", {})
  end, "accept the agent hunk under the cursor")
  map(buf, k.review_reject, function()
    actions.decide("reject", {})
  end, "reject the agent hunk under the cursor")
  map(buf, k.review_accept_file, function()
    actions.decide("accept", { scope = "file" })
  end, "accept every agent change of this file")
  map(buf, k.review_reject_file, function()
    actions.decide("reject", { scope = "file" })
  end, "reject every agent change of this file")
end

local function detach(buf)
  if not attached[buf] then
    return
  end
  attached[buf] = nil
  -- Its keys go away with the review: say so, or the accept of the last
  -- hunk (and `]h` after it) looked like nothing happened.
  util.notify(
    ("%s: no agent changes left to review (:Acp review lists the other files)"):format(
      vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":~:.")
    )
  )
  local k = keymaps()
  for _, key in ipairs({
    "review_next",
    "review_prev",
    "review_accept",
    "review_reject",
    "review_accept_file",
    "review_reject_file",
  }) do
    if k[key] then
      pcall(vim.keymap.del, "n", k[key], { buffer = buf })
    end
  end
end

--- The review keys of a buffer on (it has something to review) or off
--- (acp.edits.review.sync calls this after each drawing).
---@param buf integer
---@param on boolean
function K.set(buf, on)
  if on then
    attach(buf)
  else
    detach(buf)
  end
end

--- Forget a wiped buffer.
---@param buf integer
function K.forget(buf)
  attached[buf] = nil
  reporting[buf] = nil
end

return K
