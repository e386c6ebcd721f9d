-- The help file as a user follows it: `:help acp` lands on the start, and
-- every |link| of doc/acp.txt leads somewhere (E149 otherwise; issue 29).
-- No backend needed.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

--- Tags of a help `tags` file, as a set.
---@param path string
---@return table<string, true>
local function tags_of(path)
  local set = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    set[line:match("^([^\t]+)\t")] = true
  end
  return set
end

--- Our tags: helptags run on a copy of doc/ (the checkout stays clean).
local function our_tags()
  local doc = T.tmpdir() .. "/doc"
  vim.fn.mkdir(doc, "p")
  vim.fn.writefile(vim.fn.readfile(T.root .. "/doc/acp.txt"), doc .. "/acp.txt")
  vim.cmd("helptags " .. vim.fn.fnameescape(doc))
  return tags_of(doc .. "/tags")
end

--- The |links| of the help file, outside example blocks (`>` to `<`),
--- with their line numbers.
---@return {tag: string, lnum: integer}[]
local function links()
  local out, in_example = {}, false
  for lnum, line in ipairs(vim.fn.readfile(T.root .. "/doc/acp.txt")) do
    if in_example and (line:match("^<") or line:match("^%S")) then
      in_example = false
    end
    if not in_example then
      -- A bar, then no space, bar, star or quote up to the closing bar.
      for tag in line:gmatch('|([^%s|*"]+)|') do
        out[#out + 1] = { tag = tag, lnum = lnum }
      end
      if line:match("%s>$") or line == ">" or line:match("%s>%a+$") then
        in_example = true
      end
    end
  end
  return out
end

T.test("every |link| of doc/acp.txt resolves", function()
  local ours = our_tags()
  local builtin = tags_of(vim.env.VIMRUNTIME .. "/doc/tags")
  local broken = {}
  local all = links()
  T.truthy(#all > 50, "links found: " .. #all)
  for _, l in ipairs(all) do
    if not ours[l.tag] and not builtin[l.tag] then
      broken[#broken + 1] = ("line %d: |%s|"):format(l.lnum, l.tag)
    end
  end
  T.eq({}, broken, "broken links")
end)

T.test(":help acp lands on the start of the help file", function()
  local ours = our_tags()
  T.truthy(ours["acp"], "an *acp* tag")
  T.truthy(ours["acp.nvim"], "an *acp.nvim* tag")
  -- And it is on the first lines (not in a section far down).
  local first = table.concat(vim.list_slice(vim.fn.readfile(T.root .. "/doc/acp.txt"), 1, 3), "\n")
  T.contains(first, "*acp*", "the tag at the top")
end)

T.run()
